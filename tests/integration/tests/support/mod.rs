//! A harness that drives the CLI's own code paths (`countersign::run`, the
//! same function the binary calls) against an in-process signer over real
//! mTLS on 127.0.0.1:0, with captured output and a scripted person at the
//! terminal. The ledger and state store are read directly to prove what was
//! and was not applied.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

pub mod failover;
pub mod forge;
pub mod mcp;
pub mod passkeys;

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use clap::Parser;
use countersign::{Cli, CliError, Io, Terminal};
use countersign_identity::files::write_private_new;
use countersign_identity::pki::{CaMaterial, issue_client_cert};
use countersign_identity::{Home, Role};
use countersign_ledger::Ledger;
use countersign_ledger::testing::TempPgDatabase;
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};

/// What the person at the terminal does when asked for the challenge.
#[derive(Clone, Copy, PartialEq)]
pub enum Person {
    /// Reads the challenge and types it.
    TypesTheChallenge,
    /// Types something else.
    TypesAnotherCode,
    /// There is no controlling terminal at all.
    NoTerminal,
}

/// A terminal whose person acts as scripted; everything shown is kept.
struct ScriptedTerminal {
    person: Person,
    shown: Arc<Mutex<String>>,
}

impl Terminal for ScriptedTerminal {
    fn show(&mut self, text: &str) -> io::Result<()> {
        self.shown.lock().unwrap().push_str(text);
        Ok(())
    }

    fn ask(&mut self, prompt: &str) -> io::Result<String> {
        self.show(prompt)?;
        let code = prompt
            .split_once("Type ")
            .and_then(|(_, rest)| rest.split_once(' '))
            .map(|(code, _)| code.to_string())
            .expect("the prompt names the challenge");
        Ok(match self.person {
            Person::TypesTheChallenge => code,
            _ => "NOPE-NOPE".to_string(),
        })
    }
}

/// One finished command.
pub struct Run {
    pub result: Result<(), CliError>,
    pub stdout: String,
    pub stderr: String,
    /// What the terminal showed the person.
    pub shown: String,
}

impl Run {
    /// The stdout as JSON (for `--json` commands).
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }
}

/// The ledger backend a harness runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// A SQLite file in the home (the default).
    Sqlite,
    /// A fresh database on the PostgreSQL test server, dropped afterwards.
    Postgres,
}

/// An in-process signer plus a CLI pointed at its home.
pub struct Harness {
    pub signer: TestSigner,
    pub scratch: tempfile::TempDir,
    /// The PostgreSQL database, when on that backend (dropped last).
    pub pg: Option<TempPgDatabase>,
}

impl Harness {
    pub async fn start() -> Self {
        Self::start_on(Backend::Sqlite, Registry::default_toml()).await
    }

    pub async fn start_with_registry(toml: &str) -> Self {
        Self::start_on(Backend::Sqlite, toml).await
    }

    /// A signer with registry `toml` whose ledger is on `backend`.
    pub async fn start_on(backend: Backend, toml: &str) -> Self {
        let pg = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TempPgDatabase::create().await.unwrap()),
        };
        Self::start_with_pg(toml, pg).await
    }

    /// A signer with registry `toml` whose ledger is `pg` (SQLite if none).
    pub async fn start_with_pg(toml: &str, pg: Option<TempPgDatabase>) -> Self {
        Self::start_configured(toml, pg, "").await
    }

    /// The default registry, on `backend`, with `[rules] enabled = true`.
    pub async fn start_with_rules(backend: Backend) -> Self {
        let pg = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(TempPgDatabase::create().await.unwrap()),
        };
        Self::start_configured(Registry::default_toml(), pg, "\n[rules]\nenabled = true\n").await
    }

    /// [`Self::start_with_pg`] with `extra_config` in the signer's
    /// configuration (see `TestSigner::start_configured`).
    pub async fn start_configured(
        toml: &str,
        pg: Option<TempPgDatabase>,
        extra_config: &str,
    ) -> Self {
        let signer =
            TestSigner::start_configured(toml, pg.as_ref().map(|db| db.url()), extra_config)
                .await
                .unwrap();
        Self {
            signer,
            scratch: tempfile::tempdir().unwrap(),
            pg,
        }
    }

    pub fn home(&self) -> String {
        self.signer.home().root().display().to_string()
    }

    pub fn ledger(&self) -> &Ledger {
        self.signer.state().ledger()
    }

    /// The Web Push devices the notify process is told of now, asking as
    /// it does (`PushDevices`, notifier certificate) for an operation
    /// every approver can decide.
    pub async fn push_devices(&self) -> Vec<countersign_proto::v1::PushDevice> {
        self.signer
            .client(Role::Notifier)
            .await
            .unwrap()
            .push_devices(countersign_proto::v1::PushDevicesRequest {
                operation: "schedule.pause".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .devices
    }

    /// Run `countersign --home <home> <args>` with no stdin and no terminal.
    pub async fn cli(&self, args: &[&str]) -> Run {
        self.cli_as(&self.home(), args, "", Person::NoTerminal)
            .await
    }

    /// Run with stdin and a scripted person.
    pub async fn cli_with(&self, args: &[&str], stdin: &str, person: Person) -> Run {
        self.cli_as(&self.home(), args, stdin, person).await
    }

    /// Run against another home (another installation sharing this signer).
    pub async fn cli_as(&self, home: &str, args: &[&str], stdin: &str, person: Person) -> Run {
        cli_in(home, args, stdin, person).await
    }

    /// A second installation, with its own principal, trusted by the same
    /// CA and sharing this one's ledger (either backend), registry and
    /// audience; returns its home, for [`Self::cli_as`].
    pub fn another_principal(&self) -> String {
        let other = Home::at(self.scratch.path().join("other-home")).unwrap();
        let principal = other.init().unwrap().principal;
        let ca = CaMaterial::load(self.signer.home()).unwrap();
        let now = time::OffsetDateTime::now_utc();
        let cert = issue_client_cert(
            &ca,
            Role::Head,
            &principal,
            now - time::Duration::hours(1),
            now + time::Duration::hours(1),
        )
        .unwrap();
        write_private_new(
            &other.client_cert_path(Role::Head),
            cert.cert_pem.as_bytes(),
        )
        .unwrap();
        write_private_new(&other.client_key_path(Role::Head), cert.key_pem.as_bytes()).unwrap();
        write_private_new(&other.ca_cert_path(), ca.cert_pem().as_bytes()).unwrap();
        std::fs::remove_file(other.config_path()).unwrap();
        let ledger_url = match &self.pg {
            Some(db) => db.url().to_string(),
            None => format!("sqlite://{}", self.signer.home().ledger_path().display()),
        };
        let config = format!(
            "[signer]\naddr = \"{}\"\n[ledger]\nurl = \"{}\"\n[registry]\npath = \"{}\"\n[policy]\naudience = \"countersign:{}\"\n",
            self.signer.addr(),
            ledger_url,
            self.signer.home().registry_path().display(),
            self.signer.principal()
        );
        write_private_new(&other.config_path(), config.as_bytes()).unwrap();
        other.root().display().to_string()
    }

    /// Propose `operation` with `args`; returns the proposal id.
    /// `rules create --file FILE` at the terminal, as `person` answers.
    pub async fn create_rule_from(&self, file: &std::path::Path, person: Person) -> Run {
        let file = file.to_str().unwrap();
        let args = ["--json", "rules", "create", "--file", file];
        self.cli_with(&args, "", person).await
    }

    /// The rule `definition`, written to a file and created by the person
    /// at the terminal (typing the challenge): its id.
    pub async fn create_rule(&self, definition: &Value) -> String {
        let file = self.scratch.path().join("rule.json");
        std::fs::write(&file, definition.to_string()).unwrap();
        let run = self
            .create_rule_from(&file, Person::TypesTheChallenge)
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stdout);
        run.json()["id"].as_str().unwrap().to_owned()
    }

    pub async fn propose(&self, operation: &str, args: &str) -> String {
        self.propose_in(operation, args, "cli").await
    }

    /// Propose from a named session.
    pub async fn propose_in(&self, operation: &str, args: &str, session: &str) -> String {
        let run = self
            .cli_with(
                &[
                    "--json",
                    "propose",
                    operation,
                    "--args-file",
                    "-",
                    "--session",
                    session,
                ],
                args,
                Person::NoTerminal,
            )
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stderr);
        run.json()["id"].as_str().unwrap().to_string()
    }

    /// Propose from `session` as a head does over gRPC (a hook's or the
    /// gateway's operations are proposed no other way).
    pub async fn propose_as_head(&self, operation: &str, args: &str, session: &str) -> String {
        let mut head = self
            .signer
            .client(countersign_identity::Role::Head)
            .await
            .unwrap();
        head.propose(countersign_proto::v1::ProposeRequest {
            operation: operation.into(),
            arguments_json: args.into(),
            session: session.into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .id
    }

    /// Approve at the terminal, writing the proof to a new private file.
    pub async fn approve_to_file(&self, id: &str) -> PathBuf {
        let path = self.scratch.path().join(format!("{id}.proof"));
        let run = self
            .cli_with(
                &["approve", id, "--proof-out", path.to_str().unwrap()],
                "",
                Person::TypesTheChallenge,
            )
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stdout);
        path
    }

    /// The person approves at the terminal for one later head execution
    /// (`approve ID --for-mcp`); asserts it succeeded.
    pub async fn approve_for_mcp(&self, id: &str) -> Run {
        let run = self
            .cli_with(&["approve", id, "--for-mcp"], "", Person::TypesTheChallenge)
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stdout);
        run
    }

    /// Write `proof` to a new file and return its path.
    pub fn proof_file(&self, name: &str, proof: &str) -> PathBuf {
        let path = self.scratch.path().join(name);
        std::fs::write(&path, proof).unwrap();
        path
    }

    /// `exec ID --proof-file PATH --json [extra]`.
    pub async fn exec(&self, id: &str, proof: &std::path::Path, extra: &[&str]) -> Run {
        let mut args = vec![
            "--json",
            "exec",
            id,
            "--proof-file",
            proof.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        self.cli(&args).await
    }

    /// `--json exec ID --handoff --session SESSION`.
    pub async fn exec_handoff(&self, id: &str, session: &str) -> Run {
        self.cli(&["--json", "exec", id, "--handoff", "--session", session])
            .await
    }

    /// Change the contract of `schedule.create` in the registry file (its
    /// description), as an operator editing it under running processes.
    pub fn change_the_create_contract(&self) {
        let path = self.signer.home().registry_path();
        let changed = std::fs::read_to_string(&path).unwrap().replacen(
            "Create a schedule (initial state: created).",
            "Create a schedule, now differently.",
            1,
        );
        std::fs::write(&path, changed).unwrap();
    }

    /// The built-in operations' state store.
    pub async fn schedules(&self) -> Vec<(String, Value)> {
        self.ledger()
            .state(self.signer.principal(), "schedules")
            .await
            .unwrap()
    }

    /// True when no proposal of this principal awaits a decision.
    pub async fn nothing_pending(&self) -> bool {
        self.ledger()
            .pending(self.signer.principal())
            .await
            .unwrap()
            .is_empty()
    }

    /// Named approver certificates for `names`, in the home's `pki/`
    /// (`countersign credential create --approver NAME`).
    pub async fn approver_credentials(&self, names: &[&str]) {
        let pki = format!("{}/pki", self.home());
        for name in names {
            let run = self
                .cli(&[
                    "credential",
                    "create",
                    "--approver",
                    name,
                    "--out-dir",
                    &pki,
                ])
                .await;
            assert_eq!(run.result, Ok(()), "{}", run.stderr);
        }
    }

    /// How many effects the ledger has recorded as run.
    pub async fn effects_run(&self) -> usize {
        self.ledger()
            .events()
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == "effect_applied" || e.kind == "completed")
            .count()
    }
}

/// Everything tracing logs, as text.
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Capture {
    /// Capture every event at TRACE from now on, from every thread of this
    /// test binary. The subscriber is global: every test of a binary that
    /// asks shares one capture (installed by the first).
    pub fn trace() -> Capture {
        static GLOBAL: std::sync::OnceLock<Capture> = std::sync::OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let capture = Capture::default();
                let writer = capture.clone();
                tracing_subscriber::fmt()
                    .with_max_level(tracing::Level::TRACE)
                    .with_writer(move || writer.clone())
                    .with_ansi(false)
                    .init();
                capture
            })
            .clone()
    }

    /// The fields of every `name{...}` span in the captured lines.
    pub fn spans(&self, name: &str) -> Vec<String> {
        let open = format!("{name}{{");
        self.text()
            .lines()
            .filter_map(|line| {
                let (_, rest) = line.split_once(&open)?;
                // A span's fields end at `}:` (a route template has braces).
                Some(
                    rest.split_once("}:")
                        .map_or(rest, |(fields, _)| fields)
                        .to_owned(),
                )
            })
            .collect()
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// Assert that `run` was refused with exactly `code`, applied nothing, and
/// exited with the refusal code.
pub fn assert_refused(run: &Run, code: &str) {
    let json = run.json();
    assert_eq!(json["reason"], code, "{json}");
    assert_eq!(json["ok"], false, "{json}");
    assert_eq!(json["applied"], false, "{json}");
    assert!(
        matches!(run.result, Err(CliError::Refused(_))),
        "{:?}",
        run.result
    );
    assert_eq!(
        run.result.as_ref().unwrap_err().exit_code(),
        countersign::exit::REFUSED
    );
}

/// The default registry with `schedule.create`'s approvals valid for one
/// second (`lifetime_secs = 1`): for tests of an approval that expires.
pub fn create_approvals_live_one_second() -> String {
    let registry = countersign_registry::Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "lifetime_secs = 1\npreview = \"Create schedule",
        1,
    );
    assert_ne!(registry, countersign_registry::Registry::default_toml());
    registry
}

/// A registry entry for the `command` operation `name`: `/bin/sh -c script`
/// with the canonical arguments (`{"text": ...}`) on stdin.
pub fn command_operation(name: &str, replay_safe: bool, script: &str, timeout_secs: u64) -> String {
    format!(
        r#"
[[operation]]
name = "{name}"
description = "A note, by a test command."
class = "write"
replay_safe = {replay_safe}
preview = "Note {{text}}"

[operation.effect]
kind = "command"
program = "/bin/sh"
args = ['-c', '{script}']
timeout_secs = {timeout_secs}

[operation.schema]
type = "object"
additionalProperties = false
required = ["text"]

[operation.schema.properties.text]
type = "string"
maxLength = 100
"#
    )
}

/// Asserts a head process with its ledger database down failed closed:
/// the error exit code, the ledger named without its URL, promptly.
pub fn assert_failed_closed(code: i32, stdout: &str, stderr: &str, took: std::time::Duration) {
    assert_eq!(
        code,
        i32::from(countersign::exit::ERROR),
        "{stdout}{stderr}"
    );
    assert!(stderr.contains("cannot open the ledger"), "{stderr}");
    assert!(
        !stderr.contains("postgres://"),
        "no URL in errors: {stderr}"
    );
    assert!(
        took < std::time::Duration::from_secs(15),
        "failed closed after {took:?}"
    );
}

/// Asserts `id`'s approval is still unspent: approved, no nonce consumed.
pub async fn assert_unspent(h: &Harness, id: &str) {
    let record = h.ledger().proposal(id).await.unwrap().unwrap();
    assert_eq!(
        record.status,
        countersign_ledger::ProposalStatus::Approved,
        "{id}"
    );
    assert_eq!(h.ledger().disposition(id).await.unwrap(), None, "{id}");
}

pub const CREATE_NIGHTLY: &str =
    r#"{"name":"nightly","cron":"0 3 * * *","description":"email the KPIs"}"#;

/// Verify `proof_text` for `id` as a head of this installation would
/// (session `cli`), with the signer's public keys: what a receiver of the
/// proof checks.
pub async fn verify_as_head(
    h: &Harness,
    id: &str,
    proof_text: &str,
) -> Result<countersign_verifier::VerifiedProof, countersign_verifier::Refusal> {
    use countersign_verifier::{Expectations, Proof, verify};
    let proof = Proof::from_text(proof_text.to_string()).unwrap();
    let proposal = h.ledger().proposal(id).await.unwrap().unwrap().proposal;
    let registry = Registry::load(&h.signer.home().registry_path()).unwrap();
    let op = registry.get(&proposal.operation).unwrap();
    let keys = countersign_gate::signer_client::public_keys(
        &mut h.signer.client(Role::Head).await.unwrap(),
    )
    .await
    .unwrap();
    let policy = h.signer.state().policy();
    verify(
        &proof,
        &keys,
        &Expectations {
            audience: &policy.audience,
            principal: h.signer.principal(),
            session: "cli",
            proposal_id: id,
            operation: &proposal.operation,
            arguments_sha256: &proposal.arguments_sha256,
            contract_revision: op.contract_revision(),
            policy_revision: &policy.revision(),
            now: time::OffsetDateTime::now_utc(),
            max_lifetime: time::Duration::minutes(30),
        },
    )
}

/// Approve `id` to a proof file and record its intent in the ledger without
/// running the effect, as a head killed between the two transactions of the
/// two-phase flow would. (Heads consume builtins in one transaction and
/// never leave such an intent; this is the intent a direct `begin_consume`
/// caller, or a ledger written before that change, can leave.)
pub async fn interrupt(h: &Harness, id: &str) -> PathBuf {
    let path = h.approve_to_file(id).await;
    let verified = verify_as_head(h, id, &std::fs::read_to_string(&path).unwrap())
        .await
        .unwrap();
    assert!(matches!(
        h.ledger()
            .begin_consume(&verified, time::Duration::ZERO)
            .await
            .unwrap(),
        countersign_ledger::ConsumeStart::Fresh(_)
    ));
    path
}

/// Run `countersign --home <home> <args>` in this process (the CLI's own
/// code path), with `stdin` and a scripted `person` at the terminal.
pub async fn cli_in(home: &str, args: &[&str], stdin: &str, person: Person) -> Run {
    let mut argv = vec!["countersign", "--home", home];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(argv).expect("valid command line");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let mut input = stdin.as_bytes();
    let shown = Arc::new(Mutex::new(String::new()));
    let shown_by_terminal = Arc::clone(&shown);
    let mut terminal = move || -> io::Result<Box<dyn Terminal>> {
        if person == Person::NoTerminal {
            return Err(io::Error::from_raw_os_error(6)); // ENXIO: no controlling terminal
        }
        Ok(Box::new(ScriptedTerminal {
            person,
            shown: Arc::clone(&shown_by_terminal),
        }))
    };
    let mut io = Io {
        out: &mut out,
        err: &mut err,
        stdin: &mut input,
        terminal: &mut terminal,
    };
    let result = countersign::run(cli, &mut io).await;
    let shown = shown.lock().unwrap().clone();
    Run {
        result,
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap(),
        shown,
    }
}

/// A Claude Code `PreToolUse` input for `Bash` running `command`.
pub fn claude_code_bash(tool_use_id: &str, command: &str) -> String {
    json!({
        "session_id": "0b6c1c3e-5d0f-4a8e-9a55-1f4f3c2d7e10",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": "/work/project",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "Run it"},
        "tool_use_id": tool_use_id,
    })
    .to_string()
}
