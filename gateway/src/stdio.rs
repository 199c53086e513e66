//! A stdio upstream's child process: its environment, its process group,
//! its stderr, and killing it.
//!
//! This module owns the child: run without a shell, with an environment
//! cleared and then given only the configured names (from the gateway's
//! own environment) and the secret files' values; in its own process group
//! so that the whole group is signalled; its stderr read line by line into
//! the log (bounded lines). It must not pass anything else of the
//! gateway's environment, and must not log a secret (stderr is the
//! child's: it is logged as the child wrote it).

use std::collections::BTreeMap;
use std::process::Stdio as Pipe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use countersign_registry::gateway::Stdio;
use rustix::process::{Pid, Signal};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncReadExt as _, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use zeroize::Zeroizing;

use crate::secret::read_secret;

/// Longest stderr line logged whole, in bytes; the rest of a longer line
/// is dropped (and the log line says so).
const MAX_STDERR_LINE: usize = 4096;
/// How long a stopping child gets after its stdin closes, and again after
/// SIGTERM, before its group is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// The process group of an upstream's current child, shared with the
/// [`crate::Upstreams`] handle so that dropping it kills the group even
/// when no task runs any more.
#[derive(Debug, Default)]
pub(crate) struct Group(Mutex<Option<Pid>>);

impl Group {
    fn set(&self, pgid: Option<Pid>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = pgid;
    }

    /// Sends `signal` to the whole group, if a child runs.
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(pgid) = *self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            // ESRCH (the group is already gone) is the expected failure.
            let _ = rustix::process::kill_process_group(pgid, signal);
        }
    }
}

/// A started child: its pipes for the MCP transport and the child itself.
pub(crate) struct Started {
    pub(crate) child: Child,
    pub(crate) stdout: ChildStdout,
    pub(crate) stdin: ChildStdin,
}

/// The child's environment: the configured names present in the gateway's
/// environment, then each secret file's value. The error names a secret
/// file that cannot be used.
fn environment(stdio: &Stdio) -> Result<BTreeMap<String, Zeroizing<String>>, String> {
    let mut env = BTreeMap::new();
    for name in &stdio.env {
        if let Some(value) = std::env::var_os(name) {
            let value = value
                .into_string()
                .map_err(|_| format!("the gateway's environment variable {name} is not UTF-8"))?;
            env.insert(name.clone(), Zeroizing::new(value));
        }
    }
    for (name, path) in &stdio.secret_env {
        env.insert(name.clone(), read_secret(path)?);
    }
    Ok(env)
}

/// Starts `stdio.program` as described in the module doc, its stderr
/// logged under `upstream`. The error says why it did not start.
pub(crate) fn start(upstream: &str, stdio: &Stdio, group: &Group) -> Result<Started, String> {
    let env = environment(stdio)?;
    let mut command = Command::new(&stdio.program);
    command
        .args(&stdio.args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Pipe::piped())
        .stdout(Pipe::piped())
        .stderr(Pipe::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", stdio.program.display()))?;
    // The child leads its own group (process_group(0)), so its pid is the
    // group id. Never 0 or 1: kill(-1) would signal every process.
    group.set(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .filter(|id| *id > 1)
            .and_then(Pid::from_raw),
    );
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_stderr(upstream.to_owned(), stderr));
    }
    match (child.stdout.take(), child.stdin.take()) {
        (Some(stdout), Some(stdin)) => Ok(Started {
            child,
            stdout,
            stdin,
        }),
        // Both were set to `piped()` above, so this is not reached.
        _ => Err("the child's stdin or stdout is missing".into()),
    }
}

/// Stops a child whose MCP session is already closed (its stdin with it):
/// waits [`STOP_GRACE`], sends SIGTERM to its group, waits again, then
/// kills the group; reaps it.
pub(crate) async fn stop(mut child: Child, group: &Group) {
    if tokio::time::timeout(STOP_GRACE, child.wait())
        .await
        .is_err()
    {
        group.signal(Signal::TERM);
        if tokio::time::timeout(STOP_GRACE, child.wait())
            .await
            .is_err()
        {
            group.signal(Signal::KILL);
            let _ = child.wait().await;
        }
    }
    reaped(group);
}

/// After the child exited by itself: kills what is left of its group
/// (grandchildren) and forgets the group.
pub(crate) fn reaped(group: &Group) {
    group.signal(Signal::KILL);
    group.set(None);
}

/// Logs each line the child writes to stderr (at most
/// [`MAX_STDERR_LINE`] bytes of it, [`shown`] escaped) until it closes.
async fn log_stderr(upstream: String, stderr: impl AsyncRead + Unpin) {
    let upstream: Arc<str> = upstream.into();
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        let limit = u64::try_from(MAX_STDERR_LINE + 1).unwrap_or(u64::MAX);
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let cut = line.last() != Some(&b'\n') && line.len() > MAX_STDERR_LINE;
        if cut {
            line.truncate(MAX_STDERR_LINE);
            if skip_rest_of_line(&mut reader).await.is_err() {
                return;
            }
        }
        tracing::info!(
            target: "countersign_gateway::upstream",
            upstream = &*upstream,
            truncated = cut,
            "{}",
            shown(&line)
        );
    }
}

/// One stderr line of an upstream as the log shows it: lossy UTF-8, its
/// line end dropped, and every character that could move the cursor,
/// clear the screen, forge a line or reorder text written as a visible
/// `\u{..}` escape. An upstream is not trusted: what it writes must not
/// pass for the gateway's own log lines.
fn shown(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    countersign_registry::terminal_safe(text).into_owned()
}

/// Reads and drops bytes up to and including the next newline.
async fn skip_rest_of_line(
    reader: &mut (impl tokio::io::AsyncBufRead + Unpin),
) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upstreams_stderr_line_cannot_move_the_cursor_or_forge_a_line() {
        assert_eq!(shown(b"listening on stdio\n"), "listening on stdio");
        assert_eq!(
            shown(b"ok\r2026-12-04T00:00:00Z  INFO countersign: approved\x1b[2K\r\n"),
            "ok\\u{d}2026-12-04T00:00:00Z  INFO countersign: approved\\u{1b}[2K"
        );
        assert_eq!(shown("abc\u{202e}cba".as_bytes()), "abc\\u{202e}cba");
        assert_eq!(shown(b"\xff\xfe bytes"), "\u{fffd}\u{fffd} bytes");
    }
}
