//! Where a premise program runs: never in the process that asks for it.
//! A premise program is an operator's program fed the model's canonical
//! arguments; an injection bug in it must not hand the agent the caller's
//! rights (in the signer: the proof-signing key).
//!
//! - [`PremiseRunner::Child`]: the runner binary (`countersign-premise
//!   exec`) as a child of this process, in its own process group, which
//!   restricts itself with Landlock (nothing beneath the hidden
//!   directories: the countersign home; see [`crate::sandbox`]) and then
//!   becomes the program. The development installation, where everything
//!   runs as one user.
//! - [`PremiseRunner::Service`]: the premise service (`countersign-premise
//!   serve`), a process of its own system user, over its unix socket; it
//!   runs the program as a restricted child of its own. The hardened
//!   installation: the program runs as a user that cannot read the
//!   signer's files at all.
//! - [`PremiseRunner::Unconfigured`]: no premise program runs.
//!
//! Either way the program gets the canonical arguments on stdin and gives
//! back its bounded output within the timeout, as [`crate::run_query`]
//! describes. This module does not judge the output.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::UnixStream;

use crate::sandbox::Restricted;
use crate::{CommandError, CommandOutcome, CommandSpec};

/// The runner binary's file name, installed beside the binaries that run
/// premise programs.
pub const RUNNER_NAME: &str = "countersign-premise";
/// How the runner's own refusals begin on its stderr (exit 126 or 127).
pub const RUNNER_REFUSAL: &str = "countersign-premise: ";
/// The longest timeout the premise service grants a request.
pub const SERVICE_MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// The largest request the premise service reads (argv and stdin).
pub const SERVICE_MAX_REQUEST_BYTES: u64 = 4 * 1024 * 1024;
/// The largest answer a client reads (two bounded streams, JSON-escaped).
const SERVICE_MAX_ANSWER_BYTES: u64 = 16 * crate::MAX_OUTPUT_BYTES as u64;
/// How long past the program's timeout a client waits for the service.
const SERVICE_GRACE: Duration = Duration::from_secs(10);

/// How this process runs premise programs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PremiseRunner {
    /// As a Landlock-restricted child (the runner binary at `runner`), with
    /// nothing of `hidden` in reach.
    Child {
        /// The `countersign-premise` binary.
        runner: PathBuf,
        /// Directories the program cannot read, write or list the contents
        /// of (the countersign home).
        hidden: Vec<PathBuf>,
    },
    /// Through the premise service listening on `socket` (its own user).
    Service {
        /// The service's unix socket.
        socket: PathBuf,
    },
    /// None: every premise command is refused (nothing runs).
    Unconfigured,
}

impl PremiseRunner {
    /// The runner an installation's configuration names: the premise
    /// service at `socket` when there is one, else a restricted child that
    /// cannot reach `home` (the countersign home of the asking process).
    pub fn configured(socket: Option<&Path>, home: &Path) -> PremiseRunner {
        match socket {
            Some(socket) => PremiseRunner::Service {
                socket: socket.to_path_buf(),
            },
            None => PremiseRunner::beside_this_program(vec![home.to_path_buf()]),
        }
    }

    /// A [`PremiseRunner::Child`] with the runner installed beside this
    /// program, or, for a test executable in cargo's `target/<profile>/deps`,
    /// in `target/<profile>` (where cargo puts the workspace's binaries).
    pub fn beside_this_program(hidden: Vec<PathBuf>) -> PremiseRunner {
        let exe = std::env::current_exe().unwrap_or_default();
        let dir = exe.parent().unwrap_or(Path::new("/"));
        let mut runner = dir.join(RUNNER_NAME);
        if !runner.is_file()
            && dir.file_name().is_some_and(|n| n == "deps")
            && let Some(profile) = dir.parent()
        {
            runner = profile.join(RUNNER_NAME);
        }
        PremiseRunner::Child { runner, hidden }
    }

    /// Runs `spec.program` with `spec.args` and `stdin` as this runner says.
    /// As [`crate::run_query`]: `Ok` when the program ran (whatever its
    /// exit), `Err` when it never started.
    pub async fn run(
        &self,
        spec: &CommandSpec,
        stdin: &str,
    ) -> Result<CommandOutcome, CommandError> {
        if !spec.program.is_absolute() {
            return Err(CommandError::RelativeProgram(spec.program.clone()));
        }
        match self {
            PremiseRunner::Child { runner, hidden } => {
                let mut args = vec!["exec".to_owned()];
                for dir in hidden {
                    args.push("--hide".to_owned());
                    args.push(dir.display().to_string());
                }
                args.push("--".to_owned());
                args.push(spec.program.display().to_string());
                args.extend(spec.args.iter().cloned());
                let child = CommandSpec {
                    program: runner.clone(),
                    args,
                    timeout: spec.timeout,
                };
                let outcome = crate::run_query(&child, stdin).await?;
                // The runner's own refusals (126: no restriction could be
                // built, 127: the program could not be executed): the
                // program never started.
                if matches!(outcome.exit_code, Some(126 | 127))
                    && let Some(reason) = outcome.stderr.strip_prefix(RUNNER_REFUSAL)
                {
                    return Err(CommandError::Spawn {
                        program: spec.program.clone(),
                        reason: reason.lines().next().unwrap_or_default().to_owned(),
                    });
                }
                Ok(outcome)
            }
            PremiseRunner::Service { socket } => ask_service(socket, spec, stdin).await,
            PremiseRunner::Unconfigured => Err(CommandError::Spawn {
                program: spec.program.clone(),
                reason: "no premise runner is configured in this process".to_owned(),
            }),
        }
    }

    /// What a [`PremiseRunner::Child`] achieves on this kernel, asked of
    /// the runner itself (`countersign-premise probe`), for the log at
    /// start; `Err` with the reason when the runner does not answer.
    /// `Ok(None)` for the service (it logs its own) and for none.
    pub async fn probe(&self) -> Result<Option<Restricted>, String> {
        let PremiseRunner::Child { runner, hidden } = self else {
            return Ok(None);
        };
        let mut args = vec!["probe".to_owned()];
        for dir in hidden {
            args.push("--hide".to_owned());
            args.push(dir.display().to_string());
        }
        let spec = CommandSpec {
            program: runner.clone(),
            args,
            timeout: Duration::from_secs(10),
        };
        let outcome = crate::run_query(&spec, "")
            .await
            .map_err(|e| e.to_string())?;
        if !outcome.succeeded() {
            return Err(format!(
                "{}: {}",
                outcome.describe_failure(),
                outcome.stderr.trim()
            ));
        }
        Restricted::parse(outcome.stdout.trim())
            .map(Some)
            .ok_or_else(|| format!("unexpected answer {:?}", outcome.stdout))
    }
}

/// A request to the premise service.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceRequest {
    /// The absolute program and its fixed arguments.
    pub argv: Vec<String>,
    /// What the program reads on stdin (the canonical arguments).
    pub stdin: String,
    /// How long it may run, in milliseconds (capped at
    /// [`SERVICE_MAX_TIMEOUT`]).
    pub timeout_ms: u64,
}

/// The premise service's answer.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceAnswer {
    /// The program ran (whatever its exit).
    Ran(CommandOutcome),
    /// It did not start, or the request was refused: why.
    NotRun(String),
}

/// One request over `socket`: write it, close the write side, read the
/// answer, all within the program's timeout and a grace.
async fn ask_service(
    socket: &Path,
    spec: &CommandSpec,
    stdin: &str,
) -> Result<CommandOutcome, CommandError> {
    let not_run = |reason: String| CommandError::Spawn {
        program: spec.program.clone(),
        reason,
    };
    let mut argv = vec![spec.program.display().to_string()];
    argv.extend(spec.args.iter().cloned());
    let request = ServiceRequest {
        argv,
        stdin: stdin.to_owned(),
        timeout_ms: u64::try_from(spec.timeout.as_millis()).unwrap_or(u64::MAX),
    };
    let body = serde_json::to_vec(&request).map_err(|e| not_run(e.to_string()))?;
    let exchange = async {
        let mut stream = UnixStream::connect(socket).await.map_err(|e| {
            not_run(format!(
                "cannot reach the premise service at {}: {e}",
                socket.display()
            ))
        })?;
        stream
            .write_all(&body)
            .await
            .map_err(|e| not_run(format!("premise service: {e}")))?;
        stream
            .shutdown()
            .await
            .map_err(|e| not_run(format!("premise service: {e}")))?;
        // From here on the program may have started.
        let mut answer = Vec::new();
        stream
            .take(SERVICE_MAX_ANSWER_BYTES)
            .read_to_end(&mut answer)
            .await
            .map_err(|e| CommandError::Supervision(format!("premise service: {e}")))?;
        serde_json::from_slice::<ServiceAnswer>(&answer)
            .map_err(|e| CommandError::Supervision(format!("premise service answered: {e}")))
    };
    match tokio::time::timeout(spec.timeout + SERVICE_GRACE, exchange).await {
        Err(_) => Err(CommandError::Supervision(
            "the premise service did not answer in time".to_owned(),
        )),
        Ok(Err(e)) => Err(e),
        Ok(Ok(ServiceAnswer::Ran(outcome))) => Ok(outcome),
        Ok(Ok(ServiceAnswer::NotRun(reason))) => Err(not_run(reason)),
    }
}
