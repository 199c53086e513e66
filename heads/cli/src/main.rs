//! `countersign`: parse the command line, run it, map the outcome to an exit
//! code. Logs go to stderr (filter with COUNTERSIGN_LOG), never to stdout,
//! with anything shaped like a proof redacted and long lines capped.
#![forbid(unsafe_code)]

use std::io;
use std::process::ExitCode;

use clap::Parser;
use countersign::logging::redact_secrets;
use countersign::{Cli, Io, exit, terminal};

fn main() -> ExitCode {
    countersign_identity::log::init("warn", redact_secrets);
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
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
    let (mut stdout, mut stderr, mut stdin) = (io::stdout(), io::stderr(), io::stdin());
    let mut open_tty = terminal::controlling_terminal;
    let mut io = Io {
        out: &mut stdout,
        err: &mut stderr,
        stdin: &mut stdin,
        terminal: &mut open_tty,
    };
    let ran = runtime.block_on(countersign::run(cli, &mut io));
    // Everything a command started has finished or been drained by now; a
    // blocking read of stdin (the MCP head's transport) cannot be
    // interrupted, so do not wait on it for more than a moment.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match ran {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            eprintln!("countersign: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
