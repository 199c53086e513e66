//! The premise runner (`countersign-premise`) as the signer and the heads
//! use it: a premise program run as a restricted child cannot open
//! anything beneath the hidden home (the key file: EACCES), cannot read the
//! asking process's memory through /proc, yet reads
//! everything else, gets the canonical arguments on stdin and is killed at
//! its timeout; the premise service answers only its client users.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use countersign_process::premise::PremiseRunner;
use countersign_process::sandbox::Restricted;
use countersign_process::{CommandError, CommandSpec};

const RUNNER: &str = env!("CARGO_BIN_EXE_countersign-premise");

/// A program that tries to open each path given and prints, per path,
/// `read` or the errno's name; then what it read on stdin.
fn opener(paths: &[&Path]) -> CommandSpec {
    let mut args = vec![
        "-c".to_owned(),
        "import errno, sys\n\
         for path in sys.argv[1:]:\n\
         \x20   try:\n\
         \x20       open(path, 'rb').read(); print('read')\n\
         \x20   except OSError as e:\n\
         \x20       print(errno.errorcode[e.errno])\n\
         print(sys.stdin.read())"
            .to_owned(),
    ];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    CommandSpec {
        program: PathBuf::from("/usr/bin/python3"),
        args,
        timeout: Duration::from_secs(10),
    }
}

/// A throwaway home with a key file, and a file beside it.
fn home() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let home = base.path().join("home");
    std::fs::create_dir_all(home.join("signer")).unwrap();
    let key = home.join("signer/ed25519.key");
    std::fs::write(&key, "secret").unwrap();
    let beside = base.path().join("operator-data");
    std::fs::write(&beside, "v1").unwrap();
    (base, home, key)
}

fn child(hidden: &Path) -> PremiseRunner {
    PremiseRunner::Child {
        runner: PathBuf::from(RUNNER),
        hidden: vec![hidden.to_path_buf()],
    }
}

/// What the runner achieves on this kernel.
async fn restricted_here() -> Restricted {
    let dir = tempfile::tempdir().unwrap();
    child(dir.path()).probe().await.unwrap().unwrap()
}

/// Whether this kernel enforces the restriction (else the test says it
/// skipped).
async fn landlocked() -> bool {
    let enforced = restricted_here().await != Restricted::Not;
    if !enforced {
        eprintln!("SKIPPED: this kernel has no Landlock");
    }
    enforced
}

#[tokio::test]
async fn a_premise_program_cannot_open_the_key_file_beneath_the_hidden_home() {
    let (base, home, key) = home();
    let beside = base.path().join("operator-data");
    let outcome = child(&home)
        .run(&opener(&[&key, &beside]), r#"{"a":1}"#)
        .await
        .unwrap();
    assert!(outcome.succeeded(), "{outcome:?}");
    match restricted_here().await {
        Restricted::Fully | Restricted::Partially => {
            assert_eq!(outcome.stdout, "EACCES\nread\n{\"a\":1}\n", "{outcome:?}")
        }
        // The logged fallback: nothing is restricted (see SECURITY.md).
        Restricted::Not => {
            eprintln!("SKIPPED: this kernel has no Landlock; the program read the key");
            assert_eq!(outcome.stdout, "read\nread\n{\"a\":1}\n", "{outcome:?}");
        }
    }
}

#[tokio::test]
async fn without_the_runner_the_same_program_reads_the_key() {
    // The control: what a premise program run as a plain child (as before)
    // could do.
    let (_base, _home, key) = home();
    let outcome = countersign_process::run_query(&opener(&[&key]), "")
        .await
        .unwrap();
    assert_eq!(outcome.stdout, "read\n\n");
}

#[tokio::test]
async fn a_premise_program_cannot_write_or_plant_a_link_into_the_hidden_home() {
    if !landlocked().await {
        return;
    }
    let (base, home, key) = home();
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&home, &link).unwrap();
    let script = format!(
        "echo x > {new} 2>/dev/null && echo wrote || echo refused; \
         ln {key} {base}/hard 2>/dev/null && echo linked || echo refused; \
         cat {through_link} 2>/dev/null && echo read || echo refused",
        new = home.join("planted").display(),
        key = key.display(),
        base = base.path().display(),
        through_link = link.join("signer/ed25519.key").display(),
    );
    let spec = CommandSpec {
        program: PathBuf::from("/bin/sh"),
        args: vec!["-c".to_owned(), script],
        timeout: Duration::from_secs(10),
    };
    let outcome = child(&home).run(&spec, "").await.unwrap();
    assert_eq!(outcome.stdout, "refused\nrefused\nrefused\n", "{outcome:?}");
    assert!(!home.join("planted").exists());
}

/// The key is in the signer's memory too: `/proc/<pid>/mem` needs ptrace
/// access in attach mode, which Landlock denies towards any process
/// outside the sandbox (`ptrace` and `process_vm_readv` ask the same
/// check; only `mem` is tested here). `environ`, `maps` and `cmdline` of a
/// process of the same user stay readable on this kernel (read mode).
#[tokio::test]
async fn a_premise_program_cannot_read_the_asking_process_memory() {
    if !landlocked().await {
        return;
    }
    let (_base, home, _key) = home();
    let mem = PathBuf::from(format!("/proc/{}/mem", std::process::id()));
    let outcome = child(&home).run(&opener(&[&mem]), "").await.unwrap();
    assert_eq!(outcome.stdout, "EACCES\n\n", "{outcome:?}");
    // Unrestricted, the open succeeds (reading offset 0 then fails: EIO).
    let outcome = countersign_process::run_query(&opener(&[&mem]), "")
        .await
        .unwrap();
    assert_eq!(outcome.stdout, "EIO\n\n", "{outcome:?}");
}

#[tokio::test]
async fn the_runner_keeps_the_timeout_and_says_when_a_program_cannot_start() {
    let (_base, home, _key) = home();
    let sleeper = CommandSpec {
        program: PathBuf::from("/bin/sleep"),
        args: vec!["30".to_owned()],
        timeout: Duration::from_millis(300),
    };
    let outcome = child(&home).run(&sleeper, "").await.unwrap();
    assert!(outcome.timed_out, "{outcome:?}");
    let missing = CommandSpec {
        program: PathBuf::from("/nonexistent/premise"),
        args: Vec::new(),
        timeout: Duration::from_secs(5),
    };
    let refused = child(&home).run(&missing, "").await.unwrap_err();
    assert!(
        matches!(&refused, CommandError::Spawn { reason, .. }
            if reason.starts_with("cannot start \"/nonexistent/premise\"")),
        "{refused:?}"
    );
    let relative = CommandSpec {
        program: PathBuf::from("premise"),
        ..missing
    };
    assert_eq!(
        child(&home).run(&relative, "").await.unwrap_err(),
        CommandError::RelativeProgram(PathBuf::from("premise"))
    );
}

#[tokio::test]
async fn no_runner_configured_runs_nothing() {
    let (_base, _home, key) = home();
    let refused = PremiseRunner::Unconfigured
        .run(&opener(&[&key]), "")
        .await
        .unwrap_err();
    assert!(!refused.started(), "{refused:?}");
}

/// The service on a socket in `dir`, answering `client` (a user name or
/// uid); killed when dropped.
struct Service(std::process::Child, PathBuf);

impl Service {
    fn start(dir: &Path, client: &str) -> Service {
        let socket = dir.join("premise.sock");
        let child = std::process::Command::new(RUNNER)
            .args(["serve", "--socket"])
            .arg(&socket)
            .args(["--client-user", client])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Listening, not only bound: the socket file exists from bind(),
        // before listen(), and a connection in between is refused (seen
        // once on a loaded CI machine). The probe sends nothing.
        let started = std::time::Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            assert!(started.elapsed() < Duration::from_secs(10), "no socket");
            std::thread::sleep(Duration::from_millis(20));
        }
        Service(child, socket)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_premise_service_runs_the_program_for_its_client_and_refuses_anyone_else() {
    let (base, _home, _key) = home();
    let beside = base.path().join("operator-data");
    let me = rustix::process::getuid().as_raw().to_string();
    let service = Service::start(base.path(), &me);
    let runner = PremiseRunner::Service {
        socket: service.1.clone(),
    };
    let outcome = runner.run(&opener(&[&beside]), r#"{"a":1}"#).await.unwrap();
    assert_eq!(outcome.stdout, "read\n{\"a\":1}\n", "{outcome:?}");
    let sleeper = CommandSpec {
        program: PathBuf::from("/bin/sleep"),
        args: vec!["30".to_owned()],
        timeout: Duration::from_millis(300),
    };
    assert!(runner.run(&sleeper, "").await.unwrap().timed_out);
    drop(service);

    // Another uid only: this process is not answered.
    let other = tempfile::tempdir().unwrap();
    let service = Service::start(other.path(), "4000000");
    // The service hangs up without reading: a broken pipe or a reset,
    // never an outcome.
    let refused = PremiseRunner::Service {
        socket: service.1.clone(),
    }
    .run(&opener(&[&beside]), "")
    .await;
    assert!(
        matches!(
            &refused,
            Err(CommandError::Spawn { .. } | CommandError::Supervision(_))
        ),
        "{refused:?}"
    );
}
