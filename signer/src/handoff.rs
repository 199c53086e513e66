//! The handoff store: proofs approved with `DELIVERY_HANDOFF`, kept in
//! memory for one head of the same principal to claim, once.
//!
//! Each entry is bound to a principal, a session and an expiry. A claim
//! hands over a copy and marks the entry claimed for a lease: no second
//! claim succeeds while the lease runs, and a second claim is told the
//! proposal is being executed (claimed by another request), never that no
//! approval exists.
//! The head that claimed it may release it (same principal and session)
//! when it could not present the proof, which makes it claimable once more;
//! that is why the store keeps its copy until expiry or revocation, which
//! remove the entry. A head killed between claim and presentation cannot
//! release it: once its lease ran out, the entry is claimable again. The
//! caller (`service.rs`) claims only while the ledger shows the nonce
//! unconsumed; should the first head come back after all, the ledger's
//! single-use nonce still lets the effect happen once.
//! Removed proofs are zeroized (`Proof` zeroizes on drop).
//!
//! Nothing here is persisted: after a signer restart the store is empty,
//! and `recover.rs` re-derives a waiting proof from the ledger on its first
//! claim. This module never logs and never exposes a proof except to the
//! successful claimant.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use countersign_verifier::Proof;
use time::{Duration, OffsetDateTime};

use crate::error::RpcError;

struct Waiting {
    proof: Proof,
    principal: String,
    session: String,
    expires_at: OffsetDateTime,
    /// Handed to a head, which has not released it: until when that head
    /// alone holds it.
    claimed_until: Option<OffsetDateTime>,
}

impl Waiting {
    fn held_at(&self, now: OffsetDateTime) -> bool {
        self.claimed_until.is_some_and(|until| now < until)
    }
}

/// A successful claim.
pub(crate) struct Claimed {
    /// The copy handed over.
    pub(crate) proof: Proof,
    /// Whether an earlier claim's lease ran out unreleased (that head
    /// presumably died before presenting the proof).
    pub(crate) after_lapsed_lease: bool,
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
            waiting(proof, principal, session, expires_at),
        );
    }

    /// Keeps `proof` for `proposal_id` unless an entry exists already (a
    /// concurrent claim re-derived it first: that entry, and its claim,
    /// stay). Returns whether `proof` was kept.
    pub(crate) fn adopt(
        &self,
        proposal_id: &str,
        proof: Proof,
        principal: &str,
        session: &str,
        expires_at: OffsetDateTime,
        now: OffsetDateTime,
    ) -> bool {
        let mut map = self.lock();
        purge_expired(&mut map, now);
        if map.contains_key(proposal_id) {
            return false;
        }
        map.insert(
            proposal_id.to_owned(),
            waiting(proof, principal, session, expires_at),
        );
        true
    }

    /// Hands a copy of the proof over: the principal and the session must
    /// match, the proof must not have expired, and no head may hold it
    /// (`HandoffInUse`, until its release or until its lease ran out). The
    /// claimant holds it for `lease`. A session mismatch changes nothing.
    /// The caller has checked that the ledger shows the nonce unconsumed.
    pub(crate) fn claim(
        &self,
        proposal_id: &str,
        principal: &str,
        session: &str,
        now: OffsetDateTime,
        lease: Duration,
    ) -> Result<Claimed, RpcError> {
        let mut map = self.lock();
        let entry = owned_entry(&mut map, proposal_id, principal, session, now)?;
        if entry.held_at(now) {
            // Approved, and held by the head executing it: a head told
            // "no handoff" would send its caller to approve again.
            return Err(RpcError::HandoffInUse(proposal_id.to_owned()));
        }
        let copy = Proof::from_text(entry.proof.expose_secret().to_owned())
            .map_err(|e| RpcError::Internal(format!("a kept proof is malformed: {e}")))?;
        let after_lapsed_lease = entry.claimed_until.is_some();
        entry.claimed_until = Some(now + lease);
        Ok(Claimed {
            proof: copy,
            after_lapsed_lease,
        })
    }

    /// Makes a claimed proof claimable once more, for the head that could
    /// not present it: the principal and the session must match and the
    /// proof must not have expired. `HandoffNotClaimed` if nobody claimed it.
    pub(crate) fn release(
        &self,
        proposal_id: &str,
        principal: &str,
        session: &str,
        now: OffsetDateTime,
    ) -> Result<(), RpcError> {
        let mut map = self.lock();
        let entry = owned_entry(&mut map, proposal_id, principal, session, now)?;
        if entry.claimed_until.is_none() {
            return Err(RpcError::HandoffNotClaimed);
        }
        entry.claimed_until = None;
        Ok(())
    }

    /// Drops (and zeroizes) any proof waiting for `proposal_id`.
    pub(crate) fn discard(&self, proposal_id: &str) -> bool {
        self.lock().remove(proposal_id).is_some()
    }

    /// How many live proofs wait that no head holds (the metrics' gauge).
    pub(crate) fn waiting_count(&self, now: OffsetDateTime) -> usize {
        self.lock()
            .values()
            .filter(|w| now < w.expires_at && !w.held_at(now))
            .count()
    }

    /// Whether a live proof waits for `proposal_id` that no head holds.
    pub(crate) fn is_waiting(&self, proposal_id: &str, now: OffsetDateTime) -> bool {
        self.lock()
            .get(proposal_id)
            .is_some_and(|w| now < w.expires_at && !w.held_at(now))
    }
}

fn waiting(proof: Proof, principal: &str, session: &str, expires_at: OffsetDateTime) -> Waiting {
    Waiting {
        proof,
        principal: principal.to_owned(),
        session: session.to_owned(),
        expires_at,
        claimed_until: None,
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

    const A: &str = "pr_0123456789abcdef0123456789abcdef";
    const B: &str = "pr_fedcba9876543210fedcba9876543210";

    /// A lease longer than any test here runs.
    const LEASE: Duration = Duration::minutes(1);

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
            store
                .claim("p", A, "s1", now, LEASE)
                .unwrap()
                .proof
                .expose_secret(),
            "v4.public.AAAA"
        );
        assert!(matches!(
            store.claim("p", A, "s1", now, LEASE),
            Err(RpcError::HandoffInUse(id)) if id == "p"
        ));
        assert!(!store.is_waiting("p", now));
        // Never claimed, nothing waits: no handoff.
        assert!(matches!(
            store.claim("q", A, "s1", now, LEASE),
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
        store.claim("p", A, "s1", now, LEASE).unwrap();
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
            store
                .claim("p", A, "s1", now, LEASE)
                .unwrap()
                .proof
                .expose_secret(),
            "v4.public.AAAA"
        );
        assert!(matches!(
            store.claim("p", A, "s1", now, LEASE),
            Err(RpcError::HandoffInUse(_))
        ));
        // Expired, or revoked (discarded): nothing to release.
        let later = now + Duration::minutes(5);
        assert!(matches!(
            store.release("p", A, "s1", later),
            Err(RpcError::NoLiveHandoff)
        ));
        store.insert("q", proof(), A, "s1", now + Duration::minutes(5));
        store.claim("q", A, "s1", now, LEASE).unwrap();
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
            store.claim("p", A, "s2", now, LEASE),
            Err(RpcError::HandoffSessionMismatch)
        ));
        assert!(matches!(
            store.claim("p", B, "s1", now, LEASE),
            Err(RpcError::NotYourProposal)
        ));
        assert!(store.claim("p", A, "s1", now, LEASE).is_ok());
    }

    #[test]
    fn expired_and_discarded_proofs_are_gone() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::seconds(1));
        let later = now + Duration::seconds(1);
        assert!(matches!(
            store.claim("p", A, "s1", later, LEASE),
            Err(RpcError::NoLiveHandoff)
        ));
        store.insert("q", proof(), A, "s1", now + Duration::minutes(5));
        assert!(store.discard("q"));
        assert!(matches!(
            store.claim("q", A, "s1", now, LEASE),
            Err(RpcError::NoLiveHandoff)
        ));
    }

    #[test]
    fn a_claim_whose_lease_ran_out_unreleased_can_be_claimed_again() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::minutes(5));
        let lease = Duration::seconds(30);
        let first = store.claim("p", A, "s1", now, lease).unwrap();
        assert!(!first.after_lapsed_lease);
        // Held for the whole lease, to the last second.
        for at in [now, now + Duration::seconds(29)] {
            assert!(matches!(
                store.claim("p", A, "s1", at, lease),
                Err(RpcError::HandoffInUse(_))
            ));
            assert!(!store.is_waiting("p", at));
        }
        // Its head never presented nor released it: after the lease, the
        // approval waits again, for its own session only.
        let after = now + Duration::seconds(30);
        assert!(store.is_waiting("p", after));
        assert!(matches!(
            store.claim("p", A, "s2", after, lease),
            Err(RpcError::HandoffSessionMismatch)
        ));
        let second = store.claim("p", A, "s1", after, lease).unwrap();
        assert!(second.after_lapsed_lease);
        assert_eq!(second.proof.expose_secret(), "v4.public.AAAA");
        // And the second claim has a lease of its own.
        assert!(matches!(
            store.claim("p", A, "s1", after + Duration::seconds(29), lease),
            Err(RpcError::HandoffInUse(_))
        ));
        // A lease never outlives the proof.
        assert!(matches!(
            store.claim("p", A, "s1", now + Duration::minutes(5), lease),
            Err(RpcError::NoLiveHandoff)
        ));
    }

    #[test]
    fn a_released_claim_is_claimed_again_without_a_lapsed_lease() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        store.insert("p", proof(), A, "s1", now + Duration::minutes(5));
        store.claim("p", A, "s1", now, LEASE).unwrap();
        store.release("p", A, "s1", now).unwrap();
        assert!(
            !store
                .claim("p", A, "s1", now, LEASE)
                .unwrap()
                .after_lapsed_lease
        );
    }

    #[test]
    fn adopting_keeps_an_entry_that_exists_and_its_claim() {
        let store = HandoffStore::default();
        let now = OffsetDateTime::now_utc();
        let exp = now + Duration::minutes(5);
        assert!(store.adopt("p", proof(), A, "s1", exp, now));
        store.claim("p", A, "s1", now, LEASE).unwrap();
        // A concurrent re-derivation of the same approval changes nothing:
        // the first claim still holds it.
        assert!(!store.adopt("p", proof(), A, "s1", exp, now));
        assert!(matches!(
            store.claim("p", A, "s1", now, LEASE),
            Err(RpcError::HandoffInUse(_))
        ));
        // An expired entry is replaced.
        store.insert("q", proof(), A, "s1", now + Duration::seconds(1));
        assert!(store.adopt("q", proof(), A, "s1", exp, now + Duration::seconds(1)));
    }
}
