//! A port is not an identity, against the attacker the fourth review used:
//! the agent's OS user (a `useradd` user that cannot read the installation's
//! files) holds the loopback port or the Unix socket path where a credential
//! would go, while the real server restarts. For each outbound credential
//! (the gateway's bearer over plain http and over a Unix socket, the
//! ledger's PostgreSQL password, the notifier's SMTP login) the refusal is
//! exact and the squatter logs no connection (on a Unix socket, whose
//! server's user the kernel reports only to a connection: no byte).
//! Skipped (and says so) when not root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;
mod notify_support;
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::{Duration, Instant};

use countersign_identity::files::write_private_new;
use hardened_support::{Base, Processes, Users, free_addr, skipped_without_root, spawn_as, uid_of};
use support::Harness;

/// The squatter, run as the agent: it listens on each `tcp:PORT` and
/// `unix:PATH` it is given and appends a line to its log for every
/// connection and every read, so an empty log means nothing reached it.
const SQUATTER: &str = r#"
import socket, sys, threading
log, specs = sys.argv[1], sys.argv[2:]
def note(line):
    with open(log, "a") as f:
        f.write(line + "\n")
def serve(name, listener):
    while True:
        conn, _ = listener.accept()
        note(f"{name} connected")
        conn.settimeout(2)
        try:
            data = conn.recv(65536)
        except OSError:
            data = b""
        note(f"{name} read {len(data)} bytes: {data[:200]!r}")
        conn.close()
threads = []
for spec in specs:
    kind, where = spec.split(":", 1)
    if kind == "tcp":
        listener = socket.socket()
        listener.bind(("127.0.0.1", int(where)))
    else:
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(where)
    listener.listen(16)
    threads.append(threading.Thread(target=serve, args=(spec, listener), daemon=True))
for thread in threads:
    thread.start()
open(log + ".ready", "w").close()
threading.Event().wait()
"#;

/// The squatter as `user` on `specs`, once it listens.
fn squat(user: &str, dir: &Path, specs: &[String]) -> (std::process::Child, std::path::PathBuf) {
    let log = dir.join("squatter.log");
    let mut args = vec!["/usr/bin/python3", "-c", SQUATTER, log.to_str().unwrap()];
    args.extend(specs.iter().map(String::as_str));
    let mut child = spawn_as(user, &args);
    let ready = dir.join("squatter.log.ready");
    let start = Instant::now();
    while !ready.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the squatter exited");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the squatter never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, log)
}

fn port_of(addr: &str) -> u16 {
    addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

#[tokio::test]
async fn the_agents_user_on_a_credentials_port_or_socket_receives_nothing() {
    if skipped_without_root("credential_squatters") {
        return;
    }
    let users = Users::create();
    let agent = users.agent.clone();
    let (base, _bin) = Base::with_binaries("cs-squatters");
    let lair = base.0.join("lair");
    std::fs::create_dir(&lair).unwrap();
    std::os::unix::fs::chown(&lair, Some(uid_of(&agent)), None).unwrap();
    std::fs::set_permissions(&lair, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (web, ledger, smtp) = (free_addr(), free_addr(), free_addr());
    let socket = lair.join("mcp.sock");
    let specs = [
        format!("tcp:{}", port_of(&web)),
        format!("tcp:{}", port_of(&ledger)),
        format!("tcp:{}", port_of(&smtp)),
        format!("unix:{}", socket.display()),
    ];
    let (squatter, log) = squat(&agent, &lair, &specs);
    let _processes = Processes(vec![squatter]);

    let h = Harness::start().await;
    let home = h.signer.home();
    let bearer = home.root().join("upstream-bearer");
    write_private_new(&bearer, b"tok-squatted\n").unwrap();
    let gateway = home.registry_path().with_file_name("gateway.toml");

    // The gateway's bearer over plain http: refused at load.
    std::fs::write(
        &gateway,
        format!(
            "[[upstream]]\nname = \"web\"\n[upstream.http]\nurl = \"http://{web}/mcp\"\nbearer_file = \"{}\"\n",
            bearer.display()
        ),
    )
    .unwrap();
    let tools = h.cli(&["gateway", "tools"]).await;
    let refused = tools
        .result
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let expected = format!(
        "upstream \"web\": {}",
        countersign_registry::gateway::BEARER_NEEDS_HTTPS
    );
    assert!(refused.contains(&expected), "{refused}");

    // The gateway's bearer over a Unix socket whose server must be root:
    // the agent's socket at that path gets no request.
    std::fs::write(
        &gateway,
        format!(
            "[[upstream]]\nname = \"sock\"\n[upstream.http]\nurl = \"http://127.0.0.1/mcp\"\nunix_socket = \"{}\"\npeer_user = \"root\"\nbearer_file = \"{}\"\n",
            socket.display(),
            bearer.display()
        ),
    )
    .unwrap();
    let tools = h.cli(&["gateway", "tools"]).await;
    let said = format!("{}{}", tools.stdout, tools.stderr);
    let expected = format!(
        "its server runs as uid {}, not as `peer_user` \"root\" (uid 0)",
        uid_of(&agent)
    );
    assert!(said.contains(&expected), "{said}");
    std::fs::remove_file(&gateway).unwrap();

    // The ledger's password over TCP without verify-full: refused before
    // connecting, by the signer process and by `doctor`.
    let url = format!("postgres://countersign:hunter2@{ledger}/countersign");
    let config = std::fs::read_to_string(home.config_path()).unwrap();
    std::fs::write(
        home.config_path(),
        format!("{config}[ledger]\nurl = \"{url}\"\n"),
    )
    .unwrap();
    let signer =
        std::process::Command::new(countersign_integration_tests::bin("countersign-signer"))
            .args(["serve", "--home"])
            .arg(home.root())
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&signer.stderr);
    assert!(!signer.status.success(), "{stderr}");
    let refusal = countersign_ledger::LedgerError::PasswordWithoutVerifiedTls.to_string();
    assert!(stderr.contains(&refusal), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    let doctor = h.cli(&["doctor"]).await;
    assert!(doctor.stdout.contains(&refusal), "{}", doctor.stdout);
    std::fs::write(home.config_path(), config).unwrap();

    // The notifier's SMTP login without TLS: refused at its start.
    let credentials = base.0.join("smtp-credentials");
    write_private_new(&credentials, b"alice\nsmtp-password\n").unwrap();
    let port = port_of(&smtp);
    let notify = format!(
        "\n[console]\naddr = \"127.0.0.1:7998\"\n[notify]\npoll_ms = 20\n[notify.smtp]\nhost = \"127.0.0.1\"\nport = {port}\ntls = \"none\"\nfrom = \"countersign@localhost\"\nto = [\"alice@localhost\"]\ncredentials_file = \"{}\"\n",
        credentials.display()
    );
    let refused = notify_support::start_refusal(&notify).await;
    assert!(
        refused.starts_with("notify.smtp.credentials_file is sent only over verified TLS"),
        "{refused}"
    );

    // Give a late connection time to show, then: nothing reached the agent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The TCP ports were never connected to; the socket was (the kernel
    // reports its server's user only to a connection) and got no byte.
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    let unix = &specs[3];
    for line in seen.lines() {
        assert!(
            line == format!("{unix} connected") || line == format!("{unix} read 0 bytes: b''"),
            "the agent's squatter received: {seen}"
        );
    }
    assert!(seen.contains(&format!("{unix} connected")), "{seen}");
}

/// A head of two signers, A and B, when the agent's user takes A's port
/// after A stopped: the failover connector tries the port, the squatter
/// gets a TLS ClientHello (which carries no credential) and nothing
/// more, and the head's calls, from a new connection and from one whose
/// connection to A broke, are answered by B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_on_a_stopped_signers_port_gets_a_client_hello_and_nothing_more() {
    use countersign_gate::signer_client::connect_any;
    use countersign_identity::{ClientCredential, Role};
    use countersign_proto::v1::{ListProposalsRequest, ProposeRequest};
    if skipped_without_root("credential_squatters") {
        return;
    }
    let users = Users::create();
    let agent = users.agent.clone();
    let (base, _bin) = Base::with_binaries("cs-squat-signer");
    let lair = base.0.join("lair");
    std::fs::create_dir(&lair).unwrap();
    std::os::unix::fs::chown(&lair, Some(uid_of(&agent)), None).unwrap();

    let mut h = Harness::start_on(
        support::Backend::Postgres,
        countersign_registry::Registry::default_toml(),
    )
    .await;
    let b = h.signer.another_on_this_home().await.unwrap();
    let home = h.signer.home().clone();
    let a_addr = h.signer.addr().to_string();
    let addrs = [a_addr.clone(), b.addr().to_string()];
    let head = ClientCredential::Role(Role::Head);
    let request = || ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: r#"{"name":"nightly","cron":"0 3 * * *"}"#.into(),
        session: "agent-session-1".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    };
    let mut kept = connect_any(&home, &addrs, &head).await.unwrap();
    kept.propose(request()).await.unwrap();

    h.signer.halt().await.unwrap();
    let (squatter, log) = squat(&agent, &lair, &[format!("tcp:{}", port_of(&a_addr))]);
    let _processes = Processes(vec![squatter]);

    // A new connection, and the kept one whose connection to A broke.
    let mut fresh = connect_any(&home, &addrs, &head).await.unwrap();
    fresh.propose(request()).await.unwrap();
    let listed = kept
        .list_proposals(ListProposalsRequest::default())
        .await
        .expect("answered by B")
        .into_inner();
    assert_eq!(listed.proposals.len(), 2);

    tokio::time::sleep(Duration::from_millis(300)).await;
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    let spec = format!("tcp:{}", port_of(&a_addr));
    assert!(seen.contains(&format!("{spec} connected")), "{seen}");
    for line in seen.lines() {
        if line == format!("{spec} connected") {
            continue;
        }
        // A TLS handshake record (0x16, version 3.x): the ClientHello.
        // Python quotes the bytes with `"` when they hold a `'`, which
        // the ClientHello's random part does now and then.
        let hello = line.contains(": b'\\x16\\x03") || line.contains(": b\"\\x16\\x03");
        assert!(
            line.starts_with(&format!("{spec} read ")) && hello,
            "the agent's squatter received: {seen}"
        );
    }
}
