//! Enrolment codes: how every passkey is enrolled, through the signer's
//! own administrative path, one approver at a time.
//!
//! `countersign-signer passkeys enrolment-code --approver NAME` (or
//! `--unnamed` for the approver certificate without a name), run as the
//! signer's OS user, draws 128 random bits, prints them once as the code
//! and keeps only their SHA-256, the approver and an expiry in the
//! ledger's `enrolment_codes` (on PostgreSQL only the signer's role may
//! read or write it), so a code drawn on one signer's host is redeemable
//! through any signer of the same ledger. Enrol accepts a code once, and
//! only from the approver certificate it was drawn for: the first attempt
//! of that approver, right or wrong, spends it, so it cannot be guessed
//! online, and a code presented through another approver's certificate
//! has leaked and is spent as well (one ledger transaction). Must not:
//! keep the code itself, accept an expired one, or accept one approver's
//! code from another approver.

use countersign_identity::ApproverName;
use countersign_ledger::{CodeRedemption, Ledger, LedgerError};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};

use crate::error::RpcError;

/// How long an enrolment code is accepted after it was printed.
pub const CODE_LIFETIME: Duration = Duration::minutes(30);

/// The enrolment codes of a ledger.
#[derive(Debug, Clone)]
pub struct EnrolmentCodes {
    ledger: Ledger,
}

/// Why a code could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    /// The ledger could not store it.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// No randomness.
    #[error("no randomness: {0}")]
    Random(String),
}

/// How the ledger names `approver`'s code: its name, or empty for the
/// approver certificate without one.
fn stored_name(approver: Option<&ApproverName>) -> &str {
    approver.map_or("", ApproverName::as_str)
}

impl EnrolmentCodes {
    /// The codes kept in `ledger`.
    pub fn in_ledger(ledger: Ledger) -> EnrolmentCodes {
        EnrolmentCodes { ledger }
    }

    /// Makes a new code for `approver` (replacing any earlier one of that
    /// approver) and returns it with its expiry. The caller shows it to the
    /// administrator and keeps it nowhere.
    pub async fn issue(
        &self,
        approver: Option<&ApproverName>,
        now: OffsetDateTime,
    ) -> Result<(String, OffsetDateTime), CodeError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| CodeError::Random(e.to_string()))?;
        let code = hex::encode(bytes)
            .as_bytes()
            .chunks(4)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("-");
        // Whole seconds, as every time the signer shows.
        let expires_at = now.replace_nanosecond(0).unwrap_or(now) + CODE_LIFETIME;
        self.ledger
            .issue_enrolment_code(stored_name(approver), &digest(&code), expires_at)
            .await?;
        Ok((code, expires_at))
    }

    /// Spends `approver`'s code: `Ok` if `code` is the current one drawn for
    /// `approver` and not expired. Whatever the answer, that approver has
    /// no code left afterwards; other approvers' codes are untouched unless
    /// `code` is one of them (then it leaked, and is spent too).
    pub(crate) async fn spend(
        &self,
        approver: Option<&ApproverName>,
        code: &str,
    ) -> Result<(), RpcError> {
        let redeemed = self
            .ledger
            .redeem_enrolment_code(stored_name(approver), &digest(code.trim()))
            .await
            .map_err(|e| RpcError::Internal(format!("enrolment code: {e}")))?;
        match redeemed {
            CodeRedemption::Accepted => Ok(()),
            CodeRedemption::Refused { leaked_from } => {
                for owner in leaked_from {
                    let code_of = if owner.is_empty() { "-unnamed" } else { &owner };
                    tracing::warn!(
                        code_of,
                        "an enrolment code was presented by another approver's certificate; spent"
                    );
                }
                Err(RpcError::EnrolmentCodeRefused)
            }
        }
    }
}

fn digest(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn codes() -> (tempfile::TempDir, Ledger, EnrolmentCodes) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        let ledger = Ledger::open(&url).await.unwrap();
        let codes = EnrolmentCodes::in_ledger(ledger.clone());
        (dir, ledger, codes)
    }

    #[tokio::test]
    async fn a_code_is_accepted_once_and_a_wrong_guess_spends_it() {
        let (dir, _ledger, codes) = codes().await;
        let alice = ApproverName::parse("alice").unwrap();
        let me = Some(&alice);
        let now = OffsetDateTime::now_utc();
        assert_eq!(
            codes.spend(me, "x").await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        let (code, expires) = codes.issue(me, now).await.unwrap();
        assert_eq!(expires, now.replace_nanosecond(0).unwrap() + CODE_LIFETIME);
        assert_eq!(code.len(), 39, "{code}");
        let file = std::fs::read(dir.path().join("ledger.db")).unwrap();
        let text = String::from_utf8_lossy(&file);
        assert!(!text.contains(&code), "only the hash is kept");
        codes.spend(me, &code).await.unwrap();
        assert_eq!(
            codes.spend(me, &code).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );

        let (code, _) = codes.issue(me, now).await.unwrap();
        assert!(codes.spend(me, "0000").await.is_err());
        assert!(
            codes.spend(me, &code).await.is_err(),
            "the wrong guess spent it"
        );

        let long_ago = now - CODE_LIFETIME - Duration::seconds(1);
        let (code, _) = codes.issue(me, long_ago).await.unwrap();
        assert!(codes.spend(me, &code).await.is_err(), "expired");
    }

    #[tokio::test]
    async fn refuses_one_approvers_code_from_another_approver() {
        let (_dir, _ledger, codes) = codes().await;
        let (alice, bob) = (
            ApproverName::parse("alice").unwrap(),
            ApproverName::parse("bob").unwrap(),
        );
        let now = OffsetDateTime::now_utc();
        let (for_alice, _) = codes.issue(Some(&alice), now).await.unwrap();
        let (for_bob, _) = codes.issue(Some(&bob), now).await.unwrap();
        assert_eq!(
            codes.spend(Some(&bob), &for_alice).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert_eq!(
            codes.spend(Some(&bob), &for_bob).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused,
            "bob's attempt with alice's code spent bob's"
        );
        let (for_unnamed, _) = codes.issue(None, now).await.unwrap();
        assert_eq!(
            codes.spend(None, &for_alice).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert!(codes.spend(None, &for_unnamed).await.is_err(), "spent");
        // A code presented by another approver's certificate has leaked:
        // it is spent for its own approver too.
        assert_eq!(
            codes.spend(Some(&alice), &for_alice).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        // A wrong guess by another approver spends nothing of alice's.
        let (for_alice, _) = codes.issue(Some(&alice), now).await.unwrap();
        assert!(codes.spend(Some(&bob), "0000-0000").await.is_err());
        codes.spend(Some(&alice), &for_alice).await.unwrap();
        let (for_unnamed, _) = codes.issue(None, now).await.unwrap();
        assert_eq!(
            codes.spend(Some(&alice), &for_unnamed).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused
        );
        assert_eq!(
            codes.spend(None, &for_unnamed).await.unwrap_err(),
            RpcError::EnrolmentCodeRefused,
            "the unnamed certificate's code leaked to alice: spent"
        );
    }
}
