//! Shared by the notification tests: an in-process signer that records
//! notifications (`[notify]` in its configuration), and the notify process
//! (`countersign_notify::Notifier`, what `countersign notify serve` runs)
//! on the same home, taking them with the notifier certificate and
//! delivering them; its status as `countersign notify status` reads it.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;

use countersign_identity::Config;
use countersign_notify::status::{ChannelStatus, Status};
use countersign_notify::{Notifier, NotifyError};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;

/// A signer and a notify process on one home.
pub struct Notifying {
    pub signer: TestSigner,
    notifier: Option<Notifier>,
}

impl Notifying {
    /// A signer configured with `config` (which holds `[notify]`), and the
    /// notify process started on its home.
    pub async fn start(config: &str) -> Notifying {
        Notifying::start_with_registry(Registry::default_toml(), config).await
    }

    /// [`Notifying::start`] with `registry` as the operations.
    pub async fn start_with_registry(registry: &str, config: &str) -> Notifying {
        let signer = TestSigner::start_configured(registry, None, config)
            .await
            .unwrap();
        let notifier = start_notifier(&signer).await.unwrap();
        Notifying {
            signer,
            notifier: Some(notifier),
        }
    }

    /// Stops the notify process and starts a new one on the same home, as
    /// a restarted `countersign notify serve` would: with nothing of the
    /// old one's memory.
    pub async fn restart_notifier(&mut self) {
        if let Some(notifier) = self.notifier.take() {
            notifier.stop().await;
        }
        self.notifier = Some(start_notifier(&self.signer).await.unwrap());
    }

    /// What `countersign notify status` reads (without asking the signer).
    pub fn status(&self) -> Status {
        let config = Config::load(self.signer.home()).unwrap();
        countersign_notify::status::local(self.signer.home(), &config).unwrap()
    }

    /// The first channel's status once `done` holds for it (every 20 ms,
    /// for at most 20 s).
    pub async fn first_channel_once(&self, done: impl Fn(&ChannelStatus) -> bool) -> ChannelStatus {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status = self.status();
            if let Some(first) = status.channels.first()
                && done(first)
            {
                return first.clone();
            }
            assert!(Instant::now() < deadline, "{status:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The notify process on `signer`'s home, as its configuration says.
pub async fn start_notifier(signer: &TestSigner) -> Result<Notifier, NotifyError> {
    let config = Config::load(signer.home()).unwrap();
    Notifier::start(signer.home(), &config).await
}

/// Why a notify process with `config` does not start (its signer does:
/// the signer reads none of the channels' settings or files).
pub async fn start_refusal(config: &str) -> String {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, config)
        .await
        .unwrap();
    match start_notifier(&signer).await {
        Err(e) => e.to_string(),
        Ok(_) => panic!("the notify process started with {config}"),
    }
}

/// A 0600 file holding the secret, in a directory that outlives the test.
pub fn secret_file(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&path, SECRET.as_bytes()).unwrap();
    path
}

/// `[notify]` with a webhook to `url`.
pub fn webhook_config(url: &str, secret: &std::path::Path, extra: &str) -> String {
    format!(
        "\n[console]\naddr = \"127.0.0.1:7999\"\n[notify]\npoll_ms = 20\nretry_initial_ms = 50\nretry_max_ms = 200\n{extra}\n[notify.webhook]\nurl = \"{url}\"\nsecret_file = \"{}\"\n",
        secret.display()
    )
}

/// Whether `request` (bytes read so far) holds a whole HTTP/1.1 request:
/// its head, and as many body bytes as its Content-Length says.
pub fn request_complete(request: &[u8]) -> bool {
    let text = String::from_utf8_lossy(request);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .and_then(|v| v.trim().parse::<usize>().ok())
        })
        .unwrap_or(0);
    body.len() >= length
}

/// The webhook secret of these tests (24 bytes of key).
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One request as the sink received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }

    /// Checks the Standard Webhooks signature with the shared secret:
    /// HMAC-SHA256 over `id.timestamp.body`, `v1,<base64>`, a timestamp
    /// within five minutes of now.
    pub fn signature_is_valid(&self) -> bool {
        let key = base64::engine::general_purpose::STANDARD
            .decode(SECRET.trim_start_matches("whsec_"))
            .unwrap();
        let id = self.header("webhook-id");
        let timestamp = self.header("webhook-timestamp");
        let Ok(sent_at) = timestamp.parse::<i64>() else {
            return false;
        };
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        if (now - sent_at).abs() > 300 {
            return false;
        }
        let mut signed = format!("{id}.{timestamp}.").into_bytes();
        signed.extend_from_slice(&self.body);
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        self.header("webhook-signature")
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .any(|tag| ring::hmac::verify(&key, &signed, &tag).is_ok())
    }
}

/// The sink's state: what it received, and how many requests it still
/// answers 500 before it answers 204.
#[derive(Default)]
pub struct Sink {
    pub received: Mutex<Vec<Received>>,
    pub failures_left: Mutex<u32>,
}

async fn receive(State(sink): State<Arc<Sink>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    sink.received.lock().unwrap().push(Received {
        at: Instant::now(),
        headers,
        body,
    });
    let mut left = sink.failures_left.lock().unwrap();
    if *left > 0 {
        *left -= 1;
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    }
}

/// An HTTP sink on 127.0.0.1:0 (axum) that fails `failures` times first.
pub async fn start_sink(failures: u32) -> (SocketAddr, Arc<Sink>) {
    let sink = Arc::new(Sink {
        failures_left: Mutex::new(failures),
        ..Sink::default()
    });
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(Arc::clone(&sink));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, sink)
}
