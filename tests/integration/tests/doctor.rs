//! `countersign doctor` against real installations: a healthy one, a signer
//! that is down, certificates that are expired, near expiry or of the wrong
//! role, a ledger that is unmigrated or unreachable, and the `--json` shape.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_identity::files::write_private_new;
use countersign_identity::pki::{CaMaterial, issue_client_cert};
use countersign_identity::{Home, Role};
use serde_json::Value;
use support::{Harness, Run};
use time::{Duration, OffsetDateTime};

/// The check named `name` in a `--json` run.
fn check(run: &Run, name: &str) -> Value {
    run.json()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {}", run.stdout))
        .clone()
}

/// Replaces `pki/head.pem` and its key with a certificate of `role` valid
/// over `days` (relative to now).
fn replace_head_cert(home: &Home, principal: &str, role: Role, days: (i64, i64)) {
    let ca = CaMaterial::load(home).unwrap();
    let now = OffsetDateTime::now_utc();
    let cert = issue_client_cert(
        &ca,
        role,
        principal,
        now + Duration::days(days.0),
        now + Duration::days(days.1),
    )
    .unwrap();
    let path = home.client_cert_path(Role::Head);
    std::fs::remove_file(&path).unwrap();
    write_private_new(&path, cert.cert_pem.as_bytes()).unwrap();
    let key = home.client_key_path(Role::Head);
    std::fs::remove_file(&key).unwrap();
    write_private_new(&key, cert.key_pem.as_bytes()).unwrap();
}

fn set_ledger_url(home: &Home, url: &str) {
    let path = home.config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{config}[ledger]\nurl = \"{url}\"\n")).unwrap();
}

#[tokio::test]
async fn a_healthy_installation_passes_every_check() {
    let h = Harness::start().await;
    let run = h.cli(&["doctor"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    for line in run.stdout.lines() {
        assert!(line.starts_with("ok "), "{line}");
    }
    for name in [
        "home",
        "config",
        "certificate ca",
        "certificate signer",
        "certificate head",
        "certificate approver",
        "certificate approver-console",
        "signer",
        "approver",
        "registry",
        "key sets",
        "ledger",
        "clock skew",
        "console",
    ] {
        assert!(
            run.stdout.contains(&format!("  {name}  ")),
            "{name} missing:\n{}",
            run.stdout
        );
    }
}

#[tokio::test]
async fn json_prints_one_document_with_every_check() {
    let h = Harness::start().await;
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Ok(()));
    let doc = run.json();
    assert_eq!(doc["ok"], true);
    let checks = doc["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 15, "{doc}");
    for c in checks {
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["name", "status", "detail"], "{c}");
        assert_eq!(c["status"], "ok");
    }
    let signer = check(&run, "signer");
    assert!(
        signer["detail"].as_str().unwrap().contains("k4.pid."),
        "{signer}"
    );
}

#[tokio::test]
async fn a_signer_that_is_down_fails_and_names_countersign_up() {
    let h = Harness::start().await;
    // Where the signer was: nothing listens there once it stops.
    let addr = h.signer.addr();
    let path = h.signer.home().config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let free = listener.local_addr().unwrap();
    drop(listener);
    std::fs::write(&path, config.replace(&addr.to_string(), &free.to_string())).unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Err(CliError::Error("1 check failed".into())));
    let doc = run.json();
    assert_eq!(doc["ok"], false);
    let c = check(&run, "signer");
    assert_eq!(c["status"], "fail");
    assert!(c["fix"].as_str().unwrap().contains("countersign up"), "{c}");
    // The others still ran.
    assert_eq!(check(&run, "approver")["status"], "warn");
    assert_eq!(check(&run, "key sets")["status"], "warn");
    assert_eq!(check(&run, "ledger")["status"], "ok");
    assert_eq!(check(&run, "certificate head")["status"], "ok");
    // Text: one line per check, the failure with its fix.
    let text = h.cli(&["doctor"]).await;
    let line = text.stdout.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(
        line.contains("signer") && line.contains("fix: start the signer with `countersign up`"),
        "{line}"
    );
}

/// A key file of this home readable by others: the check that needs it
/// fails naming the file and the fix, and never blames the running signer.
#[tokio::test]
async fn a_world_readable_client_key_names_the_file_not_the_signer() {
    use std::os::unix::fs::PermissionsExt as _;
    let h = Harness::start().await;
    let home = h.signer.home();
    for (role, failing, other) in [
        (Role::Approver, "approver", "signer"),
        (Role::Head, "signer", "approver"),
    ] {
        let key = home.client_key_path(role);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        let run = h.cli(&["--json", "doctor"]).await;
        let c = check(&run, failing);
        assert_eq!(c["status"], "fail", "{c}");
        let detail = c["detail"].as_str().unwrap();
        assert!(detail.contains(&key.display().to_string()), "{c}");
        let fix = c["fix"].as_str().unwrap();
        assert!(fix.contains("chmod 600"), "{c}");
        assert!(
            !fix.contains("countersign up") && !fix.contains("fix `signer` first"),
            "{c}"
        );
        assert_eq!(check(&run, other)["status"], "ok", "{}", run.stdout);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

#[tokio::test]
async fn an_expired_head_certificate_fails() {
    let h = Harness::start().await;
    replace_head_cert(h.signer.home(), h.signer.principal(), Role::Head, (-30, -1));
    let run = h.cli(&["--json", "doctor"]).await;
    assert!(run.result.is_err());
    let c = check(&run, "certificate head");
    assert_eq!(c["status"], "fail");
    assert!(c["detail"].as_str().unwrap().contains("expired on"), "{c}");
    assert!(
        c["fix"].as_str().unwrap().contains("countersign init"),
        "{c}"
    );
    // The signer refuses it too: the doctor says so.
    let signer = check(&run, "signer");
    assert_eq!(signer["status"], "fail", "{signer}");
}

#[tokio::test]
async fn a_head_certificate_near_expiry_warns_and_passes() {
    let h = Harness::start().await;
    replace_head_cert(h.signer.home(), h.signer.principal(), Role::Head, (-1, 10));
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let c = check(&run, "certificate head");
    assert_eq!(c["status"], "warn");
    assert!(c["detail"].as_str().unwrap().contains("expires on"), "{c}");
    assert_eq!(run.json()["ok"], true);
}

#[tokio::test]
async fn a_wrong_role_certificate_in_head_pem_fails() {
    let h = Harness::start().await;
    let principal = h.signer.principal().to_string();
    replace_head_cert(h.signer.home(), &principal, Role::Approver, (-1, 365));
    let run = h.cli(&["--json", "doctor"]).await;
    assert!(run.result.is_err());
    let c = check(&run, "certificate head");
    assert_eq!(c["status"], "fail");
    assert_eq!(
        c["detail"],
        format!(
            "names countersign://approver/{principal}, expected countersign://head/{principal}"
        )
    );
}

#[tokio::test]
async fn an_unmigrated_ledger_fails() {
    let h = Harness::start().await;
    let home = h.signer.home();
    let empty = home.root().join("empty.db");
    write_private_new(&empty, b"").unwrap();
    set_ledger_url(home, &format!("sqlite://{}", empty.display()));
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Err(CliError::Error("1 check failed".into())));
    let c = check(&run, "ledger");
    assert_eq!(c["status"], "fail");
    assert!(
        c["detail"].as_str().unwrap().contains("schema version 0"),
        "{c}"
    );
    // Read only: the doctor migrated nothing.
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
}

#[tokio::test]
async fn an_unreachable_ledger_fails_without_printing_its_url() {
    let h = Harness::start().await;
    set_ledger_url(
        h.signer.home(),
        // A Unix socket nobody serves: a password may go there, so this
        // reaches the connection (a password over TCP is refused before).
        "postgres://countersign:hunter2@%2Fnonexistent%2Frun/countersign",
    );
    let run = h.cli(&["--json", "doctor"]).await;
    assert!(run.result.is_err());
    let c = check(&run, "ledger");
    assert_eq!(c["status"], "fail");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("cannot connect to PostgreSQL"),
        "{c}"
    );
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    assert_eq!(check(&run, "clock skew")["status"], "warn");
}

#[tokio::test]
async fn a_configured_console_that_is_not_running_warns() {
    let h = Harness::start().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let path = h.signer.home().config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{config}[console]\naddr = \"{addr}\"\n")).unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Ok(()));
    assert_eq!(check(&run, "console")["status"], "warn");
}

/// Another program on one of the console's addresses (here [::1], which
/// Chromium tries first for console.localhost) fails the check, named;
/// the console itself, holding every address, passes.
#[tokio::test]
async fn a_console_address_held_by_another_program_fails_and_the_console_passes() {
    let h = Harness::start().await;
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("SKIPPED: this host has no IPv6 loopback");
        return;
    }
    // A port held on [::1] only: one whose 127.0.0.1 side is free too
    // (other tests running at once hold ports of their own there).
    let (squatter, port) = (0..100)
        .find_map(|_| {
            let squatter = std::net::TcpListener::bind("[::1]:0").ok()?;
            let port = squatter.local_addr().ok()?.port();
            std::net::TcpListener::bind(("127.0.0.1", port)).ok()?;
            Some((squatter, port))
        })
        .expect("a port free on 127.0.0.1 whose [::1] side this test holds");
    let path = h.signer.home().config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{config}[console]\naddr = \"127.0.0.1:{port}\"\n"),
    )
    .unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    let c = check(&run, "console");
    assert_eq!(c["status"], "fail", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .starts_with(&format!("[::1]:{port} is held by another program")),
        "{c}"
    );
    drop(squatter);

    // The console itself, on the same port, as the real binary.
    // (Async: the harness's signer runs on this test's runtime.)
    let mut console =
        tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
            .args(["--home", &h.home(), "console"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(
        console.stderr.take().unwrap(),
    ));
    let mut listening = String::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.contains("listening on") || line.contains("error") {
            listening = line;
            break;
        }
    }
    assert!(
        listening.contains(&format!("https://console.localhost:{port}/")),
        "{listening}"
    );
    let run = h.cli(&["--json", "doctor"]).await;
    let _ = console.kill().await;
    let c = check(&run, "console");
    assert_eq!(c["status"], "ok", "{c}");
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("127.0.0.1:{port}")),
        "{c}"
    );
}

#[tokio::test]
async fn on_postgresql_the_clock_is_measured_against_the_server() {
    let h = Harness::start_on(
        support::Backend::Postgres,
        countersign_registry::Registry::default_toml(),
    )
    .await;
    let run = h.cli(&["--json", "doctor"]).await;
    assert_eq!(run.result, Ok(()), "{}", run.stdout);
    let clock = check(&run, "clock skew");
    assert_eq!(clock["status"], "ok", "{clock}");
    let detail = clock["detail"].as_str().unwrap();
    // Same machine: well within the allowance, and measured, not assumed.
    assert!(
        detail.starts_with("the PostgreSQL server's clock is ")
            && detail.contains(" s from this host's clock (allowance "),
        "{detail}"
    );
    let skew: f64 = detail
        .trim_start_matches("the PostgreSQL server's clock is ")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(skew.abs() < 2.0, "{detail}");
    let ledger = check(&run, "ledger");
    assert_eq!(ledger["status"], "ok", "{ledger}");
    assert!(
        !run.stdout.contains("postgres://"),
        "the URL is never printed: {}",
        run.stdout
    );
}

/// The operator's certificate must name every console name (a phone opens
/// the console by one of them); the installation's own is issued again
/// for them when the console starts.
#[tokio::test]
async fn a_console_certificate_that_lacks_a_name_fails_and_one_naming_all_passes() {
    use countersign_identity::console_pki::{generate_console_ca, issue_console_cert};
    let h = Harness::start().await;
    let home = h.signer.home();
    let names = ["console.localhost".to_owned(), "phone.localhost".to_owned()];
    let ca = generate_console_ca(&names).unwrap();
    let write_cert = |file: &str, cert_names: &[String]| {
        let issued = issue_console_cert(&ca, cert_names).unwrap();
        let cert = home.root().join(format!("{file}.pem"));
        let key = home.root().join(format!("{file}.key"));
        write_private_new(&cert, issued.cert_pem.as_bytes()).unwrap();
        write_private_new(&key, issued.key_pem.as_bytes()).unwrap();
        (cert, key)
    };
    let path = home.config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    let with_cert = |cert: &std::path::Path, key: &std::path::Path| {
        format!(
            "{config}[console]\naddr = \"127.0.0.1:1\"\nnames = [\"console.localhost\", \"phone.localhost\"]\ncert = \"{}\"\nkey = \"{}\"\n",
            cert.display(),
            key.display()
        )
    };

    let (cert, key) = write_cert("one-name", &names[..1]);
    std::fs::write(&path, with_cert(&cert, &key)).unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    let c = check(&run, "console certificate");
    assert_eq!(c["status"], "fail", "{c}");
    assert_eq!(
        c["detail"],
        format!(
            "{} cannot serve the console's names (console.localhost, phone.localhost): it does not name phone.localhost (it names console.localhost); a browser opening such a name refuses it",
            cert.display()
        ),
        "{c}"
    );
    assert_eq!(
        run.result,
        Err(CliError::Error("1 check failed".into())),
        "{}",
        run.stdout
    );

    let (cert, key) = write_cert("both-names", &names);
    std::fs::write(&path, with_cert(&cert, &key)).unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    let c = check(&run, "console certificate");
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(
        c["detail"],
        format!(
            "{} serves every console name (console.localhost, phone.localhost)",
            cert.display()
        )
    );
    // With the operator's own certificate there is no console CA to replace.
    let refused = h.cli(&["--json", "console", "trust", "--new-ca"]).await;
    assert!(
        matches!(refused.result, Err(CliError::Refused(_))),
        "{:?}",
        refused.result
    );
    assert_eq!(
        refused.json()["message"],
        "this console serves the operator's own certificate ([console] cert): it has no console CA to replace"
    );
    assert!(!home.console_ca_cert_path().exists());
}

/// A name the installation's console CA may not vouch for fails (the
/// console would refuse to start), naming the way out; `console trust
/// --new-ca` makes a CA for every name, and the check passes.
#[tokio::test]
async fn a_console_ca_that_cannot_vouch_for_a_name_fails_until_a_new_ca_is_made() {
    use countersign_identity::console_pki::ensure_console_cert;
    let h = Harness::start().await;
    let home = h.signer.home();
    ensure_console_cert(home, &["console.localhost".to_owned()]).unwrap();
    let old_ca = std::fs::read_to_string(home.console_ca_cert_path()).unwrap();
    let path = home.config_path();
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!(
            "{config}[console]\naddr = \"127.0.0.1:1\"\nnames = [\"laptop.home.arpa\", \"console.localhost\"]\n"
        ),
    )
    .unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    let c = check(&run, "console certificate");
    assert_eq!(c["status"], "fail", "{c}");
    assert_eq!(
        c["detail"],
        format!(
            "the console CA {} may vouch only for console.localhost and not for laptop.home.arpa: the console refuses to start with these names",
            home.console_ca_cert_path().display()
        ),
        "{c}"
    );
    assert!(
        c["fix"]
            .as_str()
            .unwrap()
            .contains("countersign console trust --new-ca"),
        "{c}"
    );

    let made = h.cli(&["--json", "console", "trust", "--new-ca"]).await;
    assert_eq!(made.result, Ok(()), "{}", made.stderr);
    let made = made.json();
    assert_eq!(
        made["names"],
        serde_json::json!(["laptop.home.arpa", "console.localhost"])
    );
    let retired = std::path::PathBuf::from(made["retired"].as_str().unwrap());
    assert_eq!(std::fs::read_to_string(&retired).unwrap(), old_ca);
    assert_ne!(
        std::fs::read_to_string(home.console_ca_cert_path()).unwrap(),
        old_ca
    );
    let run = h.cli(&["--json", "doctor"]).await;
    let c = check(&run, "console certificate");
    assert_eq!(c["status"], "ok", "{c}");
}

/// A port is not an identity: the ledger's password would go to whoever
/// holds the port. The doctor names the refusal and sends nothing there.
#[tokio::test]
async fn a_ledger_password_over_tcp_without_verify_full_fails_and_nothing_is_sent() {
    let h = Harness::start().await;
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    squatter.set_nonblocking(true).unwrap();
    let port = squatter.local_addr().unwrap().port();
    set_ledger_url(
        h.signer.home(),
        &format!("postgres://countersign:hunter2@127.0.0.1:{port}/countersign"),
    );
    let run = h.cli(&["--json", "doctor"]).await;
    assert!(run.result.is_err());
    let c = check(&run, "ledger");
    assert_eq!(c["status"], "fail");
    let refusal = countersign_ledger::LedgerError::PasswordWithoutVerifiedTls.to_string();
    assert!(c["detail"].as_str().unwrap().contains(&refusal), "{c}");
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    assert_eq!(
        squatter.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the doctor connected to the port"
    );
}

/// An http upstream with a bearer credential is refused at load, so the
/// doctor names the upstream and the field and reaches nothing.
#[tokio::test]
async fn a_bearer_credential_over_plain_http_fails_the_registry_check_and_nothing_is_sent() {
    let h = Harness::start().await;
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    squatter.set_nonblocking(true).unwrap();
    let port = squatter.local_addr().unwrap().port();
    let home = h.signer.home();
    let bearer = home.root().join("web-bearer");
    write_private_new(&bearer, b"tok-squatted\n").unwrap();
    let gateway = home.registry_path().with_file_name("gateway.toml");
    std::fs::write(
        &gateway,
        format!(
            "[[upstream]]\nname = \"web\"\n[upstream.http]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_file = \"{}\"\n",
            bearer.display()
        ),
    )
    .unwrap();
    let run = h.cli(&["--json", "doctor"]).await;
    assert!(run.result.is_err());
    let c = check(&run, "registry");
    assert_eq!(c["status"], "fail");
    let refusal = format!(
        "upstream \"web\": {}",
        countersign_registry::gateway::BEARER_NEEDS_HTTPS
    );
    assert!(c["detail"].as_str().unwrap().contains(&refusal), "{c}");
    let tools = h.cli(&["gateway", "tools"]).await;
    let error = tools
        .result
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains(&refusal), "{error}");
    assert_eq!(
        squatter.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "something connected to the upstream's port"
    );
}
