//! The `countersign` command-line head. It proposes and executes actions as a
//! head, and approves, denies and revokes as an approver at an interactive
//! terminal. It embeds the gate (public keys + ledger) and links no
//! proof-signing code: `countersign up` runs the signer as its own process.
//! `countersign mcp` and `countersign api serve` run the other two heads.
//!
//! The library form exists so that integration tests drive the same code
//! paths as the binary, with captured output and a scripted terminal.
#![forbid(unsafe_code)]

pub mod args;
mod commands;
mod context;
pub mod error;
mod exposures;
pub mod logging;
mod output;
mod proposal_ref;
pub mod terminal;

use std::io::{self, Read, Write};

pub use args::Cli;
pub use commands::api::api_state;
pub use commands::console::console_state;
pub use context::Context;
pub use error::{CliError, exit};
pub use exposures::{exposures, exposures_of};
pub use terminal::Terminal;

/// Where a command reads and writes. The binary wires the process's standard
/// streams and `/dev/tty`; tests wire buffers and a scripted terminal.
pub struct Io<'a> {
    /// Standard output: results, text or JSON.
    pub out: &'a mut dyn Write,
    /// Standard error: progress for long-running commands.
    pub err: &'a mut dyn Write,
    /// Standard input, for `--args-file -` and `--proof-file -`.
    pub stdin: &'a mut dyn Read,
    /// Opens the controlling terminal for approvals.
    pub terminal: &'a mut dyn FnMut() -> io::Result<Box<dyn Terminal>>,
}

/// Run one parsed command to completion.
///
/// With `--json`, stdout holds exactly one JSON document on every outcome:
/// the command's own, or, when it failed before printing one, the error's
/// ([`CliError::to_json`]). The one-line message still goes to stderr.
pub async fn run(cli: Cli, io: &mut Io<'_>) -> Result<(), CliError> {
    let json = cli.json;
    let mut counted = CountingWriter {
        inner: &mut *io.out,
        written: 0,
    };
    let result = {
        let mut inner = Io {
            out: &mut counted,
            err: &mut *io.err,
            stdin: &mut *io.stdin,
            terminal: &mut *io.terminal,
        };
        commands::dispatch(cli, &mut inner).await
    };
    if let Err(e) = &result
        && json
        && counted.written == 0
    {
        output::write_json(io.out, &e.to_json())?;
    }
    result
}

/// The JSON document `--json` prints for a command line clap refused
/// (exit code 2), or `None` when the command line did not ask for JSON.
pub fn usage_error_json<I, T>(args: I, error: &clap::Error) -> Option<String>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString>,
{
    if !args.into_iter().any(|a| a.into() == "--json") {
        return None;
    }
    let rendered = error.render().to_string();
    let message = rendered
        .lines()
        .next()
        .unwrap_or_default()
        .trim_start_matches("error: ");
    Some(
        countersign_surface::results::refusal(
            countersign_proto::reason::Reason::Usage.code(),
            message,
        )
        .to_string(),
    )
}

/// Counts what a command wrote to stdout, so that [`run`] knows whether it
/// printed its own document.
struct CountingWriter<'a> {
    inner: &'a mut dyn Write,
    written: usize,
}

impl Write for CountingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written = self.written.saturating_add(n);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
