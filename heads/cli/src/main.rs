//! `countersign`: parse the command line, run it, map the outcome to an exit
//! code. Logs go to stderr (filter with COUNTERSIGN_LOG), never to stdout,
//! with anything shaped like a proof redacted and long lines capped.
#![forbid(unsafe_code)]

use std::io;
use std::process::ExitCode;

use clap::{CommandFactory as _, FromArgMatches as _};
use countersign::logging::redact_secrets;
use countersign::{Cli, Io, exit, terminal};
use tracing::Instrument as _;

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("countersign: cannot start the runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    // Inside the runtime: trace export (`otlp`) runs on it. Dropped before
    // the runtime shuts down, which flushes the spans not yet sent.
    let log = {
        let _runtime = runtime.enter();
        // The notify process's deliveries are what its log is for.
        countersign_identity::log::init(
            "warn,countersign_notify=info",
            redact_secrets,
            "countersign",
        )
    };
    // Parsed as `Cli::try_parse` does, keeping the matches for the
    // subcommand's name.
    let mut command = Cli::command();
    let parsed = command
        .try_get_matches_from_mut(std::env::args_os())
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)))
        .map_err(|e| e.format(&mut command));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            // Help and version print and exit 0; a usage error exits 2, with
            // its JSON document on stdout when `--json` was asked for.
            if e.use_stderr()
                && let Some(doc) = countersign::usage_error_json(std::env::args_os(), &e)
            {
                println!("{doc}");
            }
            e.exit();
        }
    };
    let (mut stdout, mut stderr, mut stdin) = (io::stdout(), io::stderr(), io::stdin());
    let mut open_tty = terminal::controlling_terminal;
    let mut io = Io {
        out: &mut stdout,
        err: &mut stderr,
        stdin: &mut stdin,
        terminal: &mut open_tty,
    };
    // One span per command, named by the subcommand clap matched (never an
    // argument): what a trace shows of the CLI and of the heads it serves.
    let command = matches.subcommand_name().unwrap_or("countersign");
    let span = tracing::info_span!("command", otel.name = command, command);
    let hook = command == "hook";
    let ran = runtime.block_on(countersign::run(cli, &mut io).instrument(span));
    drop(log);
    let code = match ran {
        Ok(()) => exit::OK,
        // Its answer is written: nothing is added to it.
        Err(e @ countersign::CliError::Answered(_)) => e.exit_code(),
        Err(e) => {
            eprintln!("countersign: {e}");
            e.exit_code()
        }
    };
    if hook {
        // The agent waits for this process to end. Its answer is written
        // and flushed, and all it did has ended with it (its ledger
        // transaction committed, its signer calls answered, its log
        // flushed above): the process ends now, without taking the
        // runtime's threads and connections down one by one.
        std::process::exit(i32::from(code));
    }
    // Everything a command started has finished or been drained by now; a
    // blocking read of stdin (the MCP head's transport) cannot be
    // interrupted, so do not wait on it for more than a moment.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    ExitCode::from(code)
}
