//! The challenges the signer handed out and has not seen answered yet.
//!
//! Owns: drawing a challenge's random bytes and id, storing in the ledger
//! what it was issued for and to which approver (its certificate's
//! approver path, so one approver's challenge is never another's to
//! answer), and giving each back for checking within [`CHALLENGE_TTL`].
//! The write that records the answer takes the ledger's row in its own
//! transaction (`countersign-ledger`, `ChallengeUsed` if it is gone), so a
//! challenge issued by one signer can be answered through another of the
//! same PostgreSQL ledger, and only once. A challenge asked for by the
//! wrong approver, expired, or whose answer then fails is discarded: it is
//! never given back again. Must not: verify anything (the caller does,
//! with the purpose it gets back), or keep a challenge in memory.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_ledger::{AssertionPurpose, Ledger, PasskeyChallenge};
use time::OffsetDateTime;

use super::b64;
use crate::convert::Delivery;
use crate::error::RpcError;

/// How long a challenge is accepted after it was issued.
pub(crate) const CHALLENGE_TTL: Duration = Duration::from_secs(120);

/// What a challenge was issued for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Approving `proposal_id` with this delivery into this session. The
    /// challenge is derived from the proposal's digest at issue, which the
    /// caller derives again to compare.
    Decision {
        proposal_id: String,
        delivery: Delivery,
        session: String,
    },
    /// Enrolling the passkey a browser creates with the challenge itself
    /// (the creation challenge).
    Enrol,
    /// Removing the passkey with this id (base64url, as stored).
    Remove { credential_id: String },
}

impl Purpose {
    /// The ledger's purpose, subject, delivery and session.
    fn stored(&self) -> (AssertionPurpose, &str, &'static str, &str) {
        match self {
            Purpose::Decision {
                proposal_id,
                delivery,
                session,
            } => (
                AssertionPurpose::Decision,
                proposal_id,
                super::decision::delivery_name(*delivery),
                session,
            ),
            Purpose::Enrol => (AssertionPurpose::Enrol, "", "", ""),
            Purpose::Remove { credential_id } => (AssertionPurpose::Remove, credential_id, "", ""),
        }
    }

    fn of(c: &PasskeyChallenge) -> Option<Purpose> {
        Some(match c.purpose {
            AssertionPurpose::Decision => Purpose::Decision {
                proposal_id: c.subject.clone(),
                delivery: match c.delivery.as_str() {
                    "direct" => Delivery::Direct,
                    "handoff" => Delivery::Handoff,
                    _ => return None,
                },
                session: c.session.clone(),
            },
            AssertionPurpose::Enrol => Purpose::Enrol,
            AssertionPurpose::Remove => Purpose::Remove {
                credential_id: c.subject.clone(),
            },
        })
    }
}

/// An open challenge, as the ledger holds it.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    pub(crate) purpose: Purpose,
    /// The signer's random bytes the challenge was derived from.
    pub(crate) random: [u8; 32],
    /// The challenge an assertion must carry (for an enrolment: the
    /// creation challenge).
    pub(crate) challenge: [u8; 32],
}

/// The open challenges of the ledger.
#[derive(Debug, Clone)]
pub(crate) struct Challenges {
    ledger: Ledger,
}

/// 32 bytes from the operating system's generator.
pub(crate) fn random_bytes() -> Result<[u8; 32], RpcError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
    Ok(bytes)
}

impl Challenges {
    /// The open challenges stored in `ledger`.
    pub(crate) fn in_ledger(ledger: Ledger) -> Challenges {
        Challenges { ledger }
    }

    /// Stores a challenge issued to `approver` (an approver path) now and
    /// returns its id (16 random bytes, hex).
    pub(crate) async fn insert(
        &self,
        approver: &str,
        purpose: Purpose,
        random: [u8; 32],
        challenge: [u8; 32],
    ) -> Result<String, RpcError> {
        let mut id_bytes = [0u8; 16];
        getrandom::fill(&mut id_bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
        let id = hex::encode(id_bytes);
        let (kind, subject, delivery, session) = purpose.stored();
        self.ledger
            .issue_passkey_challenge(&PasskeyChallenge {
                id: id.clone(),
                challenge: b64(&challenge),
                random: b64(&random),
                approver: approver.to_owned(),
                purpose: kind,
                subject: subject.to_owned(),
                delivery: delivery.to_owned(),
                session: session.to_owned(),
                expires_at: OffsetDateTime::now_utc() + CHALLENGE_TTL,
            })
            .await?;
        Ok(id)
    }

    /// The challenge `id`, if `approver` (an approver path) was issued it
    /// and it has not expired; otherwise it is discarded (asked for by
    /// the wrong approver, it is gone for the right one too) and
    /// `challenge_unknown`. The recording write takes it; the caller
    /// discards it ([`Challenges::discard`]) if the answer fails first.
    pub(crate) async fn open(&self, id: &str, approver: &str) -> Result<Open, RpcError> {
        let stored = self.ledger.passkey_challenge(id).await?;
        match stored {
            Some(c) if c.approver == approver && OffsetDateTime::now_utc() < c.expires_at => {
                open_of(c)
            }
            Some(_) => {
                self.discard(id).await;
                Err(RpcError::ChallengeUnknown)
            }
            None => Err(RpcError::ChallengeUnknown),
        }
    }

    /// Forgets the challenge `id`: its answer failed, and it is never
    /// accepted afterwards. Best effort: a ledger that cannot be written
    /// is logged, and the challenge still expires.
    pub(crate) async fn discard(&self, id: &str) {
        if let Err(e) = self.ledger.discard_passkey_challenge(id).await {
            tracing::warn!(challenge_id = %id, error = %e, "a passkey challenge was not discarded");
        }
    }
}

/// A stored challenge as the checks use it.
fn open_of(c: PasskeyChallenge) -> Result<Open, RpcError> {
    let corrupt = || RpcError::Internal(format!("stored passkey challenge {} is malformed", c.id));
    let bytes = |text: &str| -> Result<[u8; 32], RpcError> {
        URL_SAFE_NO_PAD
            .decode(text)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(corrupt)
    };
    Ok(Open {
        purpose: Purpose::of(&c).ok_or_else(corrupt)?,
        random: bytes(&c.random)?,
        challenge: bytes(&c.challenge)?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn ledger() -> (tempfile::TempDir, Ledger) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        let ledger = Ledger::open(&url).await.unwrap();
        (dir, ledger)
    }

    fn remove() -> Purpose {
        Purpose::Remove {
            credential_id: "AQ".into(),
        }
    }

    #[tokio::test]
    async fn a_challenge_is_given_back_only_to_its_approver() {
        let (_dir, ledger) = ledger().await;
        let store = Challenges::in_ledger(ledger.clone());
        let id = store
            .insert("pr_a", remove(), [1; 32], [2; 32])
            .await
            .unwrap();
        assert_eq!(
            store.open(&id, "pr_b").await.unwrap_err(),
            RpcError::ChallengeUnknown
        );
        let alices = store
            .insert("pr_a/alice", remove(), [1; 32], [3; 32])
            .await
            .unwrap();
        assert_eq!(
            store.open(&alices, "pr_a/bob").await.unwrap_err(),
            RpcError::ChallengeUnknown,
            "another approver of the same principal"
        );
        // Asked for by the wrong approver, it is gone for the right one too.
        assert_eq!(
            store.open(&id, "pr_a").await.unwrap_err(),
            RpcError::ChallengeUnknown
        );
        let id = store
            .insert("pr_a", remove(), [1; 32], [4; 32])
            .await
            .unwrap();
        let open = store.open(&id, "pr_a").await.unwrap();
        assert_eq!((open.challenge, open.random), ([4; 32], [1; 32]));
        assert_eq!(open.purpose, remove());
        store.discard(&id).await;
        assert_eq!(
            store.open(&id, "pr_a").await.unwrap_err(),
            RpcError::ChallengeUnknown
        );
        assert_eq!(
            store.open("nope", "pr_a").await.unwrap_err(),
            RpcError::ChallengeUnknown
        );
    }

    #[tokio::test]
    async fn refuses_an_expired_challenge_and_forgets_it() {
        let (_dir, ledger) = ledger().await;
        let store = Challenges::in_ledger(ledger.clone());
        let stale = PasskeyChallenge {
            id: "stale".into(),
            challenge: b64(&[5; 32]),
            random: b64(&[5; 32]),
            approver: "pr_a".into(),
            purpose: AssertionPurpose::Enrol,
            subject: String::new(),
            delivery: String::new(),
            session: String::new(),
            expires_at: OffsetDateTime::now_utc() - time::Duration::seconds(1),
        };
        ledger.issue_passkey_challenge(&stale).await.unwrap();
        assert_eq!(
            store.open("stale", "pr_a").await.unwrap_err(),
            RpcError::ChallengeUnknown
        );
        assert_eq!(ledger.passkey_challenge("stale").await.unwrap(), None);
    }
}
