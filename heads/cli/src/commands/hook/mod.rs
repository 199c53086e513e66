//! `countersign hook <agent>`: a coding agent's pre-tool-call hook, as a
//! head, and `countersign init <agent>`, which installs it. The agent
//! writes one tool call as JSON on stdin; the service's one hook flow
//! ([`countersign_service::hook`]) proposes it, waits for the decision and
//! consumes an approval; the answer is written in the agent's own shape
//! ([`countersign_hook::render`]) with its exit code. What fails before
//! the signer answers (a home that does not load) is a deny too.
//!
//! Must not: print anything but the agent's answer on stdout, run the
//! call (the agent's runtime does), or show a proof.

mod settings;

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use countersign_gate::signer_client::{self, ConnectError};
use countersign_hook::{Agent, Answer, ToolCall, render};
use countersign_ledger::Ledger;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_service::hook::{DEFAULT_WAIT, answer, unavailable};
use countersign_verifier::KeyRing;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

use crate::Io;
use crate::args::HookArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// How long the key set fetched as the hook starts is used as it is.
const KEYS_FRESH_FOR: Duration = Duration::from_secs(10);

/// `countersign hook AGENT`: read the call, answer it, and end with the
/// exit code the agent reads ([`CliError::Answered`] for any but 0).
pub(crate) async fn hook(
    home: Option<PathBuf>,
    args: HookArgs,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let agent = args.agent;
    let mut bytes = Vec::new();
    let limit = u64::try_from(countersign_hook::MAX_INPUT_BYTES).unwrap_or(u64::MAX);
    let read = io.stdin.take(limit + 1).read_to_end(&mut bytes);
    let rendered = match read {
        Err(e) => render(
            agent,
            None,
            &Answer::deny(format!("countersign could not read the hook input: {e}")),
        ),
        Ok(_) => match countersign_hook::parse(agent, &bytes) {
            Err(e) => countersign_hook::refusal(agent, &e),
            Ok(call) => {
                let wait = args.wait_secs.map_or(DEFAULT_WAIT, Duration::from_secs);
                let answer = answered(home, &call, wait).await;
                tracing::info!(
                    agent = agent.name(),
                    tool = call.tool_name(),
                    decision = ?answer.decision,
                    "hook answered"
                );
                render(agent, Some(call.event()), &answer)
            }
        },
    };
    let write = |out: &mut dyn std::io::Write, text: &str| {
        out.write_all(text.as_bytes()).and_then(|()| out.flush())
    };
    write(io.out, &rendered.stdout).map_err(CliError::error)?;
    write(io.err, &rendered.stderr).map_err(CliError::error)?;
    match rendered.exit_code {
        0 => Ok(()),
        code => Err(CliError::Answered(u8::try_from(code).unwrap_or(2))),
    }
}

/// `countersign init AGENT [--project DIR | --user]`: the hook in the
/// agent's settings, for the installation at `home`: the project at
/// `project` (the current directory if none), or the user's own with
/// `user`.
pub(crate) fn init(
    home: Option<PathBuf>,
    agent: Agent,
    project: Option<PathBuf>,
    user: bool,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let home = Context::home(home)?;
    if !home.config_path().exists() {
        return Err(CliError::Error(format!(
            "{} is not initialized: run `countersign init` first",
            home.root().display()
        )));
    }
    let scope = match (user, project) {
        (true, _) => settings::Scope::User {
            home: user_home()?,
            codex_home: std::env::var_os("CODEX_HOME").map(PathBuf::from),
        },
        (false, Some(dir)) => settings::Scope::Project(dir),
        (false, None) => {
            settings::Scope::Project(std::env::current_dir().map_err(CliError::error)?)
        }
    };
    let program = std::env::current_exe().map_err(CliError::error)?;
    let command = settings::hook_command(&program, home.root(), agent);
    let file = settings::settings_file(agent, &scope);
    let change = settings::install(agent, &file, &command).map_err(CliError::Error)?;
    if json {
        return write_json(
            io.out,
            &serde_json::json!({
                "agent": agent.name(),
                "file": change.file.display().to_string(),
                "command": command,
                "added": change.added,
                "backup": change.backup.as_ref().map(|b| b.display().to_string()),
            }),
        );
    }
    let text = match change.added.as_slice() {
        [] => format!(
            "{} already runs `{command}`; nothing changed\n",
            change.file.display()
        ),
        added => {
            let mut text = format!(
                "{}: added the {} hook `{command}`\n",
                change.file.display(),
                added.join(" and ")
            );
            if let Some(backup) = &change.backup {
                text.push_str(&format!("the file as it was: {}\n", backup.display()));
            }
            text.push_str(next_step(agent, &scope));
            text.push('\n');
            text
        }
    };
    write_text(io.out, &text)
}

/// What the agent needs before it runs the hook, and for a project file
/// that others share, that it names this user's paths.
fn next_step(agent: Agent, scope: &settings::Scope) -> &'static str {
    let shared = matches!(scope, settings::Scope::Project(_));
    match agent {
        Agent::ClaudeCode => {
            "Claude Code runs a project's hooks once you accept its workspace trust dialog for the folder (and none with `disableAllHooks`)"
        }
        Agent::Codex if shared => {
            "Codex runs this hook only once you trust it with `/hooks` in a project you trusted, and skips it in silence until then; the file names this user's paths, so keep it out of version control"
        }
        Agent::Codex => {
            "Codex runs this hook only once you trust it with `/hooks`, and skips it in silence until then"
        }
        Agent::Gemini if shared => {
            "Gemini CLI runs hooks only in a folder it trusts (`security.folderTrust`); the file names this user's paths, so keep it out of version control"
        }
        Agent::Gemini => {
            "Gemini CLI runs hooks only in a folder it trusts (`security.folderTrust`)"
        }
        Agent::Cursor if shared => {
            "Cursor reads the hooks at its next start; the file names this user's paths, so keep it out of version control"
        }
        Agent::Cursor => "Cursor reads the hooks at its next start",
    }
}

/// The user's home directory (`$HOME`), whose agent settings `--user`
/// writes.
fn user_home() -> Result<PathBuf, CliError> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .ok_or_else(|| CliError::Error("HOME is not set to an absolute path".into()))
}

/// The answer to `call` from the installation at `home`.
async fn answered(home: Option<PathBuf>, call: &ToolCall, wait: Duration) -> Answer {
    let ctx = match Context::home(home).and_then(Context::load) {
        Ok(ctx) => ctx,
        Err(e) => return unavailable(&e.to_string()),
    };
    let mut head = match ctx.head().await {
        Ok(head) => head,
        Err(e) => return unavailable(&e.to_string()),
    };
    // What consuming an approval needs besides the signer (the ledger, the
    // registry, the key set) starts once the proposal is on its way, so it
    // overlaps the signer's work and the wait: a call a rule covers is
    // approved by the time `Propose` answers.
    let started: Mutex<Option<Preparing>> = Mutex::new(None);
    let keys_head = head.clone();
    let prepare = || Preparing::start(&ctx, &keys_head);
    let proposing = || *lock(&started) = Some(prepare());
    let mut gate_head = head.clone();
    let gate = async || {
        let preparing = lock(&started).take().unwrap_or_else(prepare);
        let (keys, opened) = tokio::join!(preparing.fetching, preparing.opening);
        let ledger = opened
            .map_err(|e| format!("cannot open the ledger: {e}"))?
            .map_err(|e| e.to_string())?;
        // Fetched again after a long wait, so the gate starts from the
        // signer's keys as they are then.
        let keys = match keys {
            Ok(Ok(keys)) if preparing.fetched_at.elapsed() < KEYS_FRESH_FOR => keys,
            _ => signer_client::public_keys(&mut gate_head)
                .await
                .map_err(|e| e.to_string())?,
        };
        ctx.gate_from(&gate_head, keys, ledger)
            .map(countersign_gate::Gate::answering_hooks)
            .map_err(|e| e.to_string())
    };
    answer(&mut head, gate, call, wait, proposing).await
}

/// The ledger opening and the key set being fetched for an execution.
struct Preparing {
    opening: JoinHandle<Result<Ledger, CliError>>,
    fetching: JoinHandle<Result<KeyRing, ConnectError>>,
    fetched_at: Instant,
}

impl Preparing {
    fn start(ctx: &Context, head: &SignerClient<Channel>) -> Self {
        let mut head = head.clone();
        Self {
            opening: ctx.open_for_execution(),
            fetching: tokio::spawn(async move { signer_client::public_keys(&mut head).await }),
            fetched_at: Instant::now(),
        }
    }
}

fn lock(started: &Mutex<Option<Preparing>>) -> std::sync::MutexGuard<'_, Option<Preparing>> {
    started
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
