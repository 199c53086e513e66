//! `countersign-signer`: `serve` runs the signer; `keygen` creates (or
//! shows) the proof key; `keys` lists, rotates and retires the key set
//! (each change recorded in the audit chain); `passkeys` is the
//! administrative path for passkeys (each enrolment's one-time code, drawn
//! for one approver; recovery). The only program that can sign a proof.
//!
//! main has one shape: parse configuration without binding, install the
//! TLS provider, build state, log the address and key id (never secrets),
//! serve until SIGINT/SIGTERM, drain with a grace timeout.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Parser, Subcommand};
use countersign_identity::{ApproverName, Config, Home, tls};
use countersign_ledger::{KeyEvent, Ledger};
use countersign_signer::keystore::{KeyStore, KeyStoreError};
use countersign_signer::log_key::LogKey;
use countersign_signer::passkeys::admin;
use countersign_signer::policy_cli::{self, PolicyArgs};
use countersign_signer::{SignerState, StartError, load_or_create_key, serve_until_signal};
use tokio::net::TcpListener;

#[derive(Debug, Parser)]
#[command(
    name = "countersign-signer",
    version,
    about = "The countersign signer: the only holder of the proof-signing key"
)]
struct Cli {
    /// The countersign home (default: $COUNTERSIGN_HOME or
    /// ~/.config/countersign); before or after the subcommand.
    #[arg(long, global = true, value_name = "DIR")]
    home: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the signer's gRPC API (mTLS) until SIGINT or SIGTERM.
    Serve,
    /// Create the proof key if absent, and print its key id.
    Keygen,
    /// List, rotate or retire the proof keys (the signer may be running).
    Keys {
        #[command(subcommand)]
        action: KeysAction,
    },
    /// Rotate the transparency log's key (the signer may be running; the
    /// new key signs from its next start).
    LogKey {
        #[command(subcommand)]
        action: LogKeyAction,
    },
    /// The administrative path for passkeys, run as the signer's user.
    Passkeys {
        #[command(subcommand)]
        action: PasskeysAction,
    },
    /// Check a Cedar policy set against the registry's schema, run its test
    /// table, print the schema (no key, no ledger, no signer running).
    Policy(PolicyArgs),
}

#[derive(Debug, Subcommand)]
enum PasskeysAction {
    /// Print a one-time code with which ONE approver enrols one passkey
    /// (valid 30 minutes, one attempt; replaces that approver's earlier
    /// code). Every enrolment needs one: the code is accepted only from
    /// the approver certificate it was drawn for, and the passkey then
    /// belongs to that approver alone.
    #[command(group(ArgGroup::new("whose").required(true).args(["approver", "unnamed"])))]
    EnrolmentCode {
        /// The named approver the code is for: `console` for the web
        /// console's own certificate, or a name given to `countersign
        /// credential create --approver NAME` (and `console --as NAME`).
        #[arg(long, value_name = "NAME", value_parser = approver_name)]
        approver: Option<ApproverName>,
        /// The code is for the approver certificate without a name (the
        /// one `countersign approve` uses at the terminal).
        #[arg(long)]
        unnamed: bool,
    },
    /// Print each passkey of the principal: credential id, status, the
    /// approver it belongs to, what authorized its enrolment, name.
    List,
    /// Remove a passkey without an assertion (recovery of a lost one).
    Remove {
        /// The credential id, as `passkeys list` prints it.
        credential_id: String,
    },
}

#[derive(Debug, Subcommand)]
enum KeysAction {
    /// Print each key: id, status (active, verifying, retired), where it is
    /// held (`file`, or the `pkcs11:` URI of a token key).
    List,
    /// Make a new active key; the old one keeps verifying until retired.
    Rotate {
        /// Generate the new key on a PKCS#11 token instead of in a file, named by
        /// a `pkcs11:` URI: `token=` and `object=` (or `id=`), with the query
        /// attributes `module-path=` and `pin-source=file:` (a 0600 PIN file).
        #[arg(long, value_name = "URI")]
        pkcs11: Option<String>,
    },
    /// Retire a verifying key: its proofs are refused from then on (its key
    /// file is deleted; a token key pair is destroyed on the token).
    Retire {
        /// The key id (k4.pid.…) to retire, as `keys list` prints it.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
enum LogKeyAction {
    /// Make a new log key for the same log (the same origin): the old one's
    /// public key stays published so the checkpoints it signed verify; the
    /// new key signs from the signer's next start.
    Rotate,
}

/// The actor the audit chain names for key set changes.
const KEYS_ACTOR: &str = "signer-admin";

#[tokio::main]
async fn main() -> ExitCode {
    // Kept until main returns: dropping it flushes exported spans (`otlp`).
    let _log = countersign_identity::log::init(
        "info",
        countersign_identity::log::unfiltered,
        "countersign-signer",
    );
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve => serve(cli.home).await,
        Command::Keygen => keygen(cli.home),
        Command::Keys { action } => keys(action, cli.home).await,
        Command::LogKey {
            action: LogKeyAction::Rotate,
        } => rotate_log_key(cli.home),
        Command::Passkeys { action } => passkeys(action, cli.home).await,
        // Its own exit codes: 1 a check failed, 2 nothing could be checked.
        Command::Policy(args) => return policy_cli::main(args, cli.home),
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
    let (key_id, created) = load_or_create_key(&home)?;
    let what = if created { "created" } else { "existing" };
    eprintln!("{what} key in {}", home.signer_dir().display());
    // Created (if new) by `load_or_create_key`; its public key only.
    let (log_key, _) = LogKey::open(&home.signer_dir(), &home.principal()?)?;
    eprintln!("log key {}", log_key.verifier_key());
    println!("{key_id}");
    Ok(())
}

fn rotate_log_key(home: Option<PathBuf>) -> Result<(), StartError> {
    let home = home_from(home)?;
    home.check()?;
    let (old, new) = countersign_signer::log_key::rotate(&home.signer_dir(), &home.principal()?)?;
    eprintln!("retired log key {old} (still published: the checkpoints it signed verify)");
    eprintln!(
        "new log key {new}: it signs from the signer's next start; restart the signer, and give witnesses the new key"
    );
    println!("{new}");
    Ok(())
}

async fn keys(action: KeysAction, home: Option<PathBuf>) -> Result<(), StartError> {
    let home = home_from(home)?;
    home.check()?;
    let (store, _created) = KeyStore::open(&home.signer_dir())?;
    match action {
        KeysAction::List => {
            for entry in store.list()? {
                println!(
                    "{} {} {}",
                    entry.key_id,
                    entry.status.as_str(),
                    entry.backend()
                );
            }
        }
        KeysAction::Rotate { pkcs11 } => {
            let ledger = ledger_of(&home).await?;
            let record = |kid: String| async move {
                ledger
                    .record_key_event(KeyEvent::Rotated, &kid, KEYS_ACTOR)
                    .await
            };
            let key_id = match pkcs11 {
                Some(uri) => store.rotate_to_token(&uri, record).await?,
                None => store.rotate(record).await?,
            };
            published_in(&store, &home).await?;
            eprintln!("rotated: the new key signs from the next decision");
            println!("{key_id}");
        }
        KeysAction::Retire { id } => {
            let ledger = ledger_of(&home).await?;
            let here = store.list()?.iter().any(|entry| entry.key_id == id);
            if here {
                store
                    .retire(&id, || {
                        ledger.record_key_event(KeyEvent::Retired, &id, KEYS_ACTOR)
                    })
                    .await?;
                published_in(&store, &home).await?;
            } else if ledger.retire_signer_key(&id).await? {
                // Another signer's key (that signer lost, say): retired
                // in the ledger's key set, which every signer serves.
                ledger
                    .record_key_event(KeyEvent::Retired, &id, KEYS_ACTOR)
                    .await?;
            } else {
                return Err(KeyStoreError::UnknownKey(id).into());
            }
            eprintln!("retired {id}: heads refuse its proofs once they refresh their keys");
        }
    }
    Ok(())
}

async fn passkeys(action: PasskeysAction, home: Option<PathBuf>) -> Result<(), StartError> {
    let home = home_from(home)?;
    home.check()?;
    let mut out = std::io::stdout().lock();
    match action {
        // clap's group makes `--approver` and `--unnamed` exclusive and
        // one of them required: no `--approver` means `--unnamed`.
        PasskeysAction::EnrolmentCode { approver, .. } => {
            let ledger = ledger_of(&home).await?;
            admin::print_enrolment_code(&ledger, approver.as_ref(), &mut out).await
        }
        PasskeysAction::List => {
            admin::list(&ledger_of(&home).await?, &home.principal()?, &mut out).await
        }
        PasskeysAction::Remove { credential_id } => {
            admin::remove(&ledger_of(&home).await?, &credential_id).await?;
            eprintln!("removed {credential_id}");
            Ok(())
        }
    }
}

fn approver_name(value: &str) -> Result<ApproverName, String> {
    ApproverName::parse(value).map_err(|e| e.to_string())
}

/// Publish `store`'s index in the ledger's key set after a change (the
/// signer publishes it too, at its next round).
async fn published_in(store: &KeyStore, home: &Home) -> Result<(), StartError> {
    use countersign_signer::published_keys::{PublishError, publish};
    match publish(store, &ledger_of(home).await?).await {
        Ok(()) => Ok(()),
        Err(PublishError::Index(e)) => Err(e.into()),
        Err(PublishError::Ledger(e)) => Err(e.into()),
    }
}

async fn ledger_of(home: &Home) -> Result<Ledger, StartError> {
    let config = Config::load(home)?;
    Ok(Ledger::open(&config.ledger_url).await?)
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
    // A SQLite ledger has one signer: a second one stops here, before
    // binding, saying so. Held until this function returns.
    let _sole_signer = state.ledger().claim_sole_signer()?;
    countersign_signer::published_keys::publish_keys(&state).await?;

    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| StartError::Transport(format!("bind {addr}: {e}")))?;
    let local = listener
        .local_addr()
        .map_err(|e| StartError::Transport(format!("local address: {e}")))?;
    // `[metrics] signer`: off unless configured, loopback only.
    let metrics = match config.metrics.signer {
        Some(addr) => Some(
            countersign_metrics::bind(addr)
                .await
                .map_err(|e| StartError::Transport(e.to_string()))?,
        ),
        None => None,
    };
    let key_id = state.key_id()?;
    tracing::info!(addr = %local, %key_id, "signer ready");
    if let Some(metrics) = &metrics {
        let addr = metrics
            .local_addr()
            .map_err(|e| StartError::Transport(format!("metrics address: {e}")))?;
        eprintln!("countersign-signer metrics on http://{addr}/metrics");
    }
    // `countersign up` waits for exactly this line.
    eprintln!("countersign-signer listening on {local} key {key_id}");

    serve_until_signal(listener, state, server_tls, metrics).await?;
    tracing::info!("signer stopped");
    Ok(())
}
