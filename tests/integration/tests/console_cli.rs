//! The console's commands refuse what they must before anything listens or
//! is stored: an unspecified address or one the host does not have, a
//! pairing without an interactive terminal, an unknown session; and a
//! pairing link (https, the console's name) goes to the terminal only,
//! never to stdout, and with `--qr` also as a QR code there that an
//! independent reader decodes back to the link. Each approver has their
//! own sessions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_console::SessionStore;
use countersign_identity::ApproverName;
use serde_json::Value;
use support::{Harness, Person};

#[tokio::test]
async fn console_refuses_an_unspecified_address_or_one_it_cannot_hold() {
    let h = Harness::start().await;
    for (addr, why) in [
        ("0.0.0.0:0", "names no specific address"),
        ("[::]:0", "names no specific address"),
        ("192.0.2.1:7444", "cannot listen on 192.0.2.1:7444"),
    ] {
        let run = h.cli(&["console", "--listen", addr]).await;
        assert!(
            matches!(&run.result, Err(CliError::Error(m)) if m.contains(why)),
            "{addr}: {:?}",
            run.result
        );
    }
}

#[tokio::test]
async fn pairing_needs_a_terminal_and_shows_the_link_only_there() {
    let h = Harness::start().await;
    let console = ApproverName::parse("console").unwrap();
    let store = SessionStore::for_approver(std::path::Path::new(&h.home()), &console);

    let run = h
        .cli_with(&["console", "pair"], "", Person::NoTerminal)
        .await;
    assert!(
        matches!(&run.result, Err(CliError::Refused(m)) if m.starts_with("pairing needs an interactive terminal") && m.ends_with("no link was created")),
        "{:?}",
        run.result
    );
    assert!(
        !std::path::Path::new(&h.home())
            .join(countersign_console::sessions::store_file(&console))
            .exists()
    );

    let run = h
        .cli_with(
            &["--json", "console", "--listen", "127.0.0.1:7999", "pair"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let link = run
        .shown
        .split_whitespace()
        .find(|w| w.starts_with("https://console.localhost:7999/pair/cp1_"))
        .expect("the terminal shows the link");
    assert!(
        !run.stdout.contains("cp1_"),
        "stdout never carries the code"
    );
    assert!(run.json()["expires_at"].is_string());
    // The link's code opens exactly one session.
    let code = link.rsplit('/').next().unwrap();
    let record = store
        .redeem(code, "Firefox on Linux")
        .unwrap()
        .unwrap()
        .record;
    assert!(store.redeem(code, "Firefox on Linux").unwrap().is_err());

    let listed = h.cli(&["--json", "console", "sessions", "list"]).await;
    assert_eq!(listed.json()["sessions"][0]["id"], record.id.as_str());
    assert_eq!(listed.json()["sessions"][0]["status"], "active");
    assert_eq!(listed.json()["sessions"][0]["device"], "Firefox on Linux");
    assert_eq!(listed.json()["sessions"][0]["last_used_at"], Value::Null);
    let text = h.cli(&["console", "sessions", "list"]).await;
    assert!(
        text.stdout.starts_with(&format!(
            "{}  active  Firefox on Linux  created ",
            record.id
        )) && text.stdout.contains("  last used never  expires "),
        "{}",
        text.stdout
    );
    let revoked = h.cli(&["console", "sessions", "revoke", &record.id]).await;
    assert_eq!(revoked.result, Ok(()));
    let listed = h.cli(&["--json", "console", "sessions", "list"]).await;
    assert_eq!(listed.json()["sessions"][0]["status"], "revoked");

    let unknown = h
        .cli(&["console", "sessions", "revoke", "0000000000000000"])
        .await;
    assert_eq!(
        unknown.result,
        Err(CliError::Refused(
            "no console session 0000000000000000".into()
        ))
    );
}

/// The QR code drawn at the terminal (half blocks, black on bright white),
/// read back by an independent decoder (`rqrr`): each character cell is
/// two modules, drawn into a greyscale image at 4 pixels a module.
fn decode_terminal_qr(shown: &str) -> String {
    let rows: Vec<Vec<(bool, bool)>> = shown
        .lines()
        .filter_map(|l| l.split_once("\x1b[30;107m"))
        .map(|(_, rest)| {
            let (cells, _) = rest
                .split_once("\x1b[0m")
                .expect("each line ends its colours");
            cells
                .chars()
                .map(|c| match c {
                    ' ' => (false, false),
                    '\u{2580}' => (true, false),
                    '\u{2584}' => (false, true),
                    '\u{2588}' => (true, true),
                    other => panic!("not a QR cell: {other:?}"),
                })
                .collect()
        })
        .collect();
    assert!(rows.len() > 10, "no QR code at the terminal: {shown}");
    let width = rows[0].len();
    assert!(rows.iter().all(|r| r.len() == width), "a ragged QR code");
    let modules: Vec<Vec<bool>> = rows
        .iter()
        .flat_map(|r| {
            [
                r.iter().map(|c| c.0).collect(),
                r.iter().map(|c| c.1).collect(),
            ]
        })
        .collect();
    const SCALE: usize = 4;
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(
        width * SCALE,
        modules.len() * SCALE,
        |x, y| {
            if modules[y / SCALE][x / SCALE] {
                0
            } else {
                255
            }
        },
    );
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code");
    grids[0].decode().expect("the QR code decodes").1
}

#[tokio::test]
async fn pair_qr_shows_a_qr_code_of_exactly_the_link_at_the_terminal_only() {
    let h = Harness::start().await;
    let run = h
        .cli_with(
            &[
                "--json",
                "console",
                "--listen",
                "127.0.0.1:7999",
                "pair",
                "--qr",
            ],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let link = run
        .shown
        .split_whitespace()
        .find(|w| w.starts_with("https://console.localhost:7999/pair/cp1_"))
        .expect("the terminal shows the link")
        .to_owned();
    assert_eq!(decode_terminal_qr(&run.shown), link);
    // Neither the link nor its code reaches stdout.
    assert!(!run.stdout.contains("cp1_") && !run.stdout.contains('\u{2588}'));
    assert!(run.json()["expires_at"].is_string());
    // The code is the link's: it opens one session.
    let store = SessionStore::for_approver(
        std::path::Path::new(&h.home()),
        &ApproverName::parse("console").unwrap(),
    );
    let code = link.rsplit('/').next().unwrap();
    assert!(store.redeem(code, "Chrome on Android").unwrap().is_ok());

    // Without --qr, no code is drawn; without a terminal, nothing at all.
    let plain = h
        .cli_with(&["console", "pair"], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(plain.result, Ok(()));
    assert!(!plain.shown.contains("\x1b[") && !plain.shown.contains('\u{2588}'));
    let none = h
        .cli_with(&["console", "pair", "--qr"], "", Person::NoTerminal)
        .await;
    assert!(
        matches!(&none.result, Err(CliError::Refused(m)) if m.starts_with("pairing needs an interactive terminal")),
        "{:?}",
        none.result
    );
    assert!(!none.stdout.contains('\u{2588}') && !none.stderr.contains('\u{2588}'));
}

#[tokio::test]
async fn each_approver_pairs_and_lists_only_their_own_browsers() {
    let h = Harness::start().await;
    let run = h
        .cli_with(
            &["console", "--as", "alice", "pair"],
            "",
            Person::TypesTheChallenge,
        )
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let code = run
        .shown
        .split_whitespace()
        .find_map(|w| w.split("/pair/").nth(1))
        .expect("the terminal shows the link");
    let alice = ApproverName::parse("alice").unwrap();
    let home = std::path::Path::new(&h.home()).to_path_buf();
    // The console's own store knows nothing of Alice's pairing.
    let console = SessionStore::for_approver(&home, &ApproverName::parse("console").unwrap());
    assert!(console.redeem(code, "x").unwrap().is_err());
    let record = SessionStore::for_approver(&home, &alice)
        .redeem(code, "Safari on iPhone")
        .unwrap()
        .unwrap()
        .record;
    assert_eq!(record.approver, "alice");
    let mine = h
        .cli(&["--json", "console", "--as", "alice", "sessions", "list"])
        .await;
    assert_eq!(mine.json()["sessions"][0]["id"], record.id.as_str());
    let theirs = h.cli(&["--json", "console", "sessions", "list"]).await;
    assert_eq!(theirs.json()["sessions"], serde_json::json!([]));
    let revoked = h.cli(&["console", "sessions", "revoke", &record.id]).await;
    assert_eq!(
        revoked.result,
        Err(CliError::Refused(format!(
            "no console session {}",
            record.id
        )))
    );
}

/// `countersign console trust`, as the real binary with a throwaway HOME:
/// the fingerprint and steps; the PEM alone; the import into the user's
/// NSS database (the one Chromium reads), also from a CA file handed over
/// without a home of one's own.
#[tokio::test]
async fn console_trust_shows_the_fingerprint_and_imports_the_ca_into_nss() {
    let h = Harness::start().await;
    let cli = countersign_integration_tests::bin("countersign");
    let person = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = std::process::Command::new(&cli)
            .args(args)
            .env("HOME", person.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    let home = h.home();
    let shown: serde_json::Value =
        serde_json::from_str(&run(&["--home", &home, "--json", "console", "trust"])).unwrap();
    let ca = std::path::Path::new(&home).join("pki/console-ca.pem");
    assert_eq!(shown["ca"], ca.display().to_string());
    let pem = std::fs::read_to_string(&ca).unwrap();
    let fingerprint = countersign_identity::console_pki::fingerprint_sha256(&pem).unwrap();
    assert_eq!(shown["sha256"], fingerprint.as_str());
    let steps = run(&["--home", &home, "console", "trust"]);
    assert!(
        steps.contains(&fingerprint) && steps.contains("certutil -d sql:$HOME/.pki/nssdb"),
        "{steps}"
    );
    assert_eq!(run(&["--home", &home, "console", "trust", "--pem"]), pem);

    if std::process::Command::new("certutil")
        .arg("-H")
        .output()
        .is_err()
    {
        println!("SKIPPED: the import (no certutil; scripts/test installs libnss3-tools)");
        return;
    }
    // The person has no countersign home: the CA file is enough.
    let handed = person.path().join("console-ca.pem");
    std::fs::write(&handed, &pem).unwrap();
    let imported: serde_json::Value = serde_json::from_str(&run(&[
        "--json",
        "console",
        "trust",
        "--import",
        "--ca",
        handed.to_str().unwrap(),
    ]))
    .unwrap();
    let nssdb = person.path().join(".pki/nssdb");
    assert_eq!(imported["imported_into"][0], nssdb.display().to_string());
    let listed = std::process::Command::new("certutil")
        .args(["-L", "-d", &format!("sql:{}", nssdb.display())])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("countersign console CA") && l.trim_end().ends_with("C,,")),
        "{listed}"
    );
}
