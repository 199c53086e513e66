//! Several hosts on one machine: the signer, PostgreSQL and three heads
//! each in a network namespace of their own (`countersign_netns`), the
//! heads reaching the database through a proxy that adds 1 ms of round
//! trip, the signer reaching it directly. Every process is the real
//! binary, started with `ip netns exec`; each head has a head-only home of
//! its own (principal, CA, head credential, registry copy, `config.toml`
//! naming the signer's and the proxy's addresses), as
//! `deploy/setup-system.sh` gives an agent's user.
//!
//! The heads name the signer by its address on the bridge; the TLS check
//! is unchanged: a head verifies the signer's certificate for the name
//! `localhost` (`countersign_identity::tls::SIGNER_DOMAIN`) whatever
//! address it dials, and the dev PKI issues the signer's certificate for
//! that name.
//!
//! Across the namespaces, with the delay:
//! 1. race: one approved proof executed by the three heads at once applies
//!    exactly once; the other two are refused with the recorded state;
//! 2. crash: a head SIGKILLed while its `command` effect runs leaves the
//!    action uncertain; another head's `countersign reconcile` runs nothing
//!    again (the operation is not replay-safe) and a person's resolution
//!    closes it;
//! 3. outage: PostgreSQL stopped, a head fails closed, runs nothing and
//!    spends nothing; restarted, the same proof applies once on another head;
//! 4. a signer lost: a second signer, B, runs on a host of its own with a
//!    proof key of its own (`[signer] fallback_addrs` names it everywhere).
//!    With A killed, the heads and the person's terminal go on through B,
//!    whose proof a head verifies and applies once, and an approval the
//!    person handed off through A before it died is signed again by B
//!    under its own key and applied once; with A's host cut off
//!    (its link down: nothing answers, connects time out), the same, each
//!    connection passing A over after its 2 s bound.
//!
//! Needs root and `ip`; prints `SKIPPED` otherwise. One test, so the
//! topology (about a second to build, with PostgreSQL's initdb) is built
//! once; it and everything in it are removed on drop, also on a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use countersign::exit;
use countersign_identity::files::write_private_new;
use countersign_identity::pki::create_dev_pki;
use countersign_identity::{Home, Role};
use countersign_ledger::Ledger;
use countersign_ledger::testing::{PgPlacement, TempPgDatabase, ThrowawayPgServer};
use countersign_netns::{DelayProxy, Topology};
use countersign_registry::Registry;
use serde_json::Value;
use support::{Person, assert_failed_closed, cli_in, command_operation};

const HEADS: [&str; 3] = ["head1", "head2", "head3"];
const ROUND_TRIP: Duration = Duration::from_millis(1);
const SIGNER_PORT: u16 = 7443;

/// The registry: the default one plus `note.once` (appends its idempotency
/// key to `effects.log`) and `note.slow` (the same, then sleeps 20 s).
fn registry(log: &Path) -> String {
    let append = format!("echo \"$COUNTERSIGN_IDEMPOTENCY_KEY\" >> {}", log.display());
    format!(
        "{}{}{}",
        Registry::default_toml(),
        command_operation("note.once", false, &append, 10),
        command_operation("note.slow", false, &format!("{append}; sleep 20"), 30)
    )
}

/// Everything the test runs on; field order is drop order: processes and
/// the database first, the namespaces last.
struct Hosts {
    signer: tokio::process::Child,
    _signer_b: tokio::process::Child,
    /// The key id signer B made for itself at its start.
    signer_b_kid: String,
    ledger: Ledger,
    _proxy: DelayProxy,
    _db: TempPgDatabase,
    pg: ThrowawayPgServer,
    signer_home: String,
    head_homes: Vec<String>,
    log: PathBuf,
    scratch: tempfile::TempDir,
    topology: Topology,
}

impl Hosts {
    async fn start() -> Hosts {
        let topology =
            Topology::create(&["signer", "signer-b", "db", "head1", "head2", "head3"]).unwrap();
        let db_host = topology.host("db");
        let pg = ThrowawayPgServer::start_in(PgPlacement {
            netns: Some(db_host.netns().to_string()),
            addr: db_host.addr().into(),
            clients: Some(topology.cidr()),
            fsync: false,
        })
        .unwrap();
        let db = TempPgDatabase::create_on(&pg.admin_url()).await.unwrap();
        let proxy = DelayProxy::start(
            SocketAddr::new(topology.gateway().into(), 0),
            SocketAddr::new(db_host.addr().into(), pg.port()),
            ROUND_TRIP,
        )
        .unwrap();
        let behind_proxy = db.url().replace(
            &format!("{}:{}", db_host.addr(), pg.port()),
            &proxy.addr().to_string(),
        );
        assert_ne!(behind_proxy, db.url(), "the heads' URL names the proxy");
        round_trips_take_the_delay(&behind_proxy).await;

        let scratch = tempfile::tempdir().unwrap();
        let log = scratch.path().join("effects.log");
        let signer_addr = SocketAddr::new(topology.host("signer").addr().into(), SIGNER_PORT);
        let signer_b_addr = SocketAddr::new(topology.host("signer-b").addr().into(), SIGNER_PORT);
        let home = Home::at(scratch.path().join("signer-home")).unwrap();
        let principal = home.init().unwrap().principal;
        create_dev_pki(&home, &principal).unwrap();
        write_private_new(&home.registry_path(), registry(&log).as_bytes()).unwrap();
        let signers = |addr: SocketAddr, other: SocketAddr| {
            format!(
                "[signer]\naddr = \"{addr}\"\nfallback_addrs = [\"{other}\"]\n[ledger]\nurl = \"{}\"\n",
                db.url()
            )
        };
        std::fs::write(home.config_path(), signers(signer_addr, signer_b_addr)).unwrap();
        let head_homes = HEADS
            .iter()
            .map(|name| {
                head_home(
                    &home,
                    &scratch.path().join(name),
                    [signer_addr, signer_b_addr],
                    &behind_proxy,
                )
            })
            .collect();
        let (signer, _) = start_signer(&topology, "signer", &home).await;
        // B: the same CA, certificates and log key, a proof key of its own.
        let home_b = Home::at(scratch.path().join("signer-b-home")).unwrap();
        countersign_signer::testing::copy_without_proof_key(&home, &home_b).unwrap();
        std::fs::write(home_b.config_path(), signers(signer_b_addr, signer_addr)).unwrap();
        let (signer_b, signer_b_kid) = start_signer(&topology, "signer-b", &home_b).await;
        let ledger = Ledger::open(db.url()).await.unwrap();
        Hosts {
            signer,
            _signer_b: signer_b,
            signer_b_kid,
            ledger,
            _proxy: proxy,
            _db: db,
            pg,
            signer_home: home.root().display().to_string(),
            head_homes,
            log,
            scratch,
            topology,
        }
    }

    /// Lines the command effects have appended.
    fn effects(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// `countersign --home <head's home> --json <args>` as a process inside
    /// head `i`'s namespace, stdin `stdin`.
    fn head(&self, i: usize, args: &[&str]) -> tokio::process::Command {
        let mut command = self
            .topology
            .host(HEADS[i])
            .command(countersign_integration_tests::bin("countersign"));
        command
            .args(["--home", &self.head_homes[i], "--json"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut command = tokio::process::Command::from(command);
        command.kill_on_drop(true);
        command
    }

    /// Run a head command to the end: (exit code, stdout JSON or Null, stderr).
    async fn run(&self, i: usize, args: &[&str]) -> (i32, Value, String) {
        let out = self.head(i, args).output().await.unwrap();
        (
            out.status.code().unwrap_or(-1),
            serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Propose `note.<op>` from head 0; the proposal id.
    async fn propose(&self, op: &str, text: &str) -> String {
        let args = format!(r#"{{"text":"{text}"}}"#);
        let mut child = self
            .head(0, &["propose", op, "--args-file", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use tokio::io::AsyncWriteExt as _;
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(args.as_bytes()).await.unwrap();
        }
        let out = child.wait_with_output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        json["id"].as_str().unwrap().to_string()
    }

    /// The person approves `id` at the signer's terminal, to a proof file.
    async fn approve(&self, id: &str) -> PathBuf {
        let path = self.scratch.path().join(format!("{id}.proof"));
        let args = ["approve", id, "--proof-out", path.to_str().unwrap()];
        let run = cli_in(&self.signer_home, &args, "", Person::TypesTheChallenge).await;
        assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
        path
    }

    /// Propose `op` from head 0 and approve it; the proposal id and the
    /// arguments of `exec` with its proof file.
    async fn approved(&self, op: &str, text: &str) -> (String, [String; 4]) {
        let id = self.propose(op, text).await;
        let proof = self.approve(&id).await;
        let exec = ["exec", &id, "--proof-file", proof.to_str().unwrap()];
        (id.clone(), exec.map(str::to_string))
    }
}

/// A head-only home at `dir` for the signer home's principal: its CA, the
/// head credential, a copy of the registry, and a `config.toml` naming the
/// signers' addresses (A, then B) and the ledger's URL as this head reaches
/// them.
fn head_home(signer: &Home, dir: &Path, [a, b]: [SocketAddr; 2], ledger_url: &str) -> String {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().mode(0o700).create(dir).unwrap();
    let home = Home::at(dir).unwrap();
    let copy = |from: PathBuf, to: PathBuf| {
        write_private_new(&to, &std::fs::read(from).unwrap()).unwrap();
    };
    copy(signer.principal_path(), home.principal_path());
    write_private_new(
        &home.config_path(),
        format!(
            "[signer]\naddr = \"{a}\"\nfallback_addrs = [\"{b}\"]\n[ledger]\nurl = \"{ledger_url}\"\n"
        )
        .as_bytes(),
    )
    .unwrap();
    home.init().unwrap();
    copy(signer.ca_cert_path(), home.ca_cert_path());
    copy(
        signer.client_cert_path(Role::Head),
        home.client_cert_path(Role::Head),
    );
    copy(
        signer.client_key_path(Role::Head),
        home.client_key_path(Role::Head),
    );
    copy(signer.registry_path(), home.registry_path());
    home.root().display().to_string()
}

/// Ten `SELECT 1` through the proxy take at least ten added round trips.
async fn round_trips_take_the_delay(url: &str) {
    use sqlx::Connection as _;
    let mut c = sqlx::PgConnection::connect(url).await.unwrap();
    let started = Instant::now();
    for _ in 0..10 {
        sqlx::query("SELECT 1").execute(&mut c).await.unwrap();
    }
    let took = started.elapsed();
    assert!(took >= ROUND_TRIP * 10, "{took:?}");
    c.close().await.unwrap();
}

/// `countersign-signer serve` of `home` inside the namespace of `host`,
/// once it says it listens; and the key id it says it signs with.
async fn start_signer(
    topology: &Topology,
    host: &str,
    home: &Home,
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut command = topology
        .host(host)
        .command(countersign_integration_tests::bin("countersign-signer"));
    command
        .args(["serve", "--home"])
        .arg(home.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut command = tokio::process::Command::from(command);
    let mut child = command.kill_on_drop(true).spawn().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, kid)) = line.split_once("countersign-signer listening on ") {
                return kid.split_once(" key ").unwrap().1.to_owned();
            }
            eprintln!("{host}: {line}");
        }
        panic!("{host}: the signer exited before listening");
    });
    let kid = ready.await.expect("the signer listens within 20 s");
    // Keep draining its log so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, kid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn races_crashes_outages_and_a_lost_signer_keep_their_guarantees_across_namespaces() {
    if let Some(why) = countersign_netns::unavailable() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let started = Instant::now();
    let mut hosts = Hosts::start().await;
    eprintln!("topology up in {:?}", started.elapsed());
    race(&hosts).await;
    crash(&hosts).await;
    outage(&hosts).await;
    signer_lost(&mut hosts).await;
    assert!(hosts.ledger.verify_chain().await.unwrap().is_intact());
    eprintln!("all four in {:?}", started.elapsed());
}

/// Three heads, one proof, at once: applied once, the others refused.
async fn race(h: &Hosts) {
    for round in 0..3 {
        let (_, exec) = h.approved("note.once", &format!("race{round}")).await;
        let args = exec.each_ref().map(String::as_str);
        let children: Vec<_> = (0..3).map(|i| h.head(i, &args).spawn().unwrap()).collect();
        let mut applied = 0;
        for child in children {
            let out = child.wait_with_output().await.unwrap();
            let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
            match out.status.code() {
                Some(0) => {
                    assert_eq!(json["applied"], true, "{json}");
                    applied += 1;
                }
                code => {
                    assert_eq!(code, Some(i32::from(exit::REFUSED)), "{json}");
                    let refusal = json["reason"].as_str().unwrap_or_default();
                    assert!(
                        ["already_used", "in_progress"].contains(&refusal),
                        "{json} {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            }
        }
        assert_eq!(applied, 1, "exactly one head applied round {round}");
    }
    assert_eq!(h.effects().len(), 3, "one effect per round");
}

/// A head killed while its effect runs; another head reconciles.
async fn crash(h: &Hosts) {
    let before = h.effects().len();
    let (id, exec) = h.approved("note.slow", "crash").await;
    let args = exec.each_ref().map(String::as_str);
    let mut child = h.head(1, &args).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while h.effects().len() == before {
        assert!(Instant::now() < deadline, "the effect never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // `ip netns exec` execs the head: this is the head process itself.
    child.start_kill().unwrap();
    let status = child.wait().await.unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );

    let (_, show, _) = h.run(2, &["show", &id]).await;
    assert_eq!(show["status"], "uncertain", "{show}");
    // The proof again, on the third head: the recorded state, nothing run.
    let (code, again, _) = h.run(2, &args).await;
    assert_eq!(code, i32::from(exit::REFUSED), "{again}");
    assert_eq!(again["reason"], "already_used", "{again}");
    assert_eq!(again["recorded_status"], "uncertain", "{again}");
    let (code, report, stderr) = h.run(2, &["reconcile"]).await;
    assert_eq!(code, i32::from(exit::NOT_APPLIED), "{report}{stderr}");
    let entries = report["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{report}");
    assert_eq!(entries[0]["proposal_id"], id.as_str());
    assert_eq!(entries[0]["action"], "still_uncertain");
    assert_eq!(h.effects().len(), before + 1, "reconcile ran nothing again");

    // The person says it applied (the log shows it did).
    let resolve = ["--json", "reconcile", "--resolve", &id, "--applied"];
    let run = cli_in(&h.signer_home, &resolve, "", Person::TypesTheChallenge).await;
    assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
    let (_, result, _) = h.run(0, &["result", &id]).await;
    assert_eq!(result["status"], "applied", "{result}");
    assert_eq!(h.effects().len(), before + 1);
}

/// PostgreSQL stopped under the heads, then started again.
async fn outage(h: &Hosts) {
    let before = h.effects().len();
    let (id, exec) = h.approved("note.once", "outage").await;
    let args = exec.each_ref().map(String::as_str);

    h.pg.stop().unwrap();
    let started = Instant::now();
    let (code, out, stderr) = h.run(0, &args).await;
    assert_failed_closed(code, &out.to_string(), &stderr, started.elapsed());
    assert_eq!(h.effects().len(), before, "nothing ran");
    eprintln!("postgres down: the head failed closed: {}", stderr.trim());

    h.pg.start_again().unwrap();
    assert_eq!(h.ledger.disposition(&id).await.unwrap(), None, "not spent");
    let (code, out, stderr) = h.run(1, &args).await;
    assert_eq!(code, 0, "{out}{stderr}");
    assert_eq!(out["applied"], true, "{out}");
    let (code, again, _) = h.run(2, &args).await;
    assert_eq!(code, i32::from(exit::REFUSED), "{again}");
    assert_eq!(again["reason"], "already_used", "{again}");
    assert_eq!(h.effects().len(), before + 1, "applied once");
}

/// The key id in the footer of the PASETO proof in the file at `path`.
fn kid_of(path: &Path) -> String {
    use base64::Engine as _;
    let proof = std::fs::read_to_string(path).unwrap();
    let footer = proof.trim().rsplit('.').next().unwrap();
    let footer = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(footer)
        .unwrap();
    let footer: Value = serde_json::from_slice(&footer).unwrap();
    footer["kid"].as_str().unwrap().to_owned()
}

/// `exec` run by head 1 applies the action (one more effect line than
/// `before`), and run again by head 2 is refused `already_used`.
async fn applied_once_by_head_1(h: &Hosts, exec: &[&str], before: usize) {
    let (code, out, stderr) = h.run(1, exec).await;
    assert_eq!(code, 0, "{out}{stderr}");
    assert_eq!(out["applied"], true, "{out}");
    let (code, again, _) = h.run(2, exec).await;
    assert_eq!(code, i32::from(exit::REFUSED), "{again}");
    assert_eq!(again["reason"], "already_used", "{again}");
    assert_eq!(h.effects().len(), before + 1, "applied once");
}

/// One action through signer B with signer A lost: proposed by head 0,
/// approved at the person's terminal, applied once by head 1 (and refused
/// on head 2); the proof signed with B's own key. How long it took.
async fn through_b(h: &Hosts, text: &str) -> Duration {
    let before = h.effects().len();
    let started = Instant::now();
    let id = h.propose("note.once", text).await;
    let proposed = started.elapsed();
    let proof = h.approve(&id).await;
    assert_eq!(kid_of(&proof), h.signer_b_kid, "B signed it");
    let exec = ["exec", &id, "--proof-file", proof.to_str().unwrap()];
    applied_once_by_head_1(h, &exec, before).await;
    proposed
}

/// An approval the person handed off through A before A was lost: head 1
/// executes it through B, which signs the recorded claims again under its
/// own key; once (head 2 is refused), and recorded as signed again.
async fn handed_off_before_the_loss(h: &Hosts, id: &str) {
    let before = h.effects().len();
    let exec = ["exec", id, "--handoff"];
    applied_once_by_head_1(h, &exec, before).await;
    let events = h.ledger.events().await.unwrap();
    let resigned: Vec<&str> = events
        .iter()
        .filter(|e| e.kind == "proof_resigned" && e.proposal_id.as_deref() == Some(id))
        .filter_map(|e| e.details["key_id"].as_str())
        .collect();
    assert_eq!(resigned, [h.signer_b_kid.as_str()], "signed again by B");
}

/// Signer A killed, then A's host cut off: everything goes on through B.
async fn signer_lost(h: &mut Hosts) {
    // Handed off through A, which holds the proof when it is killed.
    let held = h.propose("note.once", "held-by-a").await;
    let args = ["approve", held.as_str(), "--hand-off"];
    let run = cli_in(&h.signer_home, &args, "", Person::TypesTheChallenge).await;
    assert_eq!(run.result, Ok(()), "{}{}", run.stdout, run.stderr);
    h.signer.start_kill().unwrap();
    h.signer.wait().await.unwrap();
    handed_off_before_the_loss(h, &held).await;
    let took = through_b(h, "signer-killed").await;
    eprintln!("signer A killed: a proposal through B took {took:.1?}");

    // A again, then its host cut off: a connect to it gets no answer.
    let home = Home::at(h.scratch.path().join("signer-home")).unwrap();
    let (signer, _) = start_signer(&h.topology, "signer", &home).await;
    h.signer = signer;
    h.topology.host("signer").set_link(false).unwrap();
    let took = through_b(h, "signer-host-down").await;
    let bound = countersign_identity::failover::CONNECT_EACH_WITHIN;
    assert!(took >= bound, "the proposal passed A over: {took:?}");
    eprintln!("signer A's host cut off: a proposal through B took {took:.1?}");
    h.topology.host("signer").set_link(true).unwrap();
}
