//! One witness's queue: what it has acknowledged, what is still to send,
//! and the rounds that send it (c2sp.org/tlog-witness `add-checkpoint`).
//!
//! A round sends the latest stored checkpoint, from the size the witness
//! last cosigned, with a consistency proof from the ledger; a 409 names
//! the witness's size, and the round resends from it with a fresh proof.
//! The first round after a start sends `old 0`, so the witness's size is
//! learnt (a 409) before anything else and compared with the log: a
//! witness that cosigned a size beyond our latest checkpoint, or that
//! refuses our consistency proof from its size (422), has seen a log we
//! no longer are: the log was rolled back or forked. That is recorded
//! (`tlog_witness_rollback`), logged as an error, and the witness is
//! halted: nothing more is sent to it until an operator has looked.
//!
//! Every cosignature is checked by the ledger against the witness's key
//! from the policy, over exactly the checkpoint sent, before it is
//! stored; one that does not verify is refused and not stored. A witness
//! that has not cosigned what it was sent for `gap` (unreachable, or
//! answering anything but a usable cosignature) gets a `tlog_witness_gap`
//! event, once per outage, and a `tlog_witness_back` event when it
//! cosigns again. The state lives in the ledger (`tlog_witnesses`), so a
//! restart resumes where the last process stopped.

use std::time::Duration;

use countersign_ledger::witness::{WITNESS_BACK_EVENT, WITNESS_GAP_EVENT, WITNESS_ROLLBACK_EVENT};
use countersign_ledger::{
    Lease, Ledger, LedgerError, StoredCheckpoint, WitnessState, check_cosignature,
};
use countersign_outbound::{Bytes, Target as PostTarget, header};
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::targets::Target;
use countersign_tlog::witness::{Reply, parse_reply, request_body};

/// How many of a reply's lines by the witness's name are tried at most.
const MAX_LINES_TRIED: usize = 4;

/// Why a witness ahead of the log is a rollback.
const AHEAD: &str = "the witness cosigned a size beyond the log's latest checkpoint";

/// How many add-checkpoint requests one round sends at most (a 409 and
/// its resend, and a second 409 if the witness moved meanwhile).
const MAX_EXCHANGES: usize = 3;

/// How a client sends.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The PEM bundle trusted for https witnesses.
    pub trust_roots: Option<std::path::PathBuf>,
    /// The bound on one exchange.
    pub timeout: Duration,
    /// How long a witness may fail before the gap event.
    pub gap: Duration,
}

/// One add-checkpoint request and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The `old` size sent.
    pub old: u64,
    /// The checkpoint size sent.
    pub size: u64,
    /// The HTTP status, or `None` if no answer came.
    pub status: Option<u16>,
}

/// How a round ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No checkpoint is stored yet.
    NoCheckpoint,
    /// The witness has cosigned the latest checkpoint already.
    UpToDate {
        /// The latest checkpoint's size.
        size: u64,
    },
    /// The witness cosigned the latest checkpoint and it was stored.
    Cosigned {
        /// The checkpoint's size.
        size: u64,
    },
    /// The witness did not cosign (unreachable, refused, or its answer
    /// did not verify); the round is retried.
    Failed(String),
    /// The witness shows a rolled-back or forked log: recorded and halted.
    RolledBack {
        /// The size the witness cosigned.
        witness_size: u64,
        /// Our latest checkpoint's size.
        log_size: u64,
        /// Why.
        reason: String,
    },
    /// Halted earlier for a rollback: nothing is sent.
    Halted(String),
}

/// What a round did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Round {
    /// Each request sent, in order.
    pub exchanges: Vec<Exchange>,
    /// How it ended.
    pub outcome: Outcome,
}

/// One witness's client.
#[derive(Debug)]
pub struct WitnessClient {
    ledger: Ledger,
    target: Target,
    settings: Settings,
    state: WitnessState,
    /// Whether the witness's size was learnt since this process started.
    probed: bool,
    /// The witnessing chore's lease every write is made under, when this
    /// client runs as the chore (`crate::Witnessing`); `None` in tests.
    fence: Option<Lease>,
}

impl WitnessClient {
    /// The client of `target`, resuming its state from the ledger.
    pub async fn load(
        ledger: Ledger,
        target: Target,
        settings: Settings,
    ) -> Result<WitnessClient, LedgerError> {
        let key = target.key.to_string();
        let state = ledger
            .witness_states()
            .await?
            .into_iter()
            .find(|s| s.witness_key == key)
            .unwrap_or_else(|| WitnessState::new(&target.key));
        if let Some(reason) = &state.halted {
            tracing::error!(witness = %target.name, %reason, "this witness showed a rolled-back or forked log: nothing is sent to it (docs/audit.md, Witnesses)");
        }
        Ok(WitnessClient {
            ledger,
            target,
            settings,
            state,
            probed: false,
            fence: None,
        })
    }

    /// Make every write of the next rounds under `lease` (`LeaseLost`, and
    /// nothing written, once another holder took the chore).
    pub fn under(&mut self, lease: Option<Lease>) {
        self.fence = lease;
    }

    /// Saves the state, under the fence if any.
    async fn save_state(&self) -> Result<(), LedgerError> {
        match &self.fence {
            Some(lease) => {
                self.ledger
                    .save_witness_state_under(lease, &self.state)
                    .await
            }
            None => self.ledger.save_witness_state(&self.state).await,
        }
    }

    /// Saves the state with an event of `kind`, under the fence if any.
    async fn record(&self, kind: &str, details: &serde_json::Value) -> Result<(), LedgerError> {
        match &self.fence {
            Some(lease) => {
                self.ledger
                    .record_witness_event_under(lease, &self.state, kind, details)
                    .await
            }
            None => {
                self.ledger
                    .record_witness_event(&self.state, kind, details)
                    .await
            }
        }
    }

    /// The state as last saved.
    pub fn state(&self) -> &WitnessState {
        &self.state
    }

    /// The witness.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// One round: send what is still to send, if anything.
    pub async fn round(&mut self) -> Result<Round, LedgerError> {
        let mut exchanges = Vec::new();
        let outcome = self.send(&mut exchanges).await?;
        match &outcome {
            Outcome::Cosigned { .. } | Outcome::UpToDate { .. } => self.succeeded().await?,
            Outcome::Failed(reason) => self.failed(reason).await?,
            Outcome::NoCheckpoint | Outcome::RolledBack { .. } | Outcome::Halted(_) => {}
        }
        Ok(Round { exchanges, outcome })
    }

    async fn send(&mut self, exchanges: &mut Vec<Exchange>) -> Result<Outcome, LedgerError> {
        if let Some(reason) = &self.state.halted {
            return Ok(Outcome::Halted(reason.clone()));
        }
        let Some(mut latest) = self.ledger.latest_log_checkpoint().await? else {
            return Ok(Outcome::NoCheckpoint);
        };
        // Learn the witness's size once per start (and while it fails).
        let mut old = if self.probed {
            self.state.acknowledged
        } else {
            0
        };
        if self.probed && latest.size <= self.state.acknowledged {
            return Ok(Outcome::UpToDate { size: latest.size });
        }
        while exchanges.len() < MAX_EXCHANGES {
            if old > latest.size {
                return self.rolled_back(old, &latest, AHEAD).await;
            }
            let proof = if old == 0 || old == latest.size {
                Vec::new()
            } else {
                self.ledger.consistency_proof(old, latest.size).await?
            };
            let Some(body) = request_body(old, &proof, &latest.note) else {
                return Ok(Outcome::Failed("the consistency proof is too long".into()));
            };
            let answer = self.post(body).await;
            exchanges.push(Exchange {
                old,
                size: latest.size,
                status: answer.as_ref().ok().map(|a| a.status),
            });
            let answer = match answer {
                Ok(answer) => answer,
                Err(e) => return Ok(Outcome::Failed(e.to_string())),
            };
            self.probed = true;
            match parse_reply(answer.status, answer.content_type.as_deref(), &answer.body) {
                Reply::Cosigned(lines) => return self.store(&latest, &lines).await,
                Reply::Conflict(size) if size > latest.size => {
                    // Another client of this ledger may have sent a newer
                    // checkpoint meanwhile: only a size beyond every stored
                    // checkpoint is a rollback.
                    match self.ledger.latest_log_checkpoint().await? {
                        Some(newer) if newer.size >= size => {
                            latest = newer;
                            old = size;
                        }
                        _ => {
                            return self.rolled_back(size, &latest, AHEAD).await;
                        }
                    }
                }
                Reply::Conflict(size) if size == old => {
                    return Ok(Outcome::Failed(format!(
                        "409 naming the size sent ({size})"
                    )));
                }
                Reply::Conflict(size) => {
                    if size < self.state.acknowledged {
                        tracing::warn!(witness = %self.target.name, size, acknowledged = self.state.acknowledged, "the witness reports a smaller size than it cosigned before: it lost its state");
                    }
                    if size == latest.size && self.has_cosignature(size).await? {
                        self.acknowledge(size).await?;
                        return Ok(Outcome::UpToDate { size });
                    }
                    old = size;
                }
                Reply::Refused { status: 422, .. } if old > 0 => {
                    return self.rolled_back(old, &latest, "the witness refused the log's consistency proof from the size it cosigned (422)").await;
                }
                Reply::Refused { status, reason } => {
                    return Ok(Outcome::Failed(format!("{status}: {reason}")));
                }
            }
        }
        Ok(Outcome::Failed("the witness's size kept changing".into()))
    }

    async fn post(
        &self,
        body: String,
    ) -> Result<countersign_outbound::Answer, countersign_outbound::PostError> {
        let mut headers = header::HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        let target = PostTarget {
            url: &self.target.url,
            trust_roots: self.settings.trust_roots.as_deref(),
            timeout: self.settings.timeout,
        };
        countersign_outbound::post(target, headers, Bytes::from(body)).await
    }

    async fn has_cosignature(&self, size: u64) -> Result<bool, LedgerError> {
        let key = self.target.key.to_string();
        Ok(self
            .ledger
            .cosignatures(size)
            .await?
            .iter()
            .any(|c| c.witness_key == key))
    }

    /// Stores the line among `lines` by this witness's key (lines by other
    /// keys are ignored, as the protocol says).
    async fn store(
        &mut self,
        latest: &StoredCheckpoint,
        lines: &[String],
    ) -> Result<Outcome, LedgerError> {
        let prefix = format!("\u{2014} {} ", self.target.key.name());
        let mut refusal = format!("no cosignature line by {}", self.target.key);
        // A few lines by this witness's name at most (a witness may hold
        // more than one key); each is checked here first, so a reply full
        // of bad lines costs no write transaction. The ledger checks again.
        for line in lines
            .iter()
            .filter(|l| l.starts_with(&prefix))
            .take(MAX_LINES_TRIED)
        {
            if let Err(reason) = check_cosignature(&latest.note, &self.target.key, line) {
                tracing::error!(witness = %self.target.name, size = latest.size, %reason, "the witness's cosignature is refused and not stored");
                refusal = format!("cosignature refused: {reason}");
                continue;
            }
            let stored = match &self.fence {
                Some(lease) => {
                    self.ledger
                        .store_cosignature_under(lease, latest.size, &self.target.key, line)
                        .await
                }
                None => {
                    self.ledger
                        .store_cosignature(latest.size, &self.target.key, line)
                        .await
                }
            };
            match stored {
                Ok(_) => {
                    self.acknowledge(latest.size).await?;
                    return Ok(Outcome::Cosigned { size: latest.size });
                }
                Err(LedgerError::CosignatureRefused { reason, .. }) => {
                    tracing::error!(witness = %self.target.name, size = latest.size, %reason, "the witness's cosignature is refused and not stored");
                    refusal = format!("cosignature refused: {reason}");
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Outcome::Failed(refusal))
    }

    async fn acknowledge(&mut self, size: u64) -> Result<(), LedgerError> {
        if size > self.state.acknowledged {
            self.state.acknowledged = size;
            self.save_state().await?;
        }
        Ok(())
    }

    async fn rolled_back(
        &mut self,
        witness_size: u64,
        latest: &StoredCheckpoint,
        reason: &str,
    ) -> Result<Outcome, LedgerError> {
        let tree = self.ledger.tree_head().await?.size;
        tracing::error!(
            witness = %self.target.name,
            witness_size,
            log_size = latest.size,
            tree_size = tree,
            reason,
            "ROLLED-BACK OR FORKED LOG: a witness has seen a log this ledger no longer is; nothing more is sent to it (docs/audit.md, Witnesses)"
        );
        self.state.halted = Some(format!(
            "{reason}: witness size {witness_size}, log checkpoint size {}, tree size {tree}",
            latest.size
        ));
        let details = json!({
            "witness": self.target.name,
            "key": self.target.key.to_string(),
            "witness_size": witness_size,
            "log_size": latest.size,
            "tree_size": tree,
            "reason": reason,
        });
        self.record(WITNESS_ROLLBACK_EVENT, &details).await?;
        Ok(Outcome::RolledBack {
            witness_size,
            log_size: latest.size,
            reason: reason.to_owned(),
        })
    }

    async fn succeeded(&mut self) -> Result<(), LedgerError> {
        let Some(since) = self.state.unreachable_since.take() else {
            return Ok(());
        };
        if std::mem::take(&mut self.state.gap_recorded) {
            tracing::info!(witness = %self.target.name, %since, "the witness cosigns again");
            let details = json!({
                "witness": self.target.name,
                "key": self.target.key.to_string(),
                "since": since,
            });
            self.record(WITNESS_BACK_EVENT, &details).await
        } else {
            self.save_state().await
        }
    }

    async fn failed(&mut self, reason: &str) -> Result<(), LedgerError> {
        // Said once per outage; the gap event, if it lasts, is an error.
        if self.state.unreachable_since.is_none() {
            tracing::warn!(witness = %self.target.name, %reason, "the witness did not cosign; retrying");
        } else {
            tracing::debug!(witness = %self.target.name, %reason, "the witness did not cosign; retrying");
        }
        let now = OffsetDateTime::now_utc()
            .replace_nanosecond(0)
            .unwrap_or(OffsetDateTime::UNIX_EPOCH);
        let Some(since) = &self.state.unreachable_since else {
            self.state.unreachable_since = Some(rfc3339(now));
            return self.save_state().await;
        };
        if self.state.gap_recorded {
            return Ok(());
        }
        let started = OffsetDateTime::parse(since, &Rfc3339).unwrap_or(now);
        if now - started < self.settings.gap {
            return Ok(());
        }
        tracing::error!(witness = %self.target.name, %since, %reason, "the witness has not cosigned for the gap interval: recorded as a gap");
        self.state.gap_recorded = true;
        let details = json!({
            "witness": self.target.name,
            "key": self.target.key.to_string(),
            "since": since,
            "gap_secs": self.settings.gap.as_secs(),
            "error": reason,
        });
        self.record(WITNESS_GAP_EVENT, &details).await
    }
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}
