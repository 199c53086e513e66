//! The console's commands refuse what they must before anything listens or
//! is stored: an unspecified address or one the host does not have, a
//! pairing without an interactive terminal, an unknown session; and a
//! pairing link (https, the console's name) goes to the terminal only,
//! never to stdout, and with `--qr` also as a QR code there that an
//! independent reader decodes back to the link. Each approver has their
//! own sessions. `console trust --import` imports only a name-constrained
//! console CA, after the person confirmed its fingerprint at the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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

/// With `[console] mdns`, the console's first name is the `.local` one a
/// phone resolves over multicast DNS, and the QR code is of the link there.
#[tokio::test]
async fn pair_qr_encodes_the_local_name_a_phone_resolves() {
    let h = Harness::start_configured(
        countersign_registry::Registry::default_toml(),
        None,
        "\n[console]\naddr = \"10.1.2.3:7999\"\nnames = [\"laptop.local\", \"console.localhost\"]\nmdns = true\n",
    )
    .await;
    let run = h
        .cli_with(&["console", "pair", "--qr"], "", Person::TypesTheChallenge)
        .await;
    assert_eq!(run.result, Ok(()), "{}", run.stderr);
    let link = decode_terminal_qr(&run.shown);
    assert!(
        link.starts_with("https://laptop.local:7999/pair/cp1_"),
        "{link}"
    );
    assert!(run.shown.contains(&link), "{}", run.shown);
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

/// The real `countersign` with `HOME` set to `person`, no terminal.
fn countersign_as(person: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(args)
        .env("HOME", person)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

/// The real `countersign` with `HOME` set to `person`, at a controlling
/// terminal (a pseudo-terminal that `script` makes), where the person
/// types the challenge it asks for: whether it succeeded, and everything
/// the terminal showed.
fn countersign_at_terminal(person: &Path, args: &[&str]) -> (bool, String) {
    use std::io::{Read as _, Write as _};
    let mut line = countersign_integration_tests::bin("countersign")
        .display()
        .to_string();
    for arg in args {
        assert!(!arg.contains('\''), "{arg}");
        line.push_str(&format!(" '{arg}'"));
    }
    let mut child = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env("HOME", person)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let shown = Arc::new(Mutex::new(String::new()));
    let reading = Arc::clone(&shown);
    let reader = std::thread::spawn(move || {
        let mut chunk = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut chunk) {
            if n == 0 {
                break;
            }
            reading
                .lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let code = loop {
        let text = shown.lock().unwrap().clone();
        if let Some((_, rest)) = text.split_once("Type ")
            && let Some((code, _)) = rest.split_once(" to import it")
        {
            break Some(code.to_owned());
        }
        if child.try_wait().unwrap().is_some() || std::time::Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stdin = child.stdin.take().unwrap();
    if let Some(code) = code {
        stdin.write_all(format!("{code}\n").as_bytes()).unwrap();
    }
    let status = child.wait().unwrap();
    drop(stdin);
    reader.join().unwrap();
    let shown = shown.lock().unwrap().clone();
    (status.success(), shown)
}

fn has_certutil() -> bool {
    std::process::Command::new("certutil")
        .arg("-H")
        .output()
        .is_ok()
}

/// `certutil -L` of the NSS database `db`: one line per certificate.
fn nss_listing(db: &Path) -> String {
    let listed = std::process::Command::new("certutil")
        .args(["-L", "-d", &format!("sql:{}", db.display())])
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    String::from_utf8_lossy(&listed.stdout).into_owned()
}

/// The SHA-256 fingerprint of the certificate `db` holds as the console's CA, if any.
fn nss_console_ca(db: &Path) -> Option<String> {
    let held = std::process::Command::new("certutil")
        .args([
            "-L",
            "-d",
            &format!("sql:{}", db.display()),
            "-n",
            "countersign console CA",
            "-a",
        ])
        .output()
        .unwrap();
    held.status.success().then(|| {
        countersign_identity::console_pki::fingerprint_sha256(&String::from_utf8_lossy(
            &held.stdout,
        ))
        .unwrap()
    })
}

/// A throwaway HOME with an empty NSS database where Chromium reads one.
fn person_with_empty_nssdb() -> (tempfile::TempDir, PathBuf) {
    let person = tempfile::tempdir().unwrap();
    let db = person.path().join(".pki/nssdb");
    std::fs::create_dir_all(&db).unwrap();
    let made = std::process::Command::new("certutil")
        .args([
            "-N",
            "--empty-password",
            "-d",
            &format!("sql:{}", db.display()),
        ])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    (person, db)
}

/// A self-signed CA certificate with `constraints` (PEM).
fn ca_pem(constraints: Option<rcgen::NameConstraints>) -> String {
    let mut params = rcgen::CertificateParams::default();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "not the console's CA");
    params.name_constraints = constraints;
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().pem()
}

/// `countersign console trust`, as the real binary with a throwaway HOME:
/// the fingerprint and steps; the PEM alone; the import into the user's
/// NSS database (the one Chromium reads) once the person confirmed the
/// fingerprint at the terminal, also from a CA file handed over without a
/// home of one's own; and `--new-ca` takes the old CA out of it again.
#[tokio::test]
async fn console_trust_shows_the_fingerprint_and_imports_the_ca_into_nss() {
    let h = Harness::start().await;
    let person = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let output = countersign_as(person.path(), args);
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

    if !has_certutil() {
        println!("SKIPPED: the import (no certutil; scripts/test installs libnss3-tools)");
        return;
    }
    // The person has no countersign home: the CA file is enough. Without a
    // terminal to confirm the fingerprint at, nothing is imported.
    let handed = person.path().join("console-ca.pem");
    std::fs::write(&handed, &pem).unwrap();
    let import = [
        "console",
        "trust",
        "--import",
        "--ca",
        handed.to_str().unwrap(),
    ];
    let refused = countersign_as(person.path(), &import);
    assert_eq!(refused.status.code(), Some(3));
    assert!(
        String::from_utf8_lossy(&refused.stderr).starts_with(
            "countersign: refused: importing a CA needs an interactive terminal and none is available"
        ),
        "{refused:?}"
    );
    let nssdb = person.path().join(".pki/nssdb");
    assert!(!nssdb.join("cert9.db").exists(), "nothing was imported");

    let (ok, terminal) = countersign_at_terminal(person.path(), &import);
    assert!(ok, "{terminal}");
    assert!(
        terminal.contains("Trust this CA in your browsers, for console.localhost only:")
            && terminal.contains(&format!("SHA-256 fingerprint: {fingerprint}")),
        "{terminal}"
    );
    assert!(
        terminal.contains(&format!(
            "imported {} (SHA-256 {fingerprint}) into:",
            handed.display()
        )),
        "{terminal}"
    );
    let listed = nss_listing(&nssdb);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("countersign console CA") && l.trim_end().ends_with("C,,")),
        "{listed}"
    );
    assert_eq!(nss_console_ca(&nssdb), Some(fingerprint.clone()));

    // A new console CA: the old one leaves the database it was imported into.
    let made: serde_json::Value = serde_json::from_str(&run(&[
        "--home", &home, "--json", "console", "trust", "--new-ca",
    ]))
    .unwrap();
    assert_eq!(
        made["removed_from"],
        serde_json::json!([nssdb.display().to_string()])
    );
    assert_eq!(nss_console_ca(&nssdb), None);
    assert!(!nss_listing(&nssdb).contains("countersign console CA"));
}

/// `console trust --import` of a CA that could vouch for another site:
/// one without name constraints, and one whose constraints permit a name
/// that is not the console's. Each is refused with its reason before the
/// person is asked anything, and the NSS database stays empty.
#[test]
fn console_trust_refuses_an_unconstrained_ca_or_one_permitting_another_name_and_imports_nothing() {
    if !has_certutil() {
        println!("SKIPPED: no certutil (scripts/test installs libnss3-tools)");
        return;
    }
    let (person, nssdb) = person_with_empty_nssdb();
    let no_addresses = || {
        vec![
            rcgen::GeneralSubtree::IpAddress(rcgen::CidrSubnet::V4([0; 4], [0; 4])),
            rcgen::GeneralSubtree::IpAddress(rcgen::CidrSubnet::V6([0; 16], [0; 16])),
        ]
    };
    for (name, pem, why) in [
        (
            "unconstrained.pem",
            ca_pem(None),
            "it has no X.509 name constraints, so it could vouch for any site",
        ),
        (
            "another-name.pem",
            ca_pem(Some(rcgen::NameConstraints {
                permitted_subtrees: vec![
                    rcgen::GeneralSubtree::DnsName("console.localhost".into()),
                    rcgen::GeneralSubtree::DnsName("bank.example".into()),
                ],
                excluded_subtrees: no_addresses(),
            })),
            "its name constraints permit \"bank.example\", which is not one of the console's names (console.localhost)",
        ),
    ] {
        let file = person.path().join(name);
        std::fs::write(&file, &pem).unwrap();
        let import = [
            "console",
            "trust",
            "--import",
            "--ca",
            file.to_str().unwrap(),
        ];
        let refused = countersign_as(person.path(), &import);
        assert_eq!(refused.status.code(), Some(3), "{refused:?}");
        assert_eq!(
            String::from_utf8_lossy(&refused.stderr),
            format!(
                "countersign: refused: {} is not a console CA that may be trusted: {why}; nothing was imported\n",
                file.display()
            )
        );
        // Refused at the terminal too, before the person is asked.
        let (ok, terminal) = countersign_at_terminal(person.path(), &import);
        assert!(!ok && !terminal.contains("Type "), "{terminal}");
        let listed = nss_listing(&nssdb);
        assert!(
            !listed.lines().any(|l| l.trim_end().ends_with(",,")),
            "nothing was imported: {listed}"
        );
        assert_eq!(nss_console_ca(&nssdb), None);
    }
}

/// `console trust --import` where the nickname already holds another
/// certificate: refused, naming it, before the person is asked; the
/// database keeps what it had.
#[tokio::test]
async fn console_trust_refuses_when_the_nickname_holds_another_certificate() {
    if !has_certutil() {
        println!("SKIPPED: no certutil (scripts/test installs libnss3-tools)");
        return;
    }
    let h = Harness::start().await;
    let (person, nssdb) = person_with_empty_nssdb();
    let other = person.path().join("other.pem");
    std::fs::write(&other, ca_pem(None)).unwrap();
    let added = std::process::Command::new("certutil")
        .args([
            "-A",
            "-d",
            &format!("sql:{}", nssdb.display()),
            "-t",
            "C,,",
            "-n",
            "countersign console CA",
            "-i",
            other.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let held = nss_console_ca(&nssdb).unwrap();
    let home = h.home();
    let (ok, terminal) = countersign_at_terminal(
        person.path(),
        &["--home", &home, "console", "trust", "--import"],
    );
    assert!(!ok, "{terminal}");
    assert!(
        terminal.contains(&format!(
            "countersign: refused: the NSS database {} already holds another certificate as \"countersign console CA\" (SHA-256 {held}); nothing was imported.",
            nssdb.display()
        )) && !terminal.contains("Type "),
        "{terminal}"
    );
    assert_eq!(nss_console_ca(&nssdb), Some(held));
}

/// `console sessions revoke` forgets the session's Web Push device in the
/// ledger through the signer at once (the notify process is told of it no
/// more); with the signer stopped, the session is revoked all the same
/// and the command says when the device goes.
#[tokio::test]
async fn a_session_revoked_at_the_terminal_loses_its_push_device() {
    use countersign_proto::v1::{KeptPushDevice, SetPushDevicesRequest};
    let mut h = Harness::start().await;
    let store = SessionStore::for_approver(
        Path::new(&h.home()),
        &ApproverName::parse("console").unwrap(),
    );
    let paired = |device: &str| {
        let (code, _) = store.create_pairing().unwrap();
        store
            .redeem(code.expose_secret(), device)
            .unwrap()
            .unwrap()
            .record
    };
    let (phone, laptop) = (paired("Chrome on Android"), paired("Firefox on Linux"));
    // As the console publishes them.
    let kept = |id: &str, expires_at: &str| KeptPushDevice {
        session_id: id.into(),
        endpoint: format!("https://push.example/{id}"),
        p256dh: "BKey".into(),
        auth: "auth".into(),
        application_server_key: "BVapid".into(),
        expires_at: expires_at.into(),
    };
    h.signer
        .named_approver("console")
        .await
        .unwrap()
        .set_push_devices(SetPushDevicesRequest {
            keep: vec![
                kept(&phone.id, &phone.expires_at),
                kept(&laptop.id, &laptop.expires_at),
            ],
            remove: Vec::new(),
        })
        .await
        .unwrap();
    let told = async || -> Vec<String> {
        h.push_devices()
            .await
            .into_iter()
            .map(|d| d.session_id)
            .collect()
    };
    let mut both = vec![phone.id.clone(), laptop.id.clone()];
    both.sort();
    assert_eq!(told().await, both);

    let revoked = h.cli(&["console", "sessions", "revoke", &phone.id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stderr);
    assert_eq!(revoked.stderr, "");
    assert_eq!(told().await, std::slice::from_ref(&laptop.id));

    h.signer.halt().await.unwrap();
    let revoked = h.cli(&["console", "sessions", "revoke", &laptop.id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stderr);
    assert_eq!(
        revoked.stdout,
        format!("revoked console session {}\n", laptop.id)
    );
    assert!(
        revoked.stderr.starts_with(
            "the session is revoked, but the signer did not forget its Web Push device: cannot reach the signer"
        ) && revoked.stderr.ends_with(&format!(
            "\na running console forgets it within a minute; nothing is pushed to it after {}\n",
            laptop.expires_at
        )),
        "{}",
        revoked.stderr
    );
    let listed = h.cli(&["--json", "console", "sessions", "list"]).await;
    for s in listed.json()["sessions"].as_array().unwrap() {
        assert_eq!(s["status"], "revoked");
    }
}
