//! `countersign-signer`: `serve` runs the signer; `keygen` creates (or
//! shows) the proof key. The only program that can sign a proof.
//!
//! main has one shape: parse configuration without binding, install the
//! TLS provider, build state, log the address and key id (never secrets),
//! serve until SIGINT/SIGTERM, drain with a grace timeout.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use countersign_identity::{Config, Home, tls};
use countersign_signer::{SignerState, StartError, load_or_create_key, serve_until_signal};
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(
    name = "countersign-signer",
    version,
    about = "The countersign signer: the only holder of the proof-signing key"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the signer's gRPC API (mTLS) until SIGINT or SIGTERM.
    Serve {
        /// The countersign home (default: $COUNTERSIGN_HOME or ~/.config/countersign).
        #[arg(long)]
        home: Option<PathBuf>,
    },
    /// Create the proof key if absent, and print its key id.
    Keygen {
        /// The countersign home (default: $COUNTERSIGN_HOME or ~/.config/countersign).
        #[arg(long)]
        home: Option<PathBuf>,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    countersign_identity::log::init("info", countersign_identity::log::unfiltered);
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { home } => serve(home).await,
        Command::Keygen { home } => keygen(home),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("countersign-signer: {e}");
            ExitCode::FAILURE
        }
    }
}

fn home_from(arg: Option<PathBuf>) -> Result<Home, StartError> {
    Ok(match arg {
        Some(path) => Home::at(path)?,
        None => Home::resolve()?,
    })
}

fn keygen(home: Option<PathBuf>) -> Result<(), StartError> {
    let home = home_from(home)?;
    home.check()?;
    let (key, created) = load_or_create_key(&home)?;
    let what = if created { "created" } else { "existing" };
    eprintln!("{what} key {}", home.signing_key_path().display());
    println!("{}", key.key_id());
    Ok(())
}

async fn serve(home: Option<PathBuf>) -> Result<(), StartError> {
    // Configuration, without binding anything.
    let home = home_from(home)?;
    home.check()?;
    let config = Config::load(&home)?;
    let addr: SocketAddr = config.signer_addr.parse().map_err(|_| {
        StartError::Transport(format!(
            "signer address {:?} is not IP:port",
            config.signer_addr
        ))
    })?;

    tls::install_crypto_provider();
    let server_tls = tls::server_config(&home)?;
    let state = SignerState::load(&home, &config).await?;

    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Transport(format!("bind {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| StartError::Transport(format!("local address: {e}")))?;
    let key_id = state.key_id();
    tracing::info!(addr = %local, %key_id, "signer ready");
    // `countersign up` waits for exactly this line.
    eprintln!("countersign-signer listening on {local} key {key_id}");

    serve_until_signal(listener, state, server_tls).await?;
    tracing::info!("signer stopped");
    Ok(())
}
