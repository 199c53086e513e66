//! `countersign hook <agent>`: a coding agent's pre-tool-call hook, as a
//! head. The agent writes one tool call as JSON on stdin; the call is
//! proposed as its agent operation (`agent.shell`, ...), in a session that
//! names the agent and its session, keyed by the agent's tool call id; the
//! hook waits for a person's decision (or a rule's) up to its wait, and
//! answers in the agent's own shape ([`countersign_hook::render`]).
//!
//! Approved, the hook consumes the proof through a gate that answers
//! hooks: "allow" is recorded as the completion before the agent hears it,
//! so one approval answers one call once, and the same call asked again
//! gets the recorded answer. Anything else (malformed input, an
//! installation that does not load, an unreachable signer, a refusal, a
//! denial, a wait that ran out) is a deny with its reason: never an allow
//! on error.
//!
//! Must not: print anything but the agent's answer on stdout, run the
//! call (the agent's runtime does), or show a proof.

mod settings;
mod wait;

use std::io::Read as _;
use std::time::{Duration, Instant};

use countersign_gate::Outcome;
use countersign_hook::{Agent, Answer, ToolCall, render};
use std::path::PathBuf;

use countersign_ledger::DispositionStatus;
use countersign_proto::v1::{ProposalStatus, ProposalView, ProposeRequest, WithdrawRequest};
use countersign_verifier::{ProposalId, Session};

use crate::Io;
use crate::args::{HookArgs, InitArgs};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

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
                let wait = args
                    .wait_secs
                    .map_or_else(|| default_wait(agent), Duration::from_secs);
                let answer = answer(home, &call, wait).await;
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
/// agent's settings, for the installation at `home`.
pub(crate) fn init(
    home: Option<PathBuf>,
    args: InitArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let Some(agent) = args.agent else {
        return Err(CliError::Error("no agent named".into()));
    };
    let home = Context::home(home)?;
    if !home.config_path().exists() {
        return Err(CliError::Error(format!(
            "{} is not initialized: run `countersign init` first",
            home.root().display()
        )));
    }
    let scope = match (args.user, args.project) {
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
            text.push_str(&format!(
                "see docs/hooks.md for what {} needs before it runs a project's hooks\n",
                agent.name()
            ));
            text
        }
    };
    write_text(io.out, &text)
}

/// The user's home directory (`$HOME`), whose agent settings `--user`
/// writes.
fn user_home() -> Result<PathBuf, CliError> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .ok_or_else(|| CliError::Error("HOME is not set to an absolute path".into()))
}

/// How long the hook waits for a decision when `--wait-secs` is not
/// given: below each agent's own hook timeout as `countersign init`
/// writes it (docs/hooks.md).
pub(crate) fn default_wait(agent: Agent) -> Duration {
    Duration::from_secs(match agent {
        Agent::ClaudeCode | Agent::Codex | Agent::Gemini | Agent::Cursor => 300,
    })
}

/// The answer to `call`: every failure is a deny saying why.
async fn answer(home: Option<PathBuf>, call: &ToolCall, wait: Duration) -> Answer {
    match decide(home, call, wait).await {
        Ok(answer) => answer,
        Err(why) => Answer::deny(format!("countersign denied this call: {why}")),
    }
}

/// Propose `call`, wait up to `wait` for its decision, and consume an
/// approval; `Err` is a reason to deny.
async fn decide(home: Option<PathBuf>, call: &ToolCall, wait: Duration) -> Result<Answer, String> {
    let deadline = Instant::now() + wait;
    let ctx = Context::home(home)
        .and_then(Context::load)
        .map_err(|e| e.to_string())?;
    let session = Session::parse(format!("{}:{}", call.agent().name(), call.session_id()))
        .map_err(|e| format!("the agent's session id cannot name a session: {e}"))?;
    let mut head = ctx.head().await.map_err(|e| e.to_string())?;
    let request = ProposeRequest {
        operation: call.operation().to_owned(),
        arguments_json: call.arguments().to_string(),
        session: session.to_string(),
        note: String::new(),
        idempotency_key: call.tool_use_id().unwrap_or_default().to_owned(),
    };
    let mut view = head
        .propose(request)
        .await
        .map_err(|status| format!("the signer refused the proposal: {}", status.message()))?
        .into_inner();
    loop {
        let id = ProposalId::parse(view.id.clone()).map_err(|e| e.to_string())?;
        match view.status() {
            ProposalStatus::Pending => {
                view = match wait::decision(&mut head, &id, deadline).await? {
                    Some(decided) => decided,
                    None => match withdraw(&mut head, &id).await? {
                        // Withdrawn: a late approval can no longer apply.
                        None => {
                            return Ok(Answer::deny(format!(
                                "no decision within {} s; countersign withdrew proposal {id}",
                                wait.as_secs()
                            )));
                        }
                        // Decided just as the wait ran out.
                        Some(decided) => decided,
                    },
                };
            }
            ProposalStatus::Approved => {
                let gate = ctx
                    .gate(&mut head)
                    .await
                    .map_err(|e| e.to_string())?
                    .answering_hooks();
                let outcome = gate
                    .execute_handoff(&mut head, &id, &session)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok(answered(&id, &view, &outcome));
            }
            ProposalStatus::Applied => {
                return Ok(Answer::allow(format!(
                    "countersign allowed this call before (proposal {id})"
                )));
            }
            ProposalStatus::Denied => {
                return Ok(Answer::deny(format!(
                    "a person denied this call in countersign: {} (proposal {id})",
                    reason_or(&view, "no reason given")
                )));
            }
            status @ (ProposalStatus::Withdrawn
            | ProposalStatus::Revoked
            | ProposalStatus::Expired
            | ProposalStatus::Failed
            | ProposalStatus::Uncertain
            | ProposalStatus::Unspecified) => {
                return Ok(Answer::deny(format!(
                    "proposal {id} is {}, so this call is not allowed{}",
                    status.name(),
                    view_reason(&view)
                )));
            }
        }
    }
}

/// Withdraw the proposal whose wait ran out: `None` once withdrawn, or
/// its view if it was decided meanwhile.
async fn withdraw(
    head: &mut countersign_proto::v1::signer_client::SignerClient<tonic::transport::Channel>,
    id: &ProposalId,
) -> Result<Option<ProposalView>, String> {
    let withdrawn = head
        .withdraw(WithdrawRequest {
            proposal_id: id.to_string(),
        })
        .await;
    match withdrawn {
        Ok(_) => Ok(None),
        Err(_) => wait::current(head, id).await.map(Some),
    }
}

/// The answer to an execution of an approved call.
fn answered(id: &ProposalId, view: &ProposalView, outcome: &Outcome) -> Answer {
    let by = match view.provenance.as_str() {
        "" => String::new(),
        provenance => format!(" ({provenance})"),
    };
    match outcome {
        Outcome::Applied(_) => Answer::allow(format!(
            "approved in countersign{by}; proposal {id}, allowed once"
        )),
        Outcome::Recorded(d) if d.status == DispositionStatus::Applied => Answer::allow(format!(
            "countersign allowed this call before (proposal {id})"
        )),
        other => Answer::deny(format!(
            "countersign did not allow this call: {}",
            other.summary()
        )),
    }
}

/// The person's reason in a view, or `fallback`.
fn reason_or<'a>(view: &'a ProposalView, fallback: &'a str) -> &'a str {
    match view.reason.as_str() {
        "" => fallback,
        reason => reason,
    }
}

/// `: <reason>` when the view has one.
fn view_reason(view: &ProposalView) -> String {
    match view.reason.as_str() {
        "" => String::new(),
        reason => format!(": {reason}"),
    }
}
