//! Test support for the witnessing client: ledgers on both backends with
//! checkpoints signed by a test log key, a real witness nobody here wrote
//! (aics-witness from PyPI, installed by scripts/test into
//! tests/witness/venv), and a small stand-in witness for answers a correct
//! witness never gives (a cosignature that does not verify).
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::time::Duration;

use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{KeyEvent, Ledger, StoredCheckpoint};
use countersign_tlog::{Checkpoint, KeyName, Note, VerifierKey, sign_note};
use countersign_witness::testing::AicsWitness;
use countersign_witness::{Settings, Target, targets};

// The private keys live in the signer crate (no other crate names a
// signing key); its file is compiled into these tests as it is.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../signer/src/note_keys.rs"]
pub mod note_keys;

use note_keys::{Cosigner, Ed25519Signer};

/// The test log's origin (its key's name).
pub const ORIGIN: &str = "countersign/test";

/// The backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// `on_both_backends!(name);` above `async fn name(kind: Kind)`.
#[macro_export]
macro_rules! on_both_backends {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::support::Kind::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::support::Kind::Postgres).await
            }
        }
    };
}

/// A ledger on a fresh SQLite file or PostgreSQL database.
pub struct TestLedger {
    pub dir: tempfile::TempDir,
    pub ledger: Ledger,
    pub url: String,
    pub pg: Option<TempPgDatabase>,
}

impl TestLedger {
    pub async fn on(kind: Kind) -> TestLedger {
        let dir = tempfile::tempdir().unwrap();
        let (url, pg) = match kind {
            Kind::Sqlite => (
                format!("sqlite://{}", dir.path().join("ledger.db").display()),
                None,
            ),
            Kind::Postgres => {
                let db = TempPgDatabase::create().await.unwrap();
                (db.url().to_owned(), Some(db))
            }
        };
        let ledger = Ledger::open(&url).await.unwrap();
        TestLedger {
            dir,
            ledger,
            url,
            pg,
        }
    }

    /// Reopens the ledger (a restart of the process).
    pub async fn reopen(&self) -> Ledger {
        Ledger::open(&self.url).await.unwrap()
    }

    /// Appends `n` events, sequences them and stores a checkpoint of the
    /// tree signed by [`log_key`].
    pub async fn grow(&self, n: usize) -> StoredCheckpoint {
        self.grow_labelled(n, "k").await
    }

    /// [`TestLedger::grow`] with events whose key ids start with `label`
    /// (two ledgers grown with different labels are different logs).
    pub async fn grow_labelled(&self, n: usize, label: &str) -> StoredCheckpoint {
        grow(&self.ledger, n, label).await
    }
}

/// Appends `n` events (key ids starting with `label`) to `ledger`,
/// sequences them and stores a checkpoint signed by [`log_key`].
pub async fn grow(ledger: &Ledger, n: usize, label: &str) -> StoredCheckpoint {
    for i in 0..n {
        ledger
            .record_key_event(KeyEvent::Rotated, &format!("{label}{i}"), "test")
            .await
            .unwrap();
    }
    let head = ledger.sequence_events().await.unwrap();
    let previous = ledger.latest_log_checkpoint().await.unwrap();
    let body = Checkpoint::new(ORIGIN, head.size, head.root).unwrap();
    let note = sign_note(&body.to_string(), &[&log_key()]).unwrap();
    ledger
        .store_log_checkpoint(previous.map(|c| c.size), head, &note.to_string())
        .await
        .unwrap()
}

/// The test log's key.
pub fn log_key() -> Ed25519Signer {
    Ed25519Signer::from_seed(KeyName::new(ORIGIN).unwrap(), &[7; 32])
}

/// A policy naming the test log and `witnesses` (name, key, URL), with
/// quorum `all` of them.
pub fn policy(witnesses: &[(&str, &VerifierKey, &str)]) -> String {
    let mut text = format!("log {}\n", log_key().verifier_key());
    let mut names = Vec::new();
    for (name, key, url) in witnesses {
        text.push_str(&format!("witness {name} {key} {url}\n"));
        names.push(*name);
    }
    text.push_str(&format!("group all all {}\nquorum all\n", names.join(" ")));
    text
}

/// The one target of a one-witness policy.
pub fn target(name: &str, key: &VerifierKey, url: &str) -> Target {
    targets(policy(&[(name, key, url)]).as_bytes())
        .unwrap()
        .remove(0)
}

/// Client settings for tests: plain http to loopback, a short timeout,
/// and `gap`.
pub fn settings(gap: Duration) -> Settings {
    Settings {
        trust_roots: None,
        timeout: Duration::from_secs(5),
        gap,
    }
}

/// A free loopback port (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running aics-witness trusting the test log (see
/// `countersign_witness::testing`).
pub struct RealWitness;

impl RealWitness {
    /// Starts one named `name`; `None` when it is not installed outside CI.
    pub async fn start(name: &str) -> Option<AicsWitness> {
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || AicsWitness::start(&name, &log_key().verifier_key()))
            .await
            .unwrap()
    }
}

/// How the stand-in witness answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A valid cosignature of whatever checkpoint it is sent (no checks:
    /// this is not a witness, only an answer).
    Cosign,
    /// That cosignature with one signature byte flipped.
    Corrupt,
}

/// The stand-in witness's key.
pub fn stand_in_cosigner() -> Cosigner {
    Cosigner::from_seed(KeyName::new("stand-in.test/w").unwrap(), &[9; 32])
}

/// The stand-in's cosignature line of the checkpoint in an add-checkpoint
/// request body.
fn cosign_request(body: &[u8]) -> countersign_tlog::NoteSignature {
    let text = String::from_utf8(body.to_vec()).unwrap();
    let (_, note) = text.split_once("\n\n").unwrap();
    let note = Note::parse(note.as_bytes()).unwrap();
    let checkpoint: Checkpoint = note.text().parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    stand_in_cosigner().cosign(&checkpoint, now).unwrap()
}

/// A stand-in that, at the first request, acts as if another client of
/// `ledger` had just stored and sent a newer checkpoint (it stores one of
/// 3 more events and answers 409 with its size), then cosigns.
pub async fn stand_in_overtaken(port: u16, ledger: Ledger) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let first = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let app = axum::Router::new().route(
        "/add-checkpoint",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (ledger, first) = (ledger.clone(), first.clone());
            async move {
                use axum::response::IntoResponse as _;
                if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    let newer = grow(&ledger, 3, "overtaking").await;
                    return (
                        axum::http::StatusCode::CONFLICT,
                        [("content-type", "text/x.tlog.size")],
                        format!("{}\n", newer.size),
                    )
                        .into_response();
                }
                cosign_request(&body).to_string().into_response()
            }
        }),
    );
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    })
}

/// Serves `answer` on `port` (127.0.0.1) until dropped.
pub async fn stand_in(port: u16, answer: Answer) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    let app = axum::Router::new().route(
        "/add-checkpoint",
        axum::routing::post(move |body: axum::body::Bytes| async move {
            let signature = cosign_request(&body);
            let mut line = signature.to_string();
            if answer == Answer::Corrupt {
                let bytes = signature.signature().to_vec();
                let mut flipped = bytes.clone();
                flipped[20] ^= 1;
                line = countersign_tlog::NoteSignature::new(
                    signature.name().clone(),
                    signature.id(),
                    flipped,
                )
                .to_string();
            }
            line
        }),
    );
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    })
}
