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
pub mod terminal;

use std::io::{self, Read, Write};

pub use args::Cli;
pub use commands::api::api_state;
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
pub async fn run(cli: Cli, io: &mut Io<'_>) -> Result<(), CliError> {
    commands::dispatch(cli, io).await
}
