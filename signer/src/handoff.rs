//! The handoff store: proofs approved with `DELIVERY_HANDOFF`, kept in
//! memory for one head of the same principal to claim, once.
//!
//! Each entry is bound to a principal, a session and an expiry. A claim
//! hands over a copy and marks the entry claimed: no second claim succeeds,
//! and a second claim is told the proposal is being executed (claimed by
//! another request), never that no approval exists.
//! The head that claimed it may release it (same principal and session)
//! when it could not present the proof, which makes it claimable once more;
//! that is why the store keeps its copy until expiry or revocation, which
//! remove the entry. Removed proofs are zeroized (`Proof` zeroizes on drop).
//! Nothing here is persisted: a signer restart drops waiting handoffs, and
//! the approval can be revoked or left to expire. This module never logs
//! and never exposes a proof except to the successful claimant.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use countersign_verifier::Proof;
use time::OffsetDateTime;

use crate::error::RpcError;

struct Waiting {
    proof: Proof,
    principal: String,
    session: String,
    expires_at: OffsetDateTime,
    /// Handed to a head, which has not released it.
    claimed: bool,
}

/// Proofs waiting for their head, by proposal id.
#[derive(Default)]
pub(crate) struct HandoffStore {
    waiting: Mutex<HashMap<String, Waiting>>,
}

impl HandoffStore {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Waiting>> {
        // A panic while holding the lock cannot leave a map half-updated
        // (every operation is a single insert/remove), so poisoning is ignored.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps `proof` for `proposal_id` until claimed, revoked or expired.
    pub(crate) fn insert(
        &self,
        proposal_id: &str,
        proof: Proof,
        principal: &str,
        session: &str,
        expires_at: OffsetDateTime,
    ) {
        let mut map = self.lock();
        purge_expired(&mut map, OffsetDateTime::now_utc());
        map.insert(
            proposal_id.to_owned(),
            Waiting {
                proof,
                principal: principal.to_owned(),
                session: session.to_owned(),
                expires_at,
                claimed: false,
            },
        );
    }

    /// Hands a copy of the proof over once: the principal and the session
    /// must match, the proof must not have expired, and it must not be
    /// claimed already (`HandoffInUse`, until the handoff's expiry or its
    /// release). A session mismatch changes nothing.
    pub(crate) fn claim(
        &self,
        proposal_id: &str,
        principal: &str,
        session: &str,
        now: OffsetDateTime,
    ) -> Result<Proof, RpcError> {
        let mut map = self.lock();
        let entry = owned_entry(&mut map, proposal_id, principal, session, now)?;
        if entry.claimed {
            // Approved, and held by the head executing it: a head told
            // "no handoff" would send its caller to approve again.
            return Err(RpcError::HandoffInUse(proposal_id.to_owned()));
        }
        let copy = Proof::from_text(entry.proof.expose_secret().to_owned())
            .map_err(|e| RpcError::Internal(format!("a kept proof is malformed: {e}")))?;
        entry.claimed = true;
        Ok(copy)
    }

    /// Makes a claimed proof claimable once more, for the head that could
    /// not present it: the principal and the session must match and the
    /// proof must not have expired. `HandoffNotClaimed` if nobody holds it.
    pub(crate) fn release(
        &self,
        proposal_id: &str,
        principal: &str,
        session: &str,
        now: OffsetDateTime,
    ) -> Result<(), RpcError> {
        let mut map = self.lock();
        let entry = owned_entry(&mut map, proposal_id, principal, session, now)?;
        if !entry.claimed {
            return Err(RpcError::HandoffNotClaimed);
        }
        entry.claimed = false;
        Ok(())
    }

    /// Drops (and zeroizes) any proof waiting for `proposal_id`.
    pub(crate) fn discard(&self, proposal_id: &str) -> bool {
        self.lock().remove(proposal_id).is_some()
    }

    /// Whether a live proof waits for `proposal_id`, unclaimed.
    pub(crate) fn is_waiting(&self, proposal_id: &str, now: OffsetDateTime) -> bool {
        self.lock()
            .get(proposal_id)
            .is_some_and(|w| now < w.expires_at && !w.claimed)
    }
}

/// The live entry of `proposal_id`, if it belongs to `principal` and
/// `session`.
fn owned_entry<'m>(
    map: &'m mut HashMap<String, Waiting>,
    proposal_id: &str,
    principal: &str,
    session: &str,
    now: OffsetDateTime,
) -> Result<&'m mut Waiting, RpcError> {
    purge_expired(map, now);
    let entry = map.get_mut(proposal_id).ok_or(RpcError::NoLiveHandoff)?;
    if entry.principal != principal {
        return Err(RpcError::NotYourProposal);
    }
    if entry.session != session {
        return Err(RpcError::HandoffSessionMismatch);
    }
    Ok(entry)
}

fn purge_expired(map: &mut HashMap<String, Waiting>, now: OffsetDateTime) {
    map.retain(|_, w| now < w.expires_at);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use time::Duration;

    const A: &str = "pr_0123456789abcdef0123456789abcdef";
    const B: &str = "pr_fedcba9876543210fedcba9876543210";

    fn proof() -> Proof {
        Proof::from_text("v4.public.AAAA".into()).unwrap()
    }

    #[test]
    fn claims_once() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::minutes(5));
        assert!(store.is_waiting("p", now));
        assert_eq!(
            store.claim("p", A, "s1", now).unwrap().expose_secret(),
            "v4.public.AAAA"
        );
        assert!(matches!(
            store.claim("p", A, "s1", now),
            Err(RpcError::HandoffInUse(id)) if id == "p"
        ));
        assert!(!store.is_waiting("p", now));
        // Never claimed, nothing waits: no handoff.
        assert!(matches!(
            store.claim("q", A, "s1", now),
            Err(RpcError::NoLiveHandoff)
        ));
    }

    #[test]
    fn a_released_claim_can_be_claimed_once_more() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::minutes(5));
        // Nothing to release before a claim.
        assert!(matches!(
            store.release("p", A, "s1", now),
            Err(RpcError::HandoffNotClaimed)
        ));
        store.claim("p", A, "s1", now).unwrap();
        // Only its principal, in its session, may release it.
        assert!(matches!(
            store.release("p", A, "s2", now),
            Err(RpcError::HandoffSessionMismatch)
        ));
        assert!(matches!(
            store.release("p", B, "s1", now),
            Err(RpcError::NotYourProposal)
        ));
        assert!(!store.is_waiting("p", now));
        store.release("p", A, "s1", now).unwrap();
        assert!(store.is_waiting("p", now));
        assert_eq!(
            store.claim("p", A, "s1", now).unwrap().expose_secret(),
            "v4.public.AAAA"
        );
        assert!(matches!(
            store.claim("p", A, "s1", now),
            Err(RpcError::HandoffInUse(_))
        ));
        // Expired, or revoked (discarded): nothing to release.
        let later = now + Duration::minutes(5);
        assert!(matches!(
            store.release("p", A, "s1", later),
            Err(RpcError::NoLiveHandoff)
        ));
        store.insert("q", proof(), A, "s1", now + Duration::minutes(5));
        store.claim("q", A, "s1", now).unwrap();
        assert!(store.discard("q"));
        assert!(matches!(
            store.release("q", A, "s1", now),
            Err(RpcError::NoLiveHandoff)
        ));
    }

    #[test]
    fn refuses_wrong_session_or_principal_and_keeps_the_proof() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::minutes(5));
        assert!(matches!(
            store.claim("p", A, "s2", now),
            Err(RpcError::HandoffSessionMismatch)
        ));
        assert!(matches!(
            store.claim("p", B, "s1", now),
            Err(RpcError::NotYourProposal)
        ));
        assert!(store.claim("p", A, "s1", now).is_ok());
    }

    #[test]
    fn expired_and_discarded_proofs_are_gone() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::seconds(1));
        let later = now + Duration::seconds(1);
        assert!(matches!(
            store.claim("p", A, "s1", later),
            Err(RpcError::NoLiveHandoff)
        ));
        store.insert("q", proof(), A, "s1", now + Duration::minutes(5));
        assert!(store.discard("q"));
        assert!(matches!(
            store.claim("q", A, "s1", now),
            Err(RpcError::NoLiveHandoff)
        ));
    }
}
