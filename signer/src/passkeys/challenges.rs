//! The challenges the signer handed out and has not seen answered yet.
//!
//! Owns: drawing a challenge's random bytes and id, remembering what it was
//! issued for and to which approver (its certificate's approver path, so
//! one approver's challenge is never another's to answer), and giving each back at most once, within
//! [`CHALLENGE_TTL`]. Must not: verify anything (the caller does, with the
//! purpose it gets back), or keep a challenge after it was taken, even
//! when the answer then fails. Held in memory: a restart forgets every
//! open challenge, which only makes the person ask again. The ledger's
//! unique `challenge` column refuses an answered challenge for good.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use countersign_verifier::{ProposalId, Session};
use countersign_webauthn::challenge::ProposalDigest;

use crate::convert::Delivery;
use crate::error::RpcError;

/// How long a challenge is accepted after it was issued.
pub(crate) const CHALLENGE_TTL: Duration = Duration::from_secs(120);
/// At most this many open challenges; the oldest goes first beyond it.
const MAX_OPEN: usize = 1024;

/// What a challenge was issued for.
#[derive(Debug, Clone)]
pub(crate) enum Purpose {
    /// Approving `proposal_id` with this delivery into this session, whose
    /// facts hashed to `digest` when the challenge was issued.
    Decision {
        proposal_id: ProposalId,
        delivery: Delivery,
        session: Session,
        digest: ProposalDigest,
    },
    /// Enrolling the passkey a browser creates with `creation_challenge`.
    Enrol { creation_challenge: [u8; 32] },
    /// Removing the passkey with this id.
    Remove { credential_id: Vec<u8> },
}

/// An open challenge.
#[derive(Debug, Clone)]
pub(crate) struct Open {
    /// The approver path (`<principal>` or `<principal>/<name>`) of the
    /// certificate that asked for it.
    pub(crate) approver: String,
    pub(crate) purpose: Purpose,
    /// The signer's random bytes the challenge was derived from.
    pub(crate) random: [u8; 32],
    /// The challenge an assertion must carry (for an enrolment: the
    /// authorization challenge).
    pub(crate) challenge: [u8; 32],
    issued: Instant,
}

/// Open challenges by id.
#[derive(Debug, Default)]
pub(crate) struct Challenges {
    open: Mutex<HashMap<String, Open>>,
}

/// 32 bytes from the operating system's generator.
pub(crate) fn random_bytes() -> Result<[u8; 32], RpcError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
    Ok(bytes)
}

impl Challenges {
    /// Remembers a challenge issued to `approver` (an approver path) and
    /// returns its id (16 random bytes, hex).
    pub(crate) fn insert(
        &self,
        approver: &str,
        purpose: Purpose,
        random: [u8; 32],
        challenge: [u8; 32],
    ) -> Result<String, RpcError> {
        let mut id_bytes = [0u8; 16];
        getrandom::fill(&mut id_bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
        let id = hex::encode(id_bytes);
        let mut open = self.lock();
        let now = Instant::now();
        open.retain(|_, c| now.duration_since(c.issued) < CHALLENGE_TTL);
        if open.len() >= MAX_OPEN
            && let Some(oldest) = open
                .iter()
                .min_by_key(|(_, c)| c.issued)
                .map(|(id, _)| id.clone())
        {
            open.remove(&oldest);
        }
        open.insert(
            id.clone(),
            Open {
                approver: approver.to_owned(),
                purpose,
                random,
                challenge,
                issued: now,
            },
        );
        Ok(id)
    }

    /// Takes the challenge `id` if `approver` (an approver path) was issued
    /// it and it has not expired. It is gone afterwards, whatever the
    /// caller then finds.
    pub(crate) fn take(&self, id: &str, approver: &str) -> Result<Open, RpcError> {
        let taken = self.lock().remove(id);
        match taken {
            Some(open) if open.approver == approver && open.issued.elapsed() < CHALLENGE_TTL => {
                Ok(open)
            }
            _ => Err(RpcError::ChallengeUnknown),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        // A panic while holding the lock leaves a map that is still
        // consistent (every operation is a single insert or remove).
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn remove() -> Purpose {
        Purpose::Remove {
            credential_id: vec![1],
        }
    }

    #[test]
    fn a_challenge_is_given_back_once_and_only_to_its_approver() {
        let store = Challenges::default();
        let id = store.insert("pr_a", remove(), [1; 32], [2; 32]).unwrap();
        assert_eq!(
            store.take(&id, "pr_b").unwrap_err(),
            RpcError::ChallengeUnknown
        );
        let alices = store
            .insert("pr_a/alice", remove(), [1; 32], [2; 32])
            .unwrap();
        assert_eq!(
            store.take(&alices, "pr_a/bob").unwrap_err(),
            RpcError::ChallengeUnknown,
            "another approver of the same principal"
        );
        // Taken by the wrong approver, it is gone for the right one too.
        assert_eq!(
            store.take(&id, "pr_a").unwrap_err(),
            RpcError::ChallengeUnknown
        );
        let id = store.insert("pr_a", remove(), [1; 32], [2; 32]).unwrap();
        assert_eq!(store.take(&id, "pr_a").unwrap().challenge, [2; 32]);
        assert_eq!(
            store.take(&id, "pr_a").unwrap_err(),
            RpcError::ChallengeUnknown
        );
        assert_eq!(
            store.take("nope", "pr_a").unwrap_err(),
            RpcError::ChallengeUnknown
        );
    }

    #[test]
    fn the_store_stays_bounded() {
        let store = Challenges::default();
        let first = store.insert("pr_a", remove(), [0; 32], [0; 32]).unwrap();
        for _ in 0..MAX_OPEN {
            store.insert("pr_a", remove(), [0; 32], [0; 32]).unwrap();
        }
        assert_eq!(store.lock().len(), MAX_OPEN);
        assert!(store.take(&first, "pr_a").is_err(), "the oldest went first");
    }
}
