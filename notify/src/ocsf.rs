//! `[notify.ocsf]`: every ledger event, streamed to a collector as OCSF
//! 1.8.0 API Activity events (the same mapping as `countersign audit export
//! --format ocsf`, the `countersign-ocsf` crate), one JSON object per line
//! (`application/x-ndjson`), at most `batch` per POST, in transparency-log
//! leaf order.
//!
//! Owns: the cursor (`notify/ocsf-cursor`, the next leaf to send, 0600,
//! replaced atomically only after a 2xx answer), so that a restart goes on
//! where the collector's last acknowledged POST ended: no event is skipped,
//! and one is sent twice only when a POST's answer was lost (each carries
//! its hash as `metadata.uid`, for the collector to drop a repeat). A
//! failed POST is retried with the `[notify]` backoff, without end: the
//! stream waits for the collector, it never drops events.
//!
//! Must not: send the `authorization_file`'s value anywhere but over
//! verified TLS (an https `url` with `trust_roots`); refused at start
//! otherwise, since any local user can hold a loopback port while the
//! collector restarts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use countersign_identity::files::{read_private, replace_private_locked};
use countersign_identity::{Home, IdentityError, NotifyOcsfConfig, RetryConfig};
use countersign_outbound::Target;
use countersign_outbound::header::{
    AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue, USER_AGENT,
};
use countersign_proto::v1 as wire;
use countersign_registry::WebhookUrl;
use zeroize::Zeroizing;

use crate::NotifyError;
use crate::retry::{jitter, next_delay_ms};
use crate::signer::SignerLink;

/// The cursor's file in the notify directory.
const CURSOR_FILE: &str = "ocsf-cursor";

/// The OCSF stream's settings, checked at start.
#[derive(Debug)]
pub(crate) struct OcsfStream {
    url: WebhookUrl,
    trust_roots: Option<PathBuf>,
    timeout: Duration,
    authorization: Option<Zeroizing<String>>,
    batch: u32,
    cursor: PathBuf,
    /// The next leaf to send, once read from `cursor` (kept here so that
    /// a round reads the file only at start).
    next: Option<u64>,
}

impl OcsfStream {
    /// The stream `config` describes for `home`, or why it cannot run.
    pub(crate) fn from_config(
        config: &NotifyOcsfConfig,
        home: &Home,
    ) -> Result<OcsfStream, NotifyError> {
        let refuse = |detail: String| NotifyError::Config(format!("notify.ocsf.{detail}"));
        let url = crate::webhook::checked_url(
            &config.url,
            config.trust_roots.as_deref(),
            "collector",
            refuse,
        )?;
        let authorization = match &config.authorization_file {
            None => None,
            Some(_) if !url.is_https() => {
                return Err(refuse(format!(
                    "authorization_file is sent only over verified TLS (an https url with trust_roots): over plain http it would go in clear to whoever holds {}, and any local user can hold a loopback port while the collector restarts",
                    config.url
                )));
            }
            Some(path) => Some(read_authorization(path).map_err(refuse)?),
        };
        let dir = home
            .ensure_notify_dir()
            .map_err(|e| NotifyError::State(e.to_string()))?;
        Ok(OcsfStream {
            url,
            trust_roots: config.trust_roots.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            authorization,
            batch: config.batch,
            cursor: dir.join(CURSOR_FILE),
            next: None,
        })
    }

    /// Streams until `stopped` resolves: a round every `poll` while the
    /// collector keeps up, at once while a full batch came back, and after
    /// the backoff of `retry` (never giving up) while rounds fail.
    pub(crate) async fn run(
        mut self,
        signer: std::sync::Arc<SignerLink>,
        poll: Duration,
        retry: RetryConfig,
        stopped: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(stopped);
        let mut failures = 0_u32;
        loop {
            let wait = match self.round(&signer).await {
                Ok(sent) if sent == self.batch as usize => {
                    failures = 0;
                    Duration::ZERO
                }
                Ok(_) => {
                    failures = 0;
                    poll
                }
                Err(e) => {
                    failures = failures.saturating_add(1);
                    // The last step repeats: the stream never gives up.
                    let step = failures.min(retry.max_attempts.saturating_sub(1).max(1));
                    let ms = next_delay_ms(&retry, step, jitter()).unwrap_or(retry.max_ms);
                    tracing::warn!(attempt = failures, retry_in_ms = ms, "OCSF stream: {e}");
                    Duration::from_millis(ms)
                }
            };
            tokio::select! {
                () = &mut stopped => return,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One round: the events after the cursor, sent in one POST; the
    /// cursor moves past them once the collector answered 2xx. How many
    /// were sent.
    pub(crate) async fn round(&mut self, signer: &SignerLink) -> Result<usize, String> {
        let from = match self.next {
            Some(next) => next,
            None => self.load_cursor()?,
        };
        let events = signer.audit_events(from, self.batch).await?;
        let Some(last) = events.last().map(|e| e.leaf_index) else {
            return Ok(0);
        };
        let mut next = from;
        for event in &events {
            if event.leaf_index < next {
                return Err(format!(
                    "the signer answered leaf {} where leaf {next} or later was due",
                    event.leaf_index
                ));
            }
            next = event.leaf_index.saturating_add(1);
        }
        let mut body = String::new();
        for event in &events {
            body.push_str(&to_ocsf(event)?.to_string());
            body.push('\n');
        }
        self.post(body).await?;
        self.save_cursor(last.saturating_add(1))?;
        self.next = Some(last.saturating_add(1));
        tracing::debug!(
            events = events.len(),
            next_leaf = last + 1,
            "OCSF events sent"
        );
        Ok(events.len())
    }

    async fn post(&self, body: String) -> Result<(), String> {
        let mut headers = HeaderMap::new();
        headers.insert(USER_AGENT, HeaderValue::from_static("countersign-notify/1"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        );
        if let Some(value) = &self.authorization {
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| "the authorization_file is not one header value".to_owned())?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let target = Target {
            url: &self.url,
            trust_roots: self.trust_roots.as_deref().map(Path::new),
            timeout: self.timeout,
        };
        crate::webhook::post_expecting_2xx(target, headers, body, "collector").await
    }

    /// The next leaf to send (0 when nothing was sent yet).
    fn load_cursor(&self) -> Result<u64, String> {
        match read_private(&self.cursor) {
            Ok(bytes) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|text| text.trim().parse().ok())
                .ok_or_else(|| format!("{} is not a leaf index", self.cursor.display())),
            Err(IdentityError::Missing(_)) => Ok(0),
            Err(e) => Err(e.to_string()),
        }
    }

    fn save_cursor(&self, next: u64) -> Result<(), String> {
        let mut lock = self.cursor.clone().into_os_string();
        lock.push(".lock");
        replace_private_locked(
            &self.cursor,
            Path::new(&lock),
            |_| -> Result<Vec<u8>, IdentityError> { Ok(format!("{next}\n").into_bytes()) },
        )
        .map_err(|e| e.to_string())
    }
}

/// The `Authorization` value in `path` (0600), one line.
fn read_authorization(path: &Path) -> Result<Zeroizing<String>, String> {
    let bytes = read_private(path).map_err(|e| format!("authorization_file: {e}"))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| format!("authorization_file {} is not UTF-8", path.display()))?;
    let value = text.trim();
    if value.is_empty() || value.contains(['\r', '\n']) || HeaderValue::from_str(value).is_err() {
        return Err(format!(
            "authorization_file {} must hold one header value on one line",
            path.display()
        ));
    }
    Ok(Zeroizing::new(value.to_owned()))
}

/// One event of the signer's answer as OCSF.
fn to_ocsf(event: &wire::AuditEvent) -> Result<serde_json::Value, String> {
    let details = serde_json::from_str(&event.details_json)
        .map_err(|e| format!("event {}: details are not JSON: {e}", event.id))?;
    let record = countersign_ocsf::Event {
        id: event.id,
        chain: event.chain.clone(),
        seq: event.seq,
        at: event.at.clone(),
        kind: event.kind.clone(),
        proposal_id: Some(event.proposal_id.clone()).filter(|p| !p.is_empty()),
        actor: event.actor.clone(),
        details,
        prev_hash: event.prev_hash.clone(),
        hash: event.hash.clone(),
    };
    let context = countersign_ocsf::Context {
        operation: Some(event.operation.as_str()).filter(|o| !o.is_empty()),
        leaf_index: Some(event.leaf_index),
    };
    countersign_ocsf::to_ocsf(&record, context).map_err(|e| e.to_string())
}
