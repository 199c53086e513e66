//! The privilege-separated installation on one host (`deploy/setup-system.sh`,
//! `deploy/systemd/`), tested as an attacker would: the signer and the
//! console run as one throwaway system user, the agent as another, and the
//! agent's user tries everything it can reach. Passkeys are required (the
//! script writes `[passkeys] required = true`): the person pairs a browser
//! and enrols a passkey with the administrator's one-time code, both printed
//! by commands only the signer's user can run, and approves in the console
//! (`tests/e2e/hardened_person.py`, headless Chromium with a virtual
//! authenticator); the agent is an MCP client (`tests/e2e/hardened_agent.py`,
//! the official Python SDK) of `countersign mcp` run as the agent's user.
//!
//! The attacker test needs root (useradd, runuser, setpriv), the PostgreSQL
//! test server (`$COUNTERSIGN_TEST_PG`), python3 with pexpect, selenium and
//! mcp, and Debian's chromium and chromedriver; without root it says so and
//! passes without testing anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;
mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use countersign_identity::files::write_private_new;
use countersign_identity::{Home, Role};
use countersign_integration_tests::bin;
use countersign_ledger::Ledger;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, BeginRemovalRequest, DecideRequest, EnrolRequest,
    ListPasskeysRequest, RemovePasskeyRequest,
};
use hardened_support::{
    Base, Layout, McpAgent, Processes, ROOT, Users, as_user, files_of, ledger_with_roles,
    person_approves, random_hex, skipped_without_root, spawn_as, text, uid_of, wait_for_port,
};
use sha2::{Digest as _, Sha256};
use sqlx::{AssertSqlSafe, Connection as _, SqliteConnection};
use support::{Harness, assert_refused, forge};

// ---------------------------------------------------------------------------
// The systemd units.

/// The units with their binaries pointed at this build, in a temporary
/// directory (`systemd-analyze verify` refuses an ExecStart= that does not
/// exist, and `--root=` needs a whole systemd tree).
fn units_for_this_build() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = bin("countersign").parent().unwrap().to_path_buf();
    for unit in UNITS {
        let text = std::fs::read_to_string(Path::new(ROOT).join("deploy/systemd").join(unit))
            .unwrap()
            .replace("/usr/bin/", &format!("{}/", bin_dir.display()));
        std::fs::write(dir.path().join(unit), text).unwrap();
    }
    dir
}

/// The units of the hardened installation.
const UNITS: [&str; 5] = [
    "countersign-signer.service",
    "countersign-console.service",
    "countersign-premise.service",
    "countersign-notify.service",
    "countersign-gateway.service",
];

fn systemd_analyze(dir: &Path, args: &[&str]) -> Output {
    Command::new("systemd-analyze")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("systemd-analyze runs (Debian: the systemd package)")
}

#[test]
fn the_systemd_units_verify_without_a_warning_and_keep_their_exposure_score() {
    let dir = units_for_this_build();
    let verify = systemd_analyze(
        dir.path(),
        &[
            "verify",
            "./countersign-signer.service",
            "./countersign-console.service",
            "./countersign-premise.service",
            "./countersign-notify.service",
            "./countersign-gateway.service",
        ],
    );
    assert!(verify.status.success(), "{verify:?}");
    assert_eq!(
        String::from_utf8_lossy(&verify.stderr),
        "",
        "systemd-analyze verify warned"
    );
    assert_eq!(String::from_utf8_lossy(&verify.stdout), "");

    // The score deploy/systemd/README.md records; a unit that loosens
    // anything raises it and fails here.
    // The premise service runs without PrivateUsers= (its peer check needs
    // the signer's real uid): 1.1. The notify service reaches webhook
    // receivers and mail servers wherever they are (no IPAddressDeny=): 1.1.
    // The gateway reaches HTTP upstreams wherever they are, runs upstreams
    // that may JIT (no MemoryDenyWriteExecute=) and, like the premise
    // service, checks its client's real uid (no PrivateUsers=): 1.3.
    for (unit, score) in UNITS
        .into_iter()
        .zip(["0.9 SAFE", "0.9 SAFE", "1.1 OK", "1.1 OK", "1.3 OK"])
    {
        let out = systemd_analyze(
            dir.path(),
            &["security", "--offline=true", &format!("./{unit}")],
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or_else(|| panic!("no exposure level for {unit}: {out:?}"));
        assert!(
            line.contains(&format!("Overall exposure level for {unit}: {score}")),
            "{line}"
        );
    }
}

/// The setup script and the Debian package's maintainer scripts.
#[test]
fn the_setup_script_is_shellcheck_clean() {
    match Command::new("shellcheck")
        .args(
            [
                "deploy/setup-system.sh",
                "deploy/debian/postinst",
                "deploy/debian/prerm",
                "deploy/debian/postrm",
            ]
            .map(|script| Path::new(ROOT).join(script)),
        )
        .output()
    {
        Ok(out) => assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        ),
        Err(e) => eprintln!("SKIPPED: shellcheck is not installed ({e})"),
    }
}

// ---------------------------------------------------------------------------
// A forged issuance row in a SQLite ledger.

/// In the development installation the head's user can write `ledger.db`
/// (it is its own file). Rows are not proofs: a decision and an issuance
/// written by hand, even one naming the exact hash and nonce of a proof
/// signed by another key, give `exec` nothing to apply, by handoff or by
/// proof.
#[tokio::test]
async fn an_issuance_row_forged_into_the_sqlite_ledger_gets_the_head_nothing() {
    const FORGED_ARGS: &str = r#"{"name":"forged","cron":"0 3 * * *"}"#;
    let h = Harness::start().await;
    // A genuine proof for another proposal, to borrow its claims' shape.
    let genuine = h
        .propose(
            "schedule.create",
            r#"{"name":"genuine","cron":"0 1 * * *"}"#,
        )
        .await;
    let genuine_proof = std::fs::read_to_string(h.approve_to_file(&genuine).await).unwrap();
    let id = h.propose("schedule.create", FORGED_ARGS).await;
    let effects_before = h.effects_run().await;

    // The proof the attacker wants: the genuine claims moved to `id`'s
    // proposal and arguments, signed by a key the signer never had, under
    // the signer's key id.
    let url = format!("sqlite://{}", h.signer.home().ledger_path().display());
    let mut db = SqliteConnection::connect(&url).await.unwrap();
    let (args_sha256,): (String,) =
        sqlx::query_as("SELECT arguments_sha256 FROM proposals WHERE id = ?")
            .bind(&id)
            .fetch_one(&mut db)
            .await
            .unwrap();
    let (payload, _, footer) = forge::split(&genuine_proof);
    let mut claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let nonce = format!("forged-{}", random_hex());
    claims["pid"] = id.clone().into();
    claims["args"] = serde_json::from_str(FORGED_ARGS).unwrap();
    claims["args_sha256"] = args_sha256.into();
    claims["jti"] = nonce.clone().into();
    let payload = countersign_verifier::canonical::to_canonical(&claims).unwrap();
    let sig = ed25519_dalek::Signer::sign(
        &forge::attacker_key(),
        &countersign_verifier::paseto::signing_input(payload.as_bytes(), &footer),
    )
    .to_bytes();
    let forged = countersign_verifier::paseto::assemble(payload.as_bytes(), &sig, &footer);

    // The rows, written straight into the file, as the head's user can.
    let now = "2026-01-01T00:00:00Z";
    sqlx::query(
        "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at) \
         VALUES (?, 'approve', ?, NULL, ?)",
    )
    .bind(&id)
    .bind(h.signer.principal())
    .bind(now)
    .execute(&mut db)
    .await
    .unwrap();
    sqlx::query(AssertSqlSafe(
        "INSERT INTO issuances (proposal_id, proof_sha256, nonce, principal, session, \
         operation, arguments_sha256, contract_revision, policy_revision, provenance, \
         audience, issued_at, expires_at) \
         SELECT id, ?, ?, principal, session, operation, arguments_sha256, \
         contract_revision, policy_revision, 'human:cli', ?, ?, '2999-01-01T00:00:00Z' \
         FROM proposals WHERE id = ?"
            .to_string(),
    ))
    .bind(hex::encode(Sha256::digest(forged.as_bytes())))
    .bind(&nonce)
    .bind(claims["aud"].as_str().unwrap_or_default())
    .bind(now)
    .bind(&id)
    .execute(&mut db)
    .await
    .unwrap();
    db.close().await.unwrap();

    // By handoff: the signer holds no proof for it, so there is nothing to claim.
    let run = h.exec_handoff(&id, "cli").await;
    assert_refused(&run, "no_live_handoff");
    // By proof: the head's gate checks the signature before the ledger.
    let path = h.proof_file("forged.proof", &forged);
    let run = h.exec(&id, &path, &[]).await;
    assert_refused(&run, "bad_signature");

    assert_eq!(h.effects_run().await, effects_before);
    assert!(
        h.schedules().await.iter().all(|(name, _)| name != "forged"),
        "{:?}",
        h.schedules().await
    );
}

// ---------------------------------------------------------------------------
// The attacker test.

/// The console as a program reaches it: https://console.localhost:PORT,
/// connecting to 127.0.0.1 (the system resolver need not resolve
/// `*.localhost`; browsers do it themselves) and trusting only the
/// installation's console CA.
struct ConsoleAt {
    port: u16,
    ca_pem: String,
}

/// One HTTPS request to the console; returns the status and the response
/// (headers and body).
fn https(console: &ConsoleAt, method: &str, path: &str) -> (u16, String) {
    https_form(console, method, path, "")
}

/// [`https`] with a form body (`application/x-www-form-urlencoded`), as a
/// page of the console's own origin would send it.
fn https_form(console: &ConsoleAt, method: &str, path: &str, form: &str) -> (u16, String) {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, ServerName};
    countersign_identity::tls::install_crypto_provider();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(console.ca_pem.as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("console.localhost").unwrap();
    let tls = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(("127.0.0.1", console.port)).unwrap();
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    let host = format!("console.localhost:{}", console.port);
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: https://{host}\r\n\
         Sec-Fetch-Site: same-origin\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{form}",
        form.len()
    )
    .unwrap();
    let mut bytes = Vec::new();
    // A close without close_notify ends the read; keep what came.
    let _ = stream.read_to_end(&mut bytes);
    let response = text(&bytes);
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, response)
}

/// `args` run as `user` at a pseudo-terminal (pexpect, as a person at a
/// terminal would); returns the exit code and what the terminal showed.
fn at_terminal(user: &str, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new("python3")
        .arg("-c")
        .arg(
            "import pexpect, sys\n\
             child = pexpect.spawn('runuser', ['-u', sys.argv[1], '--'] + sys.argv[2:], timeout=30, cwd='/', encoding='utf-8')\n\
             child.expect(pexpect.EOF)\n\
             child.close()\n\
             sys.stdout.write(child.before)\n\
             sys.exit(child.exitstatus)\n",
        )
        .arg(user)
        .args(args)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .output()
        .unwrap();
    assert_eq!(text(&out.stderr), "", "pexpect: {out:?}");
    (out.status.code(), text(&out.stdout).replace("\r\n", "\n"))
}

/// What the premise program of `premise.probe` runs: it prints its user,
/// whether it can open the key file and list the signer's home (`read` or
/// the errno), and its stdin.
const PREMISE_PROBE: &str = r#"import errno, os, pwd, sys
print(pwd.getpwuid(os.getuid()).pw_name)
key = sys.argv[1]
for what, act in (("key", lambda: open(key, "rb").read()),
                  ("home", lambda: os.listdir(os.path.dirname(os.path.dirname(key))))):
    try:
        act()
        print(what, "read")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
print(sys.stdin.read())
"#;

/// The `premise.probe` operation, for the signer's `operations.toml`:
/// `python3 <script> <key_file>`.
fn premise_probe_operation(script: &Path, key_file: &Path) -> String {
    format!(
        r#"
[[operation]]
name = "premise.probe"
description = "Probe what a premise program can read."
class = "read"
replay_safe = true
preview = "Probe"

[operation.premise]
program = "/usr/bin/python3"
args = [{script}, {key}]

[operation.effect]
kind = "command"
program = "/bin/true"
args = []
timeout_secs = 5

[operation.schema]
type = "object"
additionalProperties = false
"#,
        script = toml_string(&script.display().to_string()),
        key = toml_string(&key_file.display().to_string()),
    )
}

/// `text` as a TOML basic string (JSON's escapes are TOML's).
fn toml_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

/// `id`, the one proposed through the gateway (step 2b) and the premise
/// probe's proposal (step 0), and nothing else, are pending.
/// The stored enrolment code (hash and expiry) of `approver`, read as the
/// ledger's owner.
async fn enrolment_code_of(owner_url: &str, approver: &str) -> Option<(String, String)> {
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(owner_url).await.unwrap();
    sqlx::query_as("SELECT sha256, expires_at FROM enrolment_codes WHERE approver = $1")
        .bind(approver)
        .fetch_optional(&mut conn)
        .await
        .unwrap()
}

async fn still_pending(ledger: &Ledger, principal: &str, id: &str, relayed: &str) {
    let pending: Vec<String> = ledger
        .pending(principal)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.proposal.id.into())
        .collect();
    assert_eq!(pending.len(), 3, "still pending: {pending:?}");
    assert!(
        pending.iter().any(|p| p == id) && pending.iter().any(|p| p == relayed),
        "still pending: {pending:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_agents_user_reads_no_secret_cannot_decide_and_executes_once_after_the_person_approves()
{
    if skipped_without_root("hardened_install") {
        return;
    }

    let (db, signer_url, head_url) = ledger_with_roles().await;

    let users = Users::create();
    let (base, bin_dir) = Base::with_binaries("cs-hardened");
    let cli = bin_dir.join("countersign").display().to_string();
    let layout = Layout::under(&base.0);
    let signer_home = layout.signer_home.clone();
    let (signer_addr, console_addr) = (layout.signer_addr.clone(), layout.console_addr.clone());
    let console_port = layout.console_port().to_string();
    let signer_bin = bin_dir.join("countersign-signer").display().to_string();
    let signer_home_s = signer_home.display().to_string();
    let (premise_run, premise_socket) = (&layout.premise_run, &layout.premise_socket);
    let notify_state = &layout.notify_state;

    // The setup script, twice: the second run changes no key and no principal.
    let setup = || {
        // It ends with the administrator's next step.
        let shown = layout.setup(&users, &bin_dir, &signer_url, &head_url);
        let next_step = format!(
            "passkeys: required for every approval, in the console at https://console.localhost:{console_port}/\n\
             next, once the signer and the console run (deploy/systemd/README.md):\n\
             \x20 a one-time enrolment code for each passkey the console enrols (valid 30 minutes, one attempt):\n\
             \x20   runuser -u {signer} -- {bin}/countersign-signer passkeys enrolment-code --approver console --home {home}\n\
             \x20 the console's CA (public, name-constrained), for the person's browser to trust once:\n\
             \x20   runuser -u {signer} -- {bin}/countersign --home {home} console trust --pem > console-ca.pem\n\
             \x20 and, as the person, compare its fingerprint and import it (certutil: libnss3-tools):\n\
             \x20   {bin}/countersign console trust --ca console-ca.pem --import\n\
             \x20 a pairing link for the person's browser (at a terminal):\n\
             \x20   runuser -u {signer} -- {bin}/countersign --home {home} console pair\n\
             \x20 then open the link, enrol the passkey on the Passkeys page with the code,\n\
             \x20 and approve proposals there.\n",
            signer = users.signer,
            bin = bin_dir.display(),
            home = signer_home_s,
        );
        assert!(shown.ends_with(&next_step), "{shown}");
    };
    setup();
    // An operation whose premise program tries to read the signing key and
    // says as whom it runs (the second run copies it to the agent's home).
    let key_file = signer_home.join("signer/ed25519.key");
    let probe_script = base.0.join("premise-probe.py");
    std::fs::write(&probe_script, PREMISE_PROBE).unwrap();
    std::fs::set_permissions(&probe_script, std::fs::Permissions::from_mode(0o644)).unwrap();
    {
        use std::io::Write as _;
        let mut registry = std::fs::OpenOptions::new()
            .append(true)
            .open(signer_home.join("operations.toml"))
            .unwrap();
        write!(
            registry,
            "{}",
            premise_probe_operation(&probe_script, &key_file)
        )
        .unwrap();
    }
    let signing_key = std::fs::read(signer_home.join("signer/ed25519.key")).unwrap();
    setup();
    assert_eq!(
        std::fs::read(signer_home.join("signer/ed25519.key")).unwrap(),
        signing_key
    );
    let agent_home = PathBuf::from(format!("/home/{}/.config/countersign", users.agent));
    let agent_home_s = agent_home.display().to_string();
    // Both homes require a passkey for every approval; the signer runs
    // premise programs in the premise service, the heads (the agent's
    // user) as restricted children of their own.
    let signer_tail = format!(
        "\n[passkeys]\nrequired = true\n[premise]\nsocket = \"{}\"\n",
        premise_socket.display()
    );
    for (home, tail) in [
        (&signer_home, signer_tail.as_str()),
        (&agent_home, "\n[passkeys]\nrequired = true\n"),
    ] {
        let config = std::fs::read_to_string(home.join("config.toml")).unwrap();
        assert!(config.ends_with(tail), "{}: {config}", home.display());
    }

    // The agent's home holds exactly the head's bundle, and the notify
    // user's exactly the notifier's: no approver or head credential, no CA
    // key, no signing key.
    assert_eq!(
        files_of(&agent_home),
        [
            "config.toml",
            "operations.toml",
            "pki/ca.pem",
            "pki/head.key",
            "pki/head.pem",
            "principal"
        ]
    );
    let notify_home = notify_state.join("home");
    assert_eq!(
        files_of(&notify_home),
        [
            "config.toml",
            "pki/ca.pem",
            "pki/notifier.key",
            "pki/notifier.pem",
            "principal"
        ]
    );
    let notify_uid = std::fs::metadata(&notify_home).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&notify_uid),
        uid_of(&users.notify)
    );

    let mut processes = Processes::default();
    // The premise service, as the premise user (setup-system.sh created it).
    let out = Command::new("install")
        .args([
            "-d",
            "-m",
            "0755",
            "-o",
            &users.premise,
            "-g",
            &users.premise,
        ])
        .arg(premise_run)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    processes.0.push(spawn_as(
        &users.premise,
        &[
            &bin_dir.join("countersign-premise").display().to_string(),
            "serve",
            "--socket",
            &premise_socket.display().to_string(),
            "--client-user",
            &users.signer,
        ],
    ));
    let start = Instant::now();
    while !premise_socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no premise socket"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    processes.0.push(spawn_as(
        &users.signer,
        &[&signer_bin, "serve", "--home", &signer_home_s],
    ));
    wait_for_port(&signer_addr, processes.0.last_mut().unwrap());
    processes.0.push(spawn_as(
        &users.signer,
        &[&cli, "--home", &signer_home_s, "console"],
    ));
    wait_for_port(&console_addr, processes.0.last_mut().unwrap());
    let console = ConsoleAt {
        port: console_port.parse().unwrap(),
        ca_pem: std::fs::read_to_string(signer_home.join("pki/console-ca.pem")).unwrap(),
    };

    // 0. Premise programs run as the premise user, through the premise
    // service, never as the signer's user: the signing key is out of their
    // reach (EACCES), and so is the signer's home. The signer's own user
    // reads the key with the same program (the control).
    let out = as_user(
        &users.agent,
        &[
            &cli,
            "--home",
            &agent_home_s,
            "--json",
            "propose",
            "premise.probe",
            "--args-file",
            "-",
        ],
        "{}",
    );
    assert!(out.status.success(), "{out:?}");
    let proposed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let probe_id = proposed["id"].as_str().unwrap();
    let record = Ledger::open(db.url())
        .await
        .unwrap()
        .proposal(probe_id)
        .await
        .unwrap()
        .unwrap();
    let Some(countersign_verifier::Premise::Command(premise)) = &record.proposal.premise else {
        panic!("{:?}", record.proposal.premise)
    };
    assert_eq!(
        premise.output,
        format!("{}\nkey EACCES\nhome EACCES\n{{}}\n", users.premise),
        "what the premise program saw"
    );
    let out = as_user(
        &users.signer,
        &[
            "/usr/bin/python3",
            &probe_script.display().to_string(),
            &key_file.display().to_string(),
        ],
        "{}",
    );
    assert_eq!(
        text(&out.stdout),
        format!("{}\nkey read\nhome read\n{{}}\n", users.signer),
        "{out:?}"
    );
    // The console holds its port on both loopback addresses, so the agent's
    // user cannot listen on either one (not even with SO_REUSEPORT) and be
    // the console to the person's browser.
    let out = as_user(
        &users.agent,
        &[
            "/usr/bin/python3",
            "-c",
            "import errno, socket, sys\n\
             for family, host in ((socket.AF_INET6, '::1'), (socket.AF_INET, '127.0.0.1')):\n\
             \x20   for reuse in (False, True):\n\
             \x20       s = socket.socket(family, socket.SOCK_STREAM)\n\
             \x20       if reuse:\n\
             \x20           s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n\
             \x20       try:\n\
             \x20           s.bind((host, int(sys.argv[1]))); s.listen(); print(host, reuse, 'bound')\n\
             \x20       except OSError as e:\n\
             \x20           print(host, reuse, errno.errorcode[e.errno])\n",
            &console_port,
        ],
        "",
    );
    assert_eq!(
        text(&out.stdout),
        "::1 False EADDRINUSE\n::1 True EADDRINUSE\n127.0.0.1 False EADDRINUSE\n127.0.0.1 True EADDRINUSE\n",
        "{out:?}"
    );

    // The administrator prints an enrolment code for the console's
    // approver, as the signer's user.
    let out = as_user(
        &users.signer,
        &[
            &signer_bin,
            "passkeys",
            "enrolment-code",
            "--approver",
            "console",
            "--home",
            &signer_home_s,
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    // Only its SHA-256 is kept, in the ledger's `enrolment_codes`, which
    // the head role cannot read (`ledger/tests/roles.rs`).
    let stored_code = enrolment_code_of(db.url(), "console").await;
    assert!(stored_code.is_some());

    // 1. Every secret of the signer's user is out of the agent's reach.
    for secret in [
        "signer/ed25519.key",
        "pki/ca.key",
        "pki/approver.pem",
        "pki/approver.key",
        "pki/approver-console.pem",
        "pki/approver-console.key",
        "pki/console-ca.key",
        "pki/console.key",
        "config.toml",
    ] {
        let path = signer_home.join(secret);
        assert!(path.is_file(), "{} exists", path.display());
        let out = as_user(&users.agent, &["cat", &path.display().to_string()], "");
        assert!(!out.status.success());
        assert_eq!(
            text(&out.stderr),
            format!("cat: {}: Permission denied\n", path.display())
        );
    }
    let out = as_user(
        &users.agent,
        &["ls", &layout.state.display().to_string()],
        "",
    );
    assert!(text(&out.stderr).contains("Permission denied"), "{out:?}");
    // Nor can it make an enrolment code of its own (it would enrol its own
    // passkey with it): the signer's home is not even visible to it.
    let out = as_user(
        &users.agent,
        &[
            &signer_bin,
            "passkeys",
            "enrolment-code",
            "--approver",
            "console",
            "--home",
            &signer_home_s,
        ],
        "",
    );
    assert!(!out.status.success());
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        text(&out.stderr),
        format!(
            "countersign-signer: {}: Permission denied (os error 13)\n",
            signer_home.display()
        )
    );
    assert_eq!(enrolment_code_of(db.url(), "console").await, stored_code);

    // 2. The agent proposes over MCP, its head running as the agent's user
    // with its head certificate; the reply names the console at
    // https://console.localhost.
    let mut agent = McpAgent::start(&users.agent, &cli, &agent_home_s);
    let proposal = agent.ask("propose hardened 0 4 * * *");
    let id = proposal["id"].as_str().unwrap().to_string();
    let session = proposal["session"].as_str().unwrap().to_string();
    assert_eq!(proposal["status"], "pending", "{proposal}");
    assert!(session.starts_with("mcp-"), "{proposal}");
    let console_page = format!("https://console.localhost:{console_port}/proposals/{id}");
    assert!(
        proposal["text"].as_str().unwrap().contains(&console_page),
        "{proposal}"
    );

    // 2b. The MCP gateway runs as its own user and serves the agent's on a
    // Unix socket, as its unit does (a runtime directory of its own, 0755;
    // the user it serves from the environment file the setup wrote): the
    // agent's MCP client reaches it through `mcp --connect`, with no port
    // and no credential; another user's connection gets nothing.
    assert_eq!(
        std::fs::read_to_string(&layout.gateway_env).unwrap(),
        format!("COUNTERSIGN_AGENT_USER={}\n", users.agent)
    );
    let gateway_run = base.0.join("gateway-run");
    std::fs::create_dir(&gateway_run).unwrap();
    let owned = Command::new("chown")
        .arg(&users.gateway)
        .arg(&gateway_run)
        .output()
        .unwrap();
    assert!(owned.status.success(), "{owned:?}");
    let socket = gateway_run.join("mcp.sock");
    let gateway_home = layout.gateway_state.join("home").display().to_string();
    processes.0.push(spawn_as(
        &users.gateway,
        &[
            &cli,
            "--home",
            &gateway_home,
            "mcp",
            "--listen",
            &format!("unix:{}", socket.display()),
            "--client-user",
            &users.agent,
        ],
    ));
    let waited = std::time::Instant::now();
    while !socket.exists() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "no gateway socket"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut through = McpAgent::connect(&users.agent, &cli, &socket, &users.gateway);
    let relayed = through.ask("propose through-the-gateway 0 5 * * *");
    assert_eq!(relayed["status"], "pending", "{relayed}");
    let relayed_id = relayed["id"].as_str().unwrap().to_owned();
    through.quit();
    let stranger = as_user(
        &users.notify,
        &[
            &cli,
            "mcp",
            "--connect",
            &format!("unix:{}", socket.display()),
            "--server-user",
            &users.gateway,
        ],
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"x\",\"version\":\"0\"}}}\n",
    );
    assert_eq!(
        text(&stranger.stdout),
        "",
        "another user's connection gets nothing"
    );

    // 3. It cannot approve: `countersign approve` needs the approver
    // credential, which its home does not have...
    let out = as_user(
        &users.agent,
        &[&cli, "--home", &agent_home_s, "approve", &id, "--for-mcp"],
        "",
    );
    assert!(!out.status.success());
    assert_eq!(
        text(&out.stderr),
        format!(
            "countersign: TLS setup: {}/pki/approver.pem does not exist (run `countersign init`)\n",
            agent_home.display()
        )
    );
    // ... and its head certificate may call no approver RPC: not Decide,
    // and none of the passkey ceremonies.
    let creds = base.0.join("agent-credentials");
    let creds_home = Home::at(&creds).unwrap();
    std::fs::create_dir(&creds).unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::create_dir(creds.join("pki")).unwrap();
    std::fs::set_permissions(creds.join("pki"), std::fs::Permissions::from_mode(0o700)).unwrap();
    for file in ["principal", "pki/ca.pem", "pki/head.pem", "pki/head.key"] {
        write_private_new(
            &creds.join(file),
            &std::fs::read(agent_home.join(file)).unwrap(),
        )
        .unwrap();
    }
    let mut head = countersign_gate::signer_client::connect(&creds_home, &signer_addr, Role::Head)
        .await
        .unwrap();
    let denied = |rpc: &str, status: tonic::Status| {
        assert_eq!(
            status.code(),
            tonic::Code::PermissionDenied,
            "{rpc}: {status:?}"
        );
        assert_eq!(status.message(), format!("role head may not call {rpc}"));
    };
    let decide = DecideRequest {
        proposal_id: id.clone(),
        approve: true,
        ..Default::default()
    };
    denied("Decide", head.decide(decide).await.unwrap_err());
    let begin = BeginDecisionRequest {
        proposal_id: id.clone(),
        ..Default::default()
    };
    denied(
        "BeginDecision",
        head.begin_decision(begin).await.unwrap_err(),
    );
    let begin = BeginEnrolmentRequest {};
    denied(
        "BeginEnrolment",
        head.begin_enrolment(begin).await.unwrap_err(),
    );
    let enrol = EnrolRequest {
        name: "agent".into(),
        enrolment_code: "0000-0000".into(),
        ..Default::default()
    };
    denied("Enrol", head.enrol(enrol).await.unwrap_err());
    let list = ListPasskeysRequest {};
    denied("ListPasskeys", head.list_passkeys(list).await.unwrap_err());
    let begin = BeginRemovalRequest::default();
    denied("BeginRemoval", head.begin_removal(begin).await.unwrap_err());
    let remove = RemovePasskeyRequest::default();
    denied(
        "RemovePasskey",
        head.remove_passkey(remove).await.unwrap_err(),
    );
    assert_eq!(enrolment_code_of(db.url(), "console").await, stored_code);

    // It cannot pair a browser: `console pair` in its own home makes a link
    // (the agent's user has a terminal), but the console, running as the
    // signer's user, redeems only codes of the signer home's session store.
    let (code, shown) = at_terminal(
        &users.agent,
        &[&cli, "--home", &agent_home_s, "console", "pair"],
    );
    assert_eq!(code, Some(0), "{shown}");
    let pair_prefix = format!("https://console.localhost:{console_port}/pair/");
    let link = shown
        .split_whitespace()
        .find(|word| word.starts_with(&pair_prefix))
        .unwrap_or_else(|| panic!("no pairing link: {shown}"));
    let pairing_code = link.strip_prefix(&pair_prefix).unwrap();
    assert!(pairing_code.starts_with("cp1_"), "{link}");
    let (status, response) = https_form(&console, "POST", "/pair", &format!("code={pairing_code}"));
    assert_eq!(status, 403, "{response}");
    assert!(
        response.contains("This pairing link is not valid; this browser was not paired."),
        "{response}"
    );
    assert!(
        !response.to_ascii_lowercase().contains("set-cookie"),
        "{response}"
    );

    // 4. The console, unpaired, shows the pairing page and decides nothing.
    let (code, body) = https(&console, "GET", "/");
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("Pair this browser"), "{body}");
    let (code, body) = https(&console, "POST", &format!("/proposals/{id}/approve"));
    assert_eq!(code, 401, "{body}");
    // Plain http gets only the redirect to the https root.
    let mut plain = TcpStream::connect(&console_addr).unwrap();
    write!(
        plain,
        "GET /proposals/{id} HTTP/1.1\r\nHost: console.localhost:{console_port}\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    plain.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 301"), "{answer}");
    assert!(
        answer.contains(&format!(
            "\r\nLocation: https://console.localhost:{console_port}/\r\n"
        )),
        "{answer}"
    );
    assert!(!answer.contains(&id), "{answer}");

    // 5. Nothing of that decided or applied anything.
    let ledger = Ledger::open(db.url()).await.unwrap();
    let principal = std::fs::read_to_string(agent_home.join("principal")).unwrap();
    let principal = principal.trim();
    still_pending(&ledger, principal, &id, &relayed_id).await;
    // The agent's MCP head, executing before anyone approved: refused.
    let early = agent.ask(&format!("execute {id}"));
    assert_eq!(early["is_error"], true, "{early}");
    assert_eq!(early["applied"], false, "{early}");
    assert_eq!(early["reason"], "no_live_handoff", "{early}");
    // Its CLI head, by handoff in the same session: refused too.
    let exec = || {
        as_user(
            &users.agent,
            &[
                &cli,
                "--home",
                &agent_home_s,
                "--json",
                "exec",
                &id,
                "--handoff",
                "--session",
                &session,
            ],
            "",
        )
    };
    let out = exec();
    assert!(!out.status.success(), "{out:?}");
    let refused: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(refused["reason"], "no_live_handoff", "{refused}");
    assert_eq!(refused["applied"], false, "{refused}");
    // The head role cannot write an issuance into the shared ledger.
    let out = as_user(
        &users.agent,
        &[
            "psql",
            &head_url,
            "-c",
            "INSERT INTO issuances (proposal_id) VALUES ('x')",
        ],
        "",
    );
    assert!(
        text(&out.stderr).contains("permission denied for table issuances"),
        "{out:?}"
    );
    assert!(
        ledger
            .state(principal, "schedules")
            .await
            .unwrap()
            .is_empty()
    );

    // 6. A typed challenge at a terminal, even the signer's user's, is not
    // enough: `countersign approve` names the console page instead.
    let (code, shown) = at_terminal(
        &users.signer,
        &[&cli, "--home", &signer_home_s, "approve", &id, "--for-mcp"],
    );
    assert_ne!(code, Some(0), "{shown}");
    assert!(
        shown.contains(&format!(
            "{id} needs a passkey to be approved (passkey_required); \
             approve it in the console: {console_page}. Nothing was approved."
        )),
        "{shown}"
    );
    still_pending(&ledger, principal, &id, &relayed_id).await;
    // The person pairs a browser, enrols a passkey with a fresh code and
    // approves there, for the proposing session.
    person_approves(
        &users.signer,
        &signer_bin,
        &signer_home_s,
        &console_port,
        &id,
        &cli,
    );

    // 7. The agent's MCP head executes it, once.
    let done = agent.ask(&format!("execute {id}"));
    assert_eq!(done["is_error"], false, "{done}");
    assert_eq!(done["applied"], true, "{done}");
    assert_eq!(done["status"], "applied", "{done}");
    let again = agent.ask(&format!("execute {id}"));
    assert_eq!(again["is_error"], true, "a second execution: {again}");
    assert_eq!(again["applied"], false, "{again}");
    assert_eq!(again["reason"], "already_used", "{again}");
    agent.quit();
    let out = exec();
    assert!(!out.status.success(), "the CLI after the MCP head: {out:?}");
    let again: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["applied"], false, "{again}");
    assert_eq!(again["reason"], "already_used", "{again}");
    let schedules = ledger.state(principal, "schedules").await.unwrap();
    assert_eq!(schedules.len(), 1, "{schedules:?}");
    assert_eq!(schedules[0].0, "hardened");

    // The approval's passkey assertion verifies again from public data.
    let out = as_user(
        &users.signer,
        &[&cli, "--home", &signer_home_s, "audit", "--verify"],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let report = text(&out.stdout);
    let lines: Vec<&str> = report.lines().collect();
    assert_eq!(lines.len(), 3, "{report}");
    assert!(lines[0].starts_with("intact: "), "{report}");
    assert!(lines[1].starts_with("tree: "), "{report}");
    assert_eq!(lines[2], "passkey assertions: 1 verified, 0 refused");

    drop(head);
    drop(ledger);
    drop(processes);
    let (signer, agent) = (users.signer.clone(), users.agent.clone());
    drop(users);
    for name in [signer, agent] {
        let out = Command::new("id").arg(&name).output().unwrap();
        assert!(!out.status.success(), "{name} was removed");
    }
}

/// The MCP gateway's user holds the upstream servers' credentials: the
/// agent's user can read none of them, and cannot start the upstream with
/// them (its own gateway.toml naming the credential file gets nothing),
/// while the gateway's user starts it with the credential in its
/// environment. No ledger or signer is needed: the script only writes the
/// ledger URLs into the homes.
#[test]
fn the_agents_user_reads_no_upstream_credential_and_cannot_start_the_upstream_with_it() {
    if skipped_without_root("hardened_install") {
        return;
    }
    let users = Users::create();
    let (base, bin_dir) = Base::with_binaries("cs-gateway");
    let vault = base.0.join("vault_upstream.py");
    std::fs::copy(Path::new(ROOT).join("tests/e2e/vault_upstream.py"), &vault).unwrap();
    std::fs::set_permissions(&vault, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cli = bin_dir.join("countersign").display().to_string();
    let layout = Layout::under(&base.0);
    let signer_home = layout.signer_home.clone();
    let gateway_state = layout.gateway_state.clone();
    let gateway_home = gateway_state.join("home");
    let secret = gateway_state.join("secrets/vault-token");
    let setup = || {
        // No ledger is reached here: the URLs only need to be postgres://.
        let shown = layout.setup(
            &users,
            &bin_dir,
            "postgres://countersign_signer@127.0.0.1:1/none",
            "postgres://countersign_head@127.0.0.1:1/none",
        );
        assert!(
            shown.contains(&format!(
                "MCP gateway: user {}, home {}, upstream credentials in {}/secrets",
                users.gateway,
                gateway_home.display(),
                gateway_state.display()
            )),
            "{shown}"
        );
    };
    setup();
    // The operator's gateway.toml, in the signer's home (the source the
    // script copies), and the upstream's credential, in the gateway's
    // secrets directory, each as its owner writes it.
    let gateway_toml = format!(
        "[[upstream]]\nname = \"vault\"\n[upstream.stdio]\nprogram = \"/usr/bin/python3\"\nargs = [{:?}]\nsecret_env = {{ API_TOKEN = {:?} }}\n",
        vault.display().to_string(),
        secret.display().to_string()
    );
    let write_as = |user: &str, path: &Path, content: &str| {
        let out = as_user(
            user,
            &[
                "sh",
                "-c",
                "umask 077 && cat > \"$1\"",
                "sh",
                &path.display().to_string(),
            ],
            content,
        );
        assert!(out.status.success(), "{out:?}");
    };
    write_as(
        &users.signer,
        &signer_home.join("gateway.toml"),
        &gateway_toml,
    );
    write_as(&users.gateway, &secret, "s3cret-token\n");
    setup();
    assert_eq!(
        files_of(&gateway_home),
        [
            "config.toml",
            "gateway.toml",
            "operations.toml",
            "pki/ca.pem",
            "pki/head.key",
            "pki/head.pem",
            "principal"
        ]
    );

    // The agent's user reads no credential, nor the gateway's home.
    let agent_home = PathBuf::from(format!("/home/{}/.config/countersign", users.agent));
    for path in [
        &secret,
        &gateway_home.join("gateway.toml"),
        &gateway_home.join("pki/head.key"),
    ] {
        let out = as_user(&users.agent, &["cat", &path.display().to_string()], "");
        assert!(!out.status.success(), "{}: {out:?}", path.display());
        assert!(text(&out.stderr).contains("Permission denied"), "{out:?}");
    }
    // Nor can it start the upstream with the credential: its own
    // gateway.toml names the file, which it cannot open.
    write_as(
        &users.agent,
        &agent_home.join("gateway.toml"),
        &gateway_toml,
    );
    let agent_home_s = agent_home.display().to_string();
    let out = as_user(
        &users.agent,
        &[&cli, "--home", &agent_home_s, "gateway", "tools"],
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let said = text(&out.stderr);
    assert!(
        said.contains(&secret.display().to_string()) && said.contains("vault"),
        "{said}"
    );

    // The gateway's user starts it, with the credential in its environment.
    let gateway_home_s = gateway_home.display().to_string();
    let out = as_user(
        &users.gateway,
        &[
            &cli,
            "--home",
            &gateway_home_s,
            "--json",
            "gateway",
            "tools",
        ],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed[0]["upstream"], "vault", "{listed}");
    assert_eq!(listed[0]["tool"], "token_length", "{listed}");
    assert_eq!(
        listed[0]["description"], "Says the length of its token (12 characters).",
        "{listed}"
    );
}
