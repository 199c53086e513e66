//! One fixed program, run never through a shell: the `command` effect's
//! program (the gate runs it between an intent and a completion) and an
//! operation's premise command (the signer runs it at proposal and
//! decision, a head again at consumption), which never runs in the asking
//! process itself: see [`premise`] and the runner binary
//! `countersign-premise`.
//!
//! This crate owns the child process: absolute program path, argv fixed by
//! the registry, environment scrubbed to `PATH=/usr/bin:/bin` (and, for an
//! effect, `COUNTERSIGN_IDEMPOTENCY_KEY`), working directory `/`, its own
//! process group, output captured up to a bound, and a timeout that kills
//! the whole group. It must not pass a proof, a secret or any request field
//! to the program, and must not interpret the program's output (the caller
//! records it; whoever prints it escapes it).
#![forbid(unsafe_code)]

pub mod premise;
pub mod sandbox;
pub mod users;

use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};

/// The only `PATH` the program sees.
pub const COMMAND_PATH: &str = "/usr/bin:/bin";
/// The environment variable carrying the idempotency key (the proof's nonce).
pub const IDEMPOTENCY_KEY_VAR: &str = "COUNTERSIGN_IDEMPOTENCY_KEY";
/// At most this many bytes of stdout and of stderr are kept.
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024;
/// How long to wait for a killed program to be reaped.
const REAP_GRACE: Duration = Duration::from_secs(5);

/// What to run: taken from the registry's `Effect::Command`, never from a
/// proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Fixed arguments, passed as argv without any shell interpretation.
    pub args: Vec<String>,
    /// The program (and anything it started) is killed after this long.
    pub timeout: Duration,
}

/// What happened to a program that was started. Serialized as the ledger's
/// result of the effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandOutcome {
    /// Exit code, when the program exited normally.
    pub exit_code: Option<i32>,
    /// Terminating signal, when it was killed by one.
    pub signal: Option<i32>,
    /// True when the timeout expired and the process group was killed; the
    /// program may have partly applied its effect.
    pub timed_out: bool,
    /// Captured stdout (lossy UTF-8, at most [`MAX_OUTPUT_BYTES`] bytes read).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8, at most [`MAX_OUTPUT_BYTES`] bytes read).
    pub stderr: String,
    /// True when stdout was longer than the bound (the rest was discarded).
    pub stdout_truncated: bool,
    /// True when stderr was longer than the bound (the rest was discarded).
    pub stderr_truncated: bool,
    /// Wall time from start to exit (or kill), in milliseconds.
    pub duration_ms: u64,
}

impl CommandOutcome {
    /// True when the program exited with code 0 within the timeout.
    pub fn succeeded(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0)
    }

    /// One line saying why the run did not succeed (or that it did).
    pub fn describe_failure(&self) -> String {
        if self.timed_out {
            return format!(
                "the command timed out after {} ms and was killed; it may have partly applied",
                self.duration_ms
            );
        }
        match (self.exit_code, self.signal) {
            (Some(0), _) => "the command succeeded".to_owned(),
            (Some(code), _) => format!("the command exited with status {code}"),
            (None, Some(signal)) => format!("the command was killed by signal {signal}"),
            (None, None) => "the command ended without an exit status".to_owned(),
        }
    }
}

/// Why a command was not run, or could not be supervised.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The program path is not absolute (nothing was started).
    #[error("command program {0:?} is not an absolute path")]
    RelativeProgram(PathBuf),
    /// The idempotency key is empty, too long or not printable ASCII
    /// (nothing was started).
    #[error("idempotency key is not 1..=256 printable ASCII characters")]
    InvalidIdempotencyKey,
    /// The program could not be started (nothing ran).
    #[error("cannot start {program:?}: {reason}")]
    Spawn {
        /// The program path.
        program: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// The program was started but its exit could not be observed; whether
    /// its effect happened is unknown.
    #[error("lost track of the started command: {0}")]
    Supervision(String),
}

impl CommandError {
    /// True when the program was started, so its effect may have happened.
    pub fn started(&self) -> bool {
        matches!(self, CommandError::Supervision(_))
    }
}

/// Runs `spec.program` with `spec.args`, writes `canonical_args` to its stdin
/// and closes it, and waits at most `spec.timeout` for it (and its output)
/// to finish. A non-zero exit or a timeout is an `Ok` outcome: the program
/// ran. `Err` means it never started, except [`CommandError::Supervision`].
pub async fn run_command(
    spec: &CommandSpec,
    canonical_args: &str,
    idempotency_key: &str,
) -> Result<CommandOutcome, CommandError> {
    let key_ok = !idempotency_key.is_empty()
        && idempotency_key.len() <= 256
        && idempotency_key.bytes().all(|b| b.is_ascii_graphic());
    if !key_ok {
        return Err(CommandError::InvalidIdempotencyKey);
    }
    run(spec, canonical_args, Some(idempotency_key)).await
}

/// As [`run_command`], for a program that only reads (an operation's
/// premise command): the same child, without an idempotency key.
pub async fn run_query(
    spec: &CommandSpec,
    canonical_args: &str,
) -> Result<CommandOutcome, CommandError> {
    run(spec, canonical_args, None).await
}

/// The child of [`run_command`] and [`run_query`].
async fn run(
    spec: &CommandSpec,
    canonical_args: &str,
    idempotency_key: Option<&str>,
) -> Result<CommandOutcome, CommandError> {
    if !spec.program.is_absolute() {
        return Err(CommandError::RelativeProgram(spec.program.clone()));
    }
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .env("PATH", COMMAND_PATH);
    if let Some(key) = idempotency_key {
        command.env(IDEMPOTENCY_KEY_VAR, key);
    }
    command
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = command.spawn().map_err(|e| CommandError::Spawn {
        program: spec.program.clone(),
        reason: e.to_string(),
    })?;
    // Kills the whole group if this future is dropped before the end.
    let mut group = GroupKiller::new(child.id());
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());

    let mut out = Captured::default();
    let mut err = Captured::default();
    let finished = tokio::time::timeout(spec.timeout, async {
        let (_, _, _, status) = tokio::join!(
            feed(stdin, canonical_args.as_bytes()),
            out.read_from(stdout),
            err.read_from(stderr),
            child.wait(),
        );
        status
    })
    .await;

    let (status, timed_out) = match finished {
        Ok(status) => (status, false),
        Err(_elapsed) => {
            group.kill();
            // Ignored: the leader may already have exited; the group kill
            // above covers it and everything it started.
            let _ = child.start_kill();
            let status = match tokio::time::timeout(REAP_GRACE, child.wait()).await {
                Ok(status) => status,
                Err(_) => Err(io::Error::other("killed command was not reaped in time")),
            };
            (status, true)
        }
    };
    group.disarm();
    let status = status.map_err(|e| CommandError::Supervision(e.to_string()))?;
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (exit_code, signal) = exit_parts(status);
    Ok(CommandOutcome {
        exit_code,
        signal,
        timed_out,
        stdout: String::from_utf8_lossy(&out.bytes).into_owned(),
        stderr: String::from_utf8_lossy(&err.bytes).into_owned(),
        stdout_truncated: out.truncated,
        stderr_truncated: err.truncated,
        duration_ms,
    })
}

fn exit_parts(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt as _;
    (status.code(), status.signal())
}

/// Writes the arguments and closes stdin. A program that exits without
/// reading them makes the write fail (broken pipe); that is its choice and
/// is ignored, like any other write error: the exit status tells the story.
async fn feed(stdin: Option<ChildStdin>, bytes: &[u8]) {
    if let Some(mut stdin) = stdin {
        let _ = stdin.write_all(bytes).await;
        let _ = stdin.shutdown().await;
    }
}

/// Output of one stream, kept up to [`MAX_OUTPUT_BYTES`].
#[derive(Default)]
struct Captured {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Captured {
    /// Reads to end of file, keeping the first bytes and draining the rest so
    /// the program never blocks on a full pipe. A read error ends the
    /// capture (what was read is kept).
    async fn read_from(&mut self, stream: Option<impl AsyncRead + Unpin>) {
        let Some(mut stream) = stream else { return };
        let mut chunk = [0u8; 8192];
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let room = MAX_OUTPUT_BYTES.saturating_sub(self.bytes.len());
                    let keep = n.min(room);
                    self.bytes.extend_from_slice(&chunk[..keep]);
                    if keep < n {
                        self.truncated = true;
                    }
                }
            }
        }
    }
}

/// Sends SIGKILL to the child's process group when armed: on timeout, and
/// on drop if `run_command` is cancelled midway.
struct GroupKiller {
    pgid: Option<rustix::process::Pid>,
}

impl GroupKiller {
    fn new(child_id: Option<u32>) -> GroupKiller {
        // The child leads its own group (process_group(0)), so its pid is the
        // group id. Never 0 or 1: kill(-1) would signal every process.
        let pgid = child_id
            .and_then(|id| i32::try_from(id).ok())
            .filter(|id| *id > 1)
            .and_then(rustix::process::Pid::from_raw);
        GroupKiller { pgid }
    }

    fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            // ESRCH (group already gone) is the expected failure.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupKiller {
    fn drop(&mut self) {
        self.kill();
    }
}
