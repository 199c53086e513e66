//! `countersign up` with `[tlog] policy` sends the signer's checkpoints to
//! a real witness (aics-witness from PyPI, which scripts/test installs into
//! tests/witness/venv): after a proposal and a restart of `up`, the latest
//! checkpoint carries the witness's cosignature, verified under the
//! policy, and `witness status` shows it acknowledged. Real binaries, a
//! home on free ports; the signer itself opens no outbound connection.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use countersign_integration_tests::{bin, free_port};
use countersign_tlog::{Note, Policy, VerifierKey};
use countersign_witness::testing::AicsWitness;
use serde_json::Value;

fn countersign(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

/// `up`, until it says it is up.
fn start_up(home: &Path) -> Child {
    let mut up = Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .arg("up")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = up.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut said = String::new();
    loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = up.kill();
            let _ = up.wait();
            panic!("countersign up did not come up: {said}");
        };
        said.push_str(&line);
        said.push('\n');
        if line.contains("countersign is up") {
            // Keep draining stderr so `up` never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines {});
            return up;
        }
    }
}

fn stop(mut up: Child) {
    let pid = rustix::process::Pid::from_raw(up.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = up.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn up_sends_the_checkpoints_to_the_policys_witness_and_stores_its_cosignature() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    assert!(countersign(&home, &["init"]).status.success());
    // The log's verifier key, as keygen shows it.
    let keygen = Command::new(bin("countersign-signer"))
        .arg("--home")
        .arg(&home)
        .arg("keygen")
        .output()
        .unwrap();
    let stderr = String::from_utf8(keygen.stderr).unwrap();
    let log_key: VerifierKey = stderr
        .lines()
        .find_map(|l| l.strip_prefix("log key "))
        .unwrap_or_else(|| panic!("{stderr}"))
        .parse()
        .unwrap();

    // The witness, trusting this log.
    let Some(witness) = AicsWitness::start("witness.test/e2e", &log_key) else {
        return;
    };
    let (witness_key, witness_url) = (witness.key.clone(), witness.url.clone());

    // The policy and the configuration.
    let policy = format!("log {log_key}\nwitness w1 {witness_key} {witness_url}\nquorum w1\n");
    std::fs::write(home.join("tlog-policy"), &policy).unwrap();
    let config_path = home.join("config.toml");
    let text = std::fs::read_to_string(&config_path).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&config_path)
        .unwrap();
    assert!(!text.contains("[tlog]"));
    write!(
        file,
        "\n[signer]\naddr = \"127.0.0.1:{}\"\n[tlog]\npolicy = \"tlog-policy\"\npoll_ms = 100\n",
        free_port()
    )
    .unwrap();
    drop(file);

    // A proposal, then `up` stops: the signer signs a checkpoint of it
    // as it stops, after the witnessing task stopped.
    let up = start_up(&home);
    let mut propose = Command::new(bin("countersign"))
        .arg("--home")
        .arg(&home)
        .args(["propose", "schedule.create", "--args-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    propose
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"name":"nightly","cron":"0 3 * * *","description":"email the KPIs"}"#)
        .unwrap();
    assert!(propose.wait_with_output().unwrap().status.success());
    stop(up);

    // Started again, the witnessing task sends the stored checkpoint.
    let up = start_up(&home);
    let mut status = Value::Null;
    for _ in 0..300 {
        let out = countersign(&home, &["--json", "witness", "status"]);
        assert!(out.status.success(), "{out:?}");
        status = serde_json::from_slice(&out.stdout).unwrap();
        // The signer may sign once more as it starts (the chains'
        // checkpoint event of its stop): wait for the latest, and for the
        // witness's state, which the client saves after the cosignature.
        if !status["latest_cosigned"].is_null()
            && status["latest_cosigned"] == status["latest_checkpoint"]
            && status["witnesses"][0]["acknowledged"] == status["latest_cosigned"]
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop(up);
    drop(witness);
    assert_eq!(status["enabled"], true, "{status}");
    let size = status["latest_cosigned"]
        .as_u64()
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(status["latest_checkpoint"].as_u64(), Some(size), "{status}");
    assert_eq!(status["witnesses"][0]["key"], witness_key.to_string());
    assert_eq!(status["witnesses"][0]["acknowledged"], size);
    assert!(status["witnesses"][0]["halted"].is_null());

    // The cosigned checkpoint verifies under the policy.
    let ledger_url = format!("sqlite://{}", home.join("ledger.db").display());
    let note = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let ledger = countersign_ledger::Ledger::open(&ledger_url).await.unwrap();
        ledger.cosigned_checkpoint(size).await.unwrap().unwrap()
    });
    let verified = Policy::parse(policy.as_bytes())
        .unwrap()
        .verify_checkpoint(&Note::parse(note.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(verified.checkpoint().size(), size);
}
