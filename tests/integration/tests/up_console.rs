//! `countersign up --console` whose console cannot start stops the console
//! alone: with a console name that does not resolve, and with one its
//! console CA does not permit, the signer comes up and answers, `up` says
//! why the console is off and where to decide instead, and `doctor` names
//! the way out. Real binaries, a home on free ports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use countersign_integration_tests::{bin, free_port};
use serde_json::Value;

fn countersign(home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

/// A new home whose signer and console listen on free ports, its console
/// reached by `names` (the CA made for them when `fresh_ca`).
fn home_with_console_names(dir: &Path, names: &str, fresh_ca: bool) -> std::path::PathBuf {
    let home = dir.join("home");
    assert!(countersign(&home, &["init"]).status.success());
    let config = home.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "addr = \"127.0.0.1:7444\"\n# names = [\"console.localhost\"]",
        &format!("addr = \"127.0.0.1:{}\"\nnames = {names}", free_port()),
    );
    assert!(text.contains("names = ["), "{text}");
    let text = format!("{text}\n[signer]\naddr = \"127.0.0.1:{}\"\n", free_port());
    std::fs::write(&config, text).unwrap();
    if fresh_ca {
        for file in [
            "console-ca.pem",
            "console-ca.key",
            "console.pem",
            "console.key",
        ] {
            std::fs::remove_file(home.join("pki").join(file)).unwrap();
        }
    }
    home
}

/// `up --console`, once it says it is up: the process and its stderr so far.
fn start_up(home: &Path) -> (Child, String, mpsc::Receiver<String>) {
    let mut up = Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .args(["up", "--console"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stderr = up.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = String::new();
    loop {
        let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) else {
            let _ = up.kill();
            let _ = up.wait();
            panic!("countersign up did not come up: {said}");
        };
        said.push_str(&line);
        said.push('\n');
        if line.contains("countersign is up") {
            return (up, said, lines);
        }
    }
}

fn stop(mut up: Child) {
    let pid = rustix::process::Pid::from_raw(up.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = up.wait().unwrap();
    assert!(status.success(), "{status}");
}

fn console_check(home: &Path) -> Value {
    let doctor = countersign(home, &["--json", "doctor"]);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "console")
        .unwrap()
        .clone()
}

fn console_check_fails_with_fix(home: &Path, fix: &str) {
    let check = console_check(home);
    assert_eq!(check["status"], "fail", "{check}");
    assert!(
        check["fix"].as_str().unwrap_or_default().starts_with(fix),
        "{check}"
    );
}

#[test]
fn a_console_name_that_does_not_resolve_leaves_the_signer_up() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_console_names(dir.path(), "[\"nowhere.invalid\"]", true);
    let (up, said, _lines) = start_up(&home);
    assert!(
        said.contains(
            "the console did not start: the console name \"nowhere.invalid\" does not resolve"
        ) && said.contains("the signer runs on without it"),
        "{said}"
    );
    // The signer answers: a proposal is made and waits at the terminal.
    let proposed = Command::new(bin("countersign"))
        .arg("--home")
        .arg(&home)
        .args(["--json", "propose", "schedule.create", "--args-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(br#"{"name":"nightly","cron":"0 3 * * *"}"#)?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(proposed.status.success(), "{proposed:?}");
    let pending = countersign(&home, &["pending"]);
    assert!(String::from_utf8_lossy(&pending.stdout).contains("schedule.create"));
    console_check_fails_with_fix(&home, "make the name resolve on this machine");
    stop(up);

    // A .local name nothing answers for: doctor points at `mdns = true`.
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_console_names(dir.path(), "[\"nowhere-at-all.local\"]", true);
    console_check_fails_with_fix(
        &home,
        "a .local name is answered over mDNS: set `mdns = true` in [console]",
    );
}

#[test]
fn a_console_name_its_ca_does_not_permit_leaves_the_signer_up() {
    let dir = tempfile::tempdir().unwrap();
    let home = home_with_console_names(dir.path(), "[\"laptop.home.arpa\"]", false);
    let (up, said, _lines) = start_up(&home);
    assert!(
        said.contains("the console will not start: ")
            && said.contains("laptop.home.arpa")
            && said.contains("the signer runs on without it"),
        "{said}"
    );
    let pending = countersign(&home, &["--json", "pending"]);
    assert!(pending.status.success(), "{pending:?}");
    stop(up);
}
