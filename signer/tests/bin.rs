//! The `countersign-signer` binary: keygen is idempotent; `keys` rotates,
//! lists and retires only what it should; serve prints its ready line,
//! answers, and exits cleanly on SIGTERM; `passkeys enrolment-code`
//! draws a code for exactly one approver.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use countersign_identity::files::write_private_new;
use countersign_identity::{Home, Role};
use countersign_proto::v1::PublicKeysRequest;

use support::{
    keys_command, listening_on, process_client, process_home, spawn_serve, stop_with_sigterm,
};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");

fn keys(home: &Home, args: &[&str]) -> (bool, String, String) {
    keys_command(BIN, home, args)
}

fn keygen(home: &Home) -> (String, String) {
    let out = Command::new(BIN)
        .args(["keygen", "--home"])
        .arg(home.root())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `--home` is accepted before the subcommand as after it, as
/// `countersign` accepts it: both name the same home.
#[test]
fn home_is_accepted_before_and_after_the_subcommand() {
    let (_dir, home) = process_home();
    let (after, _) = keygen(&home);
    let before = Command::new(BIN)
        .arg("--home")
        .arg(home.root())
        .args(["keys", "list"])
        .output()
        .unwrap();
    assert!(before.status.success(), "{before:?}");
    let listed = String::from_utf8(before.stdout).unwrap();
    assert!(
        listed.starts_with(&format!("{} active", after.trim())),
        "{listed}"
    );
}

#[test]
fn keygen_creates_the_key_once_and_prints_its_id() {
    let (_dir, home) = process_home();
    let (kid, err) = keygen(&home);
    assert!(kid.starts_with("k4.pid."), "{kid}");
    assert!(err.starts_with("created key"), "{err}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(home.signing_key_path())
            .unwrap()
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let (again, err) = keygen(&home);
    assert_eq!(again, kid);
    assert!(err.starts_with("existing key"), "{err}");
}

#[test]
fn keygen_refuses_a_key_file_readable_by_others() {
    let (_dir, home) = process_home();
    keygen(&home);
    std::fs::set_permissions(
        home.signing_key_path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["keygen", "--home"])
        .arg(home.root())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("expected at most 0600"), "{err}");
}

#[test]
fn keygen_creates_the_log_key_beside_the_proof_key_and_checks_it_the_same_way() {
    let (_dir, home) = process_home();
    let (_, err) = keygen(&home);
    let path = home.signer_dir().join("log.key");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let origin = format!("countersign/{}", home.principal().unwrap());
    let shown = err
        .lines()
        .find_map(|line| line.strip_prefix("log key "))
        .unwrap();
    let vkey: countersign_tlog::VerifierKey = shown.parse().unwrap();
    assert_eq!(vkey.name().as_str(), origin);
    // The same key again, never a second one.
    let (_, again) = keygen(&home);
    assert!(again.contains(&format!("log key {shown}\n")), "{again}");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let out = Command::new(BIN)
        .args(["keygen", "--home"])
        .arg(home.root())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!(
            "log key: log key file: file {} has mode 0644, expected at most 0600",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn keys_retire_refuses_the_active_key_and_an_unknown_id() {
    let (_dir, home) = process_home();
    let (first, _) = keygen(&home);
    let first = first.trim();
    let (ok, _, err) = keys(&home, &["retire", "k4.pid.nope"]);
    assert!(!ok);
    assert!(err.contains("no key k4.pid.nope in the key index"), "{err}");
    let (ok, _, err) = keys(&home, &["retire", first]);
    assert!(!ok);
    assert!(
        err.contains("is active: only a verifying key can be retired"),
        "{err}"
    );

    let (ok, second, err) = keys(&home, &["rotate"]);
    assert!(ok, "{err}");
    let second = second.trim();
    let (_, list, _) = keys(&home, &["list"]);
    assert_eq!(
        list,
        format!("{first} verifying file\n{second} active file\n")
    );
    let (ok, _, err) = keys(&home, &["retire", first]);
    assert!(ok, "{err}");
    assert!(!home.signing_key_path().exists());
    let (ok, _, err) = keys(&home, &["retire", first]);
    assert!(!ok);
    assert!(err.contains("is retired"), "{err}");
    // keygen shows the active key, and creates none.
    assert_eq!(keygen(&home).0.trim(), second);
}

#[tokio::test]
async fn serve_prints_ready_line_answers_and_stops_on_sigterm() {
    let (_dir, home) = process_home();
    let (child, mut stderr) = spawn_serve(BIN, &home);
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let (addr, kid) = listening_on(&line);
    assert!(addr.starts_with("127.0.0.1:"));

    let keys = process_client(&addr, &home, Role::Head)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(keys.keys[0].key_id, kid);

    stop_with_sigterm(child).await;
}

#[test]
fn logs_written_to_a_pipe_carry_no_colour_codes() {
    let (_dir, home) = process_home();
    let mut child = Command::new(BIN)
        .args(["serve", "--home"])
        .arg(home.root())
        .env("COUNTERSIGN_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    while !seen.contains("countersign-signer listening on") {
        assert!(stderr.read_line(&mut seen).unwrap() > 0, "exited: {seen}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(seen.contains("signer ready"), "{seen}");
    assert!(!seen.contains('\u{1b}'), "{seen:?}");
}

#[test]
fn serve_with_metrics_configured_serves_them_on_loopback_and_stops_on_sigterm() {
    use std::io::{Read as _, Write as _};
    let (_dir, home) = process_home();
    std::fs::remove_file(home.config_path()).unwrap();
    write_private_new(
        &home.config_path(),
        b"[signer]\naddr = \"127.0.0.1:0\"\n[metrics]\nsigner = \"127.0.0.1:0\"\n",
    )
    .unwrap();
    let (mut child, mut stderr) = spawn_serve(BIN, &home);
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim_end()
        .strip_prefix("countersign-signer metrics on http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    line.clear();
    stderr.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("countersign-signer listening on "),
        "{line}"
    );

    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(
        response
            .lines()
            .any(|l| l == "countersign_waiting_handoffs 0"),
        "{response}"
    );
    assert!(response.ends_with("# EOF\n"), "{response}");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn serve_without_metrics_configured_says_nothing_of_them() {
    let (_dir, home) = process_home();
    let mut child = Command::new(BIN)
        .args(["serve", "--home"])
        .arg(home.root())
        .env("COUNTERSIGN_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = String::new();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    while !seen.contains("countersign-signer listening on") {
        assert!(stderr.read_line(&mut seen).unwrap() > 0, "exited: {seen}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!seen.contains("metrics"), "{seen}");
}

#[test]
fn an_enrolment_code_is_drawn_for_one_named_or_the_unnamed_approver_only() {
    let (_dir, home) = process_home();
    keygen(&home);
    let draw = |args: &[&str]| {
        Command::new(BIN)
            .args(["passkeys", "enrolment-code", "--home"])
            .arg(home.root())
            .args(args)
            .output()
            .unwrap()
    };
    // Whose code it is must be said: neither, or both, is refused.
    for args in [&[][..], &["--approver", "alice", "--unnamed"][..]] {
        let out = draw(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty());
    }
    let out = draw(&["--approver", "Alice"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let signer_dir = home.signer_dir();
    let codes = |dir: &std::path::Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("passkey-enrolment-code"))
            .collect();
        names.sort();
        names
    };
    assert!(codes(&signer_dir).is_empty());

    let out = draw(&["--approver", "alice"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0].len(), 39, "{text}");
    assert!(
        lines[1].ends_with("; accepted once, for one passkey of the approver alice only"),
        "{text}"
    );
    let out = draw(&["--unnamed"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with(
            "; accepted once, for one passkey of the unnamed approver certificate only\n"
        ),
        "{text}"
    );
    // Kept in the ledger, as SHA-256 only, and nowhere else.
    assert!(codes(&signer_dir).is_empty());
    let stored = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use sqlx::Connection as _;
        let url = format!("sqlite://{}", home.ledger_path().display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT approver, sha256 FROM enrolment_codes ORDER BY approver")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        rows
    });
    let approvers: Vec<&str> = stored.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(approvers, ["", "alice"]);
    assert!(stored.iter().all(|(_, sha)| sha.len() == 64));
}
