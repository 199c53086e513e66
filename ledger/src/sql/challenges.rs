//! The signer's open decision state (shared by both backends): the
//! WebAuthn challenges it issued and nobody answered yet, and each
//! approver's current enrolment code (its SHA-256 only).
//!
//! Owns: storing a challenge, reading it back for the signer's checks,
//! and taking it ([`take_challenge`]) inside the transaction that records
//! its answer, so that it is answered once whichever signer issued it and
//! whichever finishes; storing an enrolment code's hash and redeeming it
//! once. Must not: keep a challenge or a code after it was used or found
//! expired, or accept an expired one. Neither table is evidence: rows are
//! deleted, never updated.

use sqlx::Row as _;
use time::OffsetDateTime;

use super::{Conn, DbRow, Store};
use crate::error::LedgerError;
use crate::passkeys::{AssertionPurpose, CodeRedemption, PasskeyChallenge};
use crate::timefmt;

fn challenge(row: &DbRow) -> Result<PasskeyChallenge, LedgerError> {
    let purpose: String = row.try_get("purpose")?;
    Ok(PasskeyChallenge {
        id: row.try_get("id")?,
        challenge: row.try_get("challenge")?,
        random: row.try_get("random")?,
        approver: row.try_get("approver")?,
        purpose: AssertionPurpose::parse(&purpose)
            .ok_or_else(|| LedgerError::Corrupt(format!("challenge purpose {purpose:?}")))?,
        subject: row.try_get("subject")?,
        delivery: row.try_get("delivery")?,
        session: row.try_get("session")?,
        expires_at: timefmt::parse(&row.try_get::<String, _>("expires_at")?)?,
    })
}

/// Take the open challenge `challenge` (base64url) for `purpose` and
/// `subject`, inside the write transaction that records its answer: the
/// row is deleted, and the transaction fails with `ChallengeUsed` if no
/// unexpired row was there (answered already, here or on another signer,
/// expired, or never issued). On PostgreSQL a second transaction deleting
/// the same row waits for the first and then finds nothing.
pub(super) async fn take_challenge(
    conn: &mut Conn,
    challenge: &str,
    purpose: AssertionPurpose,
    subject: &str,
) -> Result<(), LedgerError> {
    let now = timefmt::format(timefmt::now())?;
    let taken = sqlx::query(
        "DELETE FROM passkey_challenges
         WHERE challenge = $1 AND purpose = $2 AND subject = $3 AND expires_at > $4",
    )
    .bind(challenge)
    .bind(purpose.as_str())
    .bind(subject)
    .bind(&now)
    .execute(&mut *conn)
    .await?;
    if taken.rows_affected() == 1 {
        Ok(())
    } else {
        Err(LedgerError::ChallengeUsed)
    }
}

impl Store {
    /// Store an issued challenge, dropping every expired one first.
    pub(crate) async fn issue_passkey_challenge(
        &self,
        c: &PasskeyChallenge,
    ) -> Result<(), LedgerError> {
        let now = timefmt::now();
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM passkey_challenges WHERE expires_at <= $1")
            .bind(timefmt::format(now)?)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO passkey_challenges (id, challenge, random, approver, purpose, subject,
                 delivery, session, issued_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&c.id)
        .bind(&c.challenge)
        .bind(&c.random)
        .bind(&c.approver)
        .bind(c.purpose.as_str())
        .bind(&c.subject)
        .bind(&c.delivery)
        .bind(&c.session)
        .bind(timefmt::format(now)?)
        .bind(timefmt::format(c.expires_at)?)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The open challenge `id`, expired or not (the caller compares
    /// `expires_at`); `None` if there is none.
    pub(crate) async fn passkey_challenge(
        &self,
        id: &str,
    ) -> Result<Option<PasskeyChallenge>, LedgerError> {
        let row = sqlx::query(
            "SELECT id, challenge, random, approver, purpose, subject, delivery, session,
                    expires_at
             FROM passkey_challenges WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(challenge).transpose()
    }

    /// Forget the challenge `id` (refused, or its answer failed): it is
    /// never accepted afterwards. Nothing happens if it is gone already.
    pub(crate) async fn discard_passkey_challenge(&self, id: &str) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM passkey_challenges WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Make `sha256` (hex) the enrolment code of `approver` (a name; empty
    /// for the unnamed certificate) until `expires_at`, replacing any
    /// earlier code of that approver.
    pub(crate) async fn issue_enrolment_code(
        &self,
        approver: &str,
        sha256: &str,
        expires_at: OffsetDateTime,
    ) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM enrolment_codes WHERE approver = $1")
            .bind(approver)
            .execute(&mut *tx)
            .await?;
        sqlx::query(
            "INSERT INTO enrolment_codes (approver, sha256, issued_at, expires_at)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(approver)
        .bind(sha256)
        .bind(timefmt::format(timefmt::now())?)
        .bind(timefmt::format(expires_at)?)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Spend `approver`'s enrolment code with the code whose SHA-256 is
    /// `sha256`, in one write transaction: the approver's row is deleted
    /// whatever it held; a refused code that is another approver's current
    /// one has leaked and is deleted too.
    pub(crate) async fn redeem_enrolment_code(
        &self,
        approver: &str,
        sha256: &str,
    ) -> Result<CodeRedemption, LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        let spent = sqlx::query(
            "DELETE FROM enrolment_codes WHERE approver = $1 RETURNING sha256, expires_at",
        )
        .bind(approver)
        .fetch_optional(&mut *tx)
        .await?;
        let accepted = match &spent {
            Some(row) => {
                let stored: String = row.try_get("sha256")?;
                let expires_at: String = row.try_get("expires_at")?;
                stored == sha256 && now < expires_at
            }
            None => false,
        };
        let outcome = if accepted {
            CodeRedemption::Accepted
        } else {
            let leaked = sqlx::query("DELETE FROM enrolment_codes WHERE sha256 = $1 RETURNING approver")
                .bind(sha256)
                .fetch_all(&mut *tx)
                .await?;
            CodeRedemption::Refused {
                leaked_from: leaked
                    .iter()
                    .map(|row| row.try_get("approver"))
                    .collect::<Result<_, _>>()?,
            }
        };
        tx.commit().await?;
        Ok(outcome)
    }
}
