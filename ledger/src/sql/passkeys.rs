//! Passkeys (shared by both backends): enrolling and removing WebAuthn
//! credentials and storing the assertions the signer accepted, each write
//! with its event in one write transaction; reading them back.
//!
//! The signer verifies every registration and assertion before it calls
//! here. This module checks only what its rows show, before writing: the
//! authorizing credential is enrolled, unremoved and of the principal
//! concerned, and the assertion is for this purpose and subject; the
//! schema's triggers hold the same again. A reused challenge is refused by
//! the UNIQUE constraint and reported as `ChallengeUsed`; so is one that
//! is not an open challenge of the `passkey_challenges` table, which every
//! write that records an answer takes in its own transaction
//! (`challenges.rs`). A signature counter that does not increase is
//! refused again here, under the credential's row lock
//! (`CounterNotIncreased`), after the signer's own check.
//!
//! Write transactions that read a credential's state lock the chain head
//! first (after the proposal, for an approval), so on PostgreSQL an
//! enrolment, a removal and an approval by passkey serialize and each sees
//! what the previous one committed.

use serde_json::json;
use sqlx::Row as _;

use super::challenges::take_challenge;
use super::locks::lock_head;
use super::{Conn, DbRow, Store, events, is_challenge_reuse, is_unique_violation};
use crate::error::LedgerError;
use crate::passkeys::{
    AssertionPurpose, ENROLMENT_CODE, PasskeyAssertionRecord, PasskeyEnrolment, PasskeyRecord,
    PasskeyRemoval, SIGNER_ADMIN, StoredPasskeyAssertion,
};
use crate::timefmt;

/// The select behind every passkey read, with the greatest counter of its
/// assertions and its removal; append a WHERE clause on `k.`.
macro_rules! passkey_select {
    () => {
        "SELECT k.credential_id, k.principal, k.name, k.public_key, k.sign_count,
                k.client_data_json, k.enrolled_at, k.enrolled_by, k.authorized_by, r.removed_at AS removed_at,
                (SELECT MAX(s.sign_count) FROM (
                     SELECT a.sign_count FROM passkey_assertions a
                     WHERE a.credential_id = k.credential_id
                     UNION ALL
                     SELECT q.sign_count FROM quorum_passkey_assertions q
                     WHERE q.credential_id = k.credential_id) s) AS asserted_count
         FROM passkeys k
         LEFT JOIN passkey_removals r ON r.credential_id = k.credential_id "
    };
}

/// The columns of a stored assertion.
macro_rules! assertion_select {
    () => {
        "SELECT id, credential_id, purpose, subject, challenge, challenge_random, delivery,
                authenticator_data, client_data_json, signature, sign_count, at
         FROM passkey_assertions "
    };
}

/// A stored counter, which the schema keeps within `u32`.
fn counter(value: i64) -> Result<u32, LedgerError> {
    u32::try_from(value).map_err(|_| LedgerError::Corrupt(format!("sign count {value}")))
}

fn passkey(row: &DbRow) -> Result<PasskeyRecord, LedgerError> {
    let enrolled: i64 = row.try_get("sign_count")?;
    let asserted: Option<i64> = row.try_get("asserted_count")?;
    let removed_at: Option<String> = row.try_get("removed_at")?;
    Ok(PasskeyRecord {
        credential_id: row.try_get("credential_id")?,
        principal: row.try_get("principal")?,
        name: row.try_get("name")?,
        public_key: row.try_get("public_key")?,
        registration_client_data_json: row.try_get("client_data_json")?,
        sign_count: counter(enrolled.max(asserted.unwrap_or(0)))?,
        enrolled_at: timefmt::parse(&row.try_get::<String, _>("enrolled_at")?)?,
        enrolled_by: row.try_get("enrolled_by")?,
        authorized_by: row.try_get("authorized_by")?,
        removed_at: removed_at.as_deref().map(timefmt::parse).transpose()?,
    })
}

fn stored_assertion(row: &DbRow) -> Result<StoredPasskeyAssertion, LedgerError> {
    let purpose: String = row.try_get("purpose")?;
    let purpose = AssertionPurpose::parse(&purpose)
        .ok_or_else(|| LedgerError::Corrupt(format!("assertion purpose {purpose:?}")))?;
    Ok(StoredPasskeyAssertion {
        id: row.try_get("id")?,
        assertion: PasskeyAssertionRecord {
            credential_id: row.try_get("credential_id")?,
            purpose,
            subject: row.try_get("subject")?,
            challenge: row.try_get("challenge")?,
            challenge_random: row.try_get("challenge_random")?,
            delivery: row.try_get("delivery")?,
            authenticator_data: row.try_get("authenticator_data")?,
            client_data_json: row.try_get("client_data_json")?,
            signature: row.try_get("signature")?,
            sign_count: counter(row.try_get("sign_count")?)?,
        },
        at: timefmt::parse(&row.try_get::<String, _>("at")?)?,
    })
}

/// A credential's principal and whether it was removed; `None` if it was
/// never enrolled.
async fn credential_state(
    conn: &mut Conn,
    credential_id: &str,
) -> Result<Option<(String, bool)>, LedgerError> {
    let row = sqlx::query(
        "SELECT k.principal, r.credential_id IS NOT NULL AS removed
         FROM passkeys k LEFT JOIN passkey_removals r ON r.credential_id = k.credential_id
         WHERE k.credential_id = $1",
    )
    .bind(credential_id)
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        None => Ok(None),
        Some(row) => Ok(Some((row.try_get("principal")?, row.try_get("removed")?))),
    }
}

/// Check, before anything is written, that `a` authorizes `what`: this
/// purpose and subject, a delivery that fits the purpose, and a credential
/// that is enrolled, unremoved and `principal`'s.
pub(super) async fn check_assertion(
    conn: &mut Conn,
    a: &PasskeyAssertionRecord,
    purpose: AssertionPurpose,
    subject: &str,
    principal: &str,
    what: &str,
) -> Result<(), LedgerError> {
    let delivery_fits = match purpose {
        AssertionPurpose::Decision => matches!(a.delivery.as_str(), "direct" | "handoff"),
        AssertionPurpose::Enrol | AssertionPurpose::Remove => a.delivery.is_empty(),
    };
    if a.purpose != purpose || a.subject != subject || !delivery_fits {
        return Err(LedgerError::AssertionMismatch(format!(
            "{what} of {subject}"
        )));
    }
    match credential_state(conn, &a.credential_id).await? {
        Some((owner, false)) if owner == principal => {}
        _ => return Err(LedgerError::UnusablePasskey(a.credential_id.clone())),
    }
    Ok(())
}

/// Accept `a`, checked by [`check_assertion`], as the answer to its open
/// challenge: take the challenge (`ChallengeUsed` if it is not open) and
/// compare the counter under the credential's row lock
/// (`CounterNotIncreased`). Once per assertion and write transaction,
/// before the assertion is stored.
pub(super) async fn accept_answer(
    conn: &mut Conn,
    a: &PasskeyAssertionRecord,
) -> Result<(), LedgerError> {
    take_challenge(conn, &a.challenge, a.purpose, &a.subject).await?;
    check_counter(conn, &a.credential_id, a.sign_count).await
}

/// Under the credential's row lock (PostgreSQL; SQLite's write lock is
/// held already), refuse a counter that is not greater than the greatest
/// one recorded for it, unless both are zero (authenticators without a
/// counter). The signer compared against the count it read before; this
/// compares again against what is committed now, so two signers racing
/// assertions of one credential cannot both record a non-increasing one.
async fn check_counter(
    conn: &mut Conn,
    credential_id: &str,
    received: u32,
) -> Result<(), LedgerError> {
    sqlx::query(concat!(
        "SELECT k.credential_id FROM passkeys k WHERE k.credential_id = $1",
        locking!("k")
    ))
    .bind(credential_id)
    .fetch_optional(&mut *conn)
    .await?;
    let greatest: Option<i64> = sqlx::query_scalar(
        "SELECT MAX(s.sign_count) FROM (
             SELECT sign_count FROM passkeys WHERE credential_id = $1
             UNION ALL
             SELECT sign_count FROM passkey_assertions WHERE credential_id = $1
             UNION ALL
             SELECT sign_count FROM quorum_passkey_assertions WHERE credential_id = $1) s",
    )
    .bind(credential_id)
    .fetch_one(&mut *conn)
    .await?;
    let stored = counter(greatest.unwrap_or(0))?;
    if (stored != 0 || received != 0) && received <= stored {
        return Err(LedgerError::CounterNotIncreased { stored, received });
    }
    Ok(())
}

/// Store an assertion checked by [`check_assertion`], stamped `at`. A
/// challenge accepted before is `ChallengeUsed`.
pub(super) async fn insert_assertion(
    conn: &mut Conn,
    a: &PasskeyAssertionRecord,
    at: &str,
) -> Result<(), LedgerError> {
    let inserted = sqlx::query(
        "INSERT INTO passkey_assertions (credential_id, purpose, subject, challenge,
             challenge_random, delivery, authenticator_data, client_data_json, signature,
             sign_count, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&a.credential_id)
    .bind(a.purpose.as_str())
    .bind(&a.subject)
    .bind(&a.challenge)
    .bind(&a.challenge_random)
    .bind(&a.delivery)
    .bind(&a.authenticator_data)
    .bind(&a.client_data_json)
    .bind(&a.signature)
    .bind(i64::from(a.sign_count))
    .bind(at)
    .execute(&mut *conn)
    .await;
    match inserted {
        Err(e) if is_challenge_reuse(&e) => Err(LedgerError::ChallengeUsed),
        other => {
            other?;
            Ok(())
        }
    }
}

impl Store {
    /// Enrol a credential: its row, the authorizing assertion if any and
    /// the `passkey_enrolled` event, in one write transaction.
    pub(crate) async fn enrol_passkey(
        &self,
        e: &PasskeyEnrolment,
        authorization: Option<&PasskeyAssertionRecord>,
    ) -> Result<(), LedgerError> {
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        lock_head(&mut tx, &e.principal).await?;
        take_challenge(&mut tx, &e.challenge, AssertionPurpose::Enrol, "").await?;
        match authorization {
            None if e.authorized_by == ENROLMENT_CODE => {}
            Some(a) if a.credential_id == e.authorized_by => {
                let purpose = AssertionPurpose::Enrol;
                check_assertion(
                    &mut tx,
                    a,
                    purpose,
                    &e.credential_id,
                    &e.principal,
                    "enrolment",
                )
                .await?;
                accept_answer(&mut tx, a).await?;
            }
            _ => {
                return Err(LedgerError::AssertionMismatch(format!(
                    "enrolment of {}",
                    e.credential_id
                )));
            }
        }
        let inserted = sqlx::query(
            "INSERT INTO passkeys (credential_id, principal, name, public_key, sign_count,
                 attestation_object, client_data_json, enrolled_at, enrolled_by, authorized_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&e.credential_id)
        .bind(&e.principal)
        .bind(&e.name)
        .bind(&e.public_key)
        .bind(i64::from(e.sign_count))
        .bind(&e.attestation_object)
        .bind(&e.client_data_json)
        .bind(&at)
        .bind(&e.enrolled_by)
        .bind(&e.authorized_by)
        .execute(&mut *tx)
        .await;
        match inserted {
            Err(err) if is_unique_violation(&err) => {
                return Err(LedgerError::DuplicatePasskey(e.credential_id.clone()));
            }
            other => other?,
        };
        if let Some(a) = authorization {
            insert_assertion(&mut tx, a, &at).await?;
        }
        let details = json!({
            "credential_id": e.credential_id,
            "principal": e.principal,
            "name": e.name,
            "authorized_by": e.authorized_by,
            "public_key_sha256": crate::facts::public_key_sha256(&e.public_key),
        });
        events::append(
            &mut tx,
            &e.principal,
            &at,
            "passkey_enrolled",
            None,
            &e.enrolled_by,
            &details,
        )
        .await?;
        tx.commit().await?;
        tracing::debug!(credential_id = %e.credential_id, principal = %e.principal, "passkey enrolled");
        Ok(())
    }

    /// Remove a credential: the removal row, its assertion if any and the
    /// `passkey_removed` event, in one write transaction.
    pub(crate) async fn remove_passkey(
        &self,
        credential_id: &str,
        removed_by: &str,
        authorized_by: &str,
        assertion: Option<&PasskeyAssertionRecord>,
    ) -> Result<PasskeyRemoval, LedgerError> {
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        // The credential's principal names the chain to lock; it never
        // changes, and whether it is removed is read again under the lock.
        let Some((owner, _)) = credential_state(&mut tx, credential_id).await? else {
            return Ok(PasskeyRemoval::Unknown);
        };
        lock_head(&mut tx, &owner).await?;
        let principal = match credential_state(&mut tx, credential_id).await? {
            None => return Ok(PasskeyRemoval::Unknown),
            Some((_, true)) => return Ok(PasskeyRemoval::AlreadyRemoved),
            Some((principal, false)) => principal,
        };
        match assertion {
            None if authorized_by == SIGNER_ADMIN => {}
            Some(a) if a.credential_id == authorized_by => {
                let purpose = AssertionPurpose::Remove;
                check_assertion(&mut tx, a, purpose, credential_id, &principal, "removal").await?;
                accept_answer(&mut tx, a).await?;
                // Before the removal row: a credential may remove itself.
                insert_assertion(&mut tx, a, &at).await?;
            }
            _ => {
                return Err(LedgerError::AssertionMismatch(format!(
                    "removal of {credential_id}"
                )));
            }
        }
        let inserted = sqlx::query(
            "INSERT INTO passkey_removals (credential_id, removed_at, removed_by, authorized_by)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(credential_id)
        .bind(&at)
        .bind(removed_by)
        .bind(authorized_by)
        .execute(&mut *tx)
        .await;
        match inserted {
            Err(e) if is_unique_violation(&e) => return Ok(PasskeyRemoval::AlreadyRemoved),
            other => other?,
        };
        let details = json!({ "credential_id": credential_id, "authorized_by": authorized_by });
        events::append(
            &mut tx,
            &principal,
            &at,
            "passkey_removed",
            None,
            removed_by,
            &details,
        )
        .await?;
        tx.commit().await?;
        tracing::debug!(%credential_id, "passkey removed");
        Ok(PasskeyRemoval::Removed)
    }

    /// The principal's credentials, removed ones included, oldest first.
    pub(crate) async fn passkeys(
        &self,
        principal: &str,
    ) -> Result<Vec<PasskeyRecord>, LedgerError> {
        let rows = sqlx::query(concat!(
            passkey_select!(),
            "WHERE k.principal = $1 ORDER BY k.enrolled_at, k.credential_id"
        ))
        .bind(principal)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(passkey).collect()
    }

    /// One credential, removed or not.
    pub(crate) async fn passkey(
        &self,
        credential_id: &str,
    ) -> Result<Option<PasskeyRecord>, LedgerError> {
        let row = sqlx::query(concat!(passkey_select!(), "WHERE k.credential_id = $1"))
            .bind(credential_id)
            .fetch_optional(&self.reader)
            .await?;
        row.as_ref().map(passkey).transpose()
    }

    /// Every stored assertion, in the order stored.
    pub(crate) async fn passkey_assertions(
        &self,
    ) -> Result<Vec<StoredPasskeyAssertion>, LedgerError> {
        let rows = sqlx::query(concat!(assertion_select!(), "ORDER BY id"))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(stored_assertion).collect()
    }

    /// The decision assertion stored with a proposal's approval.
    pub(crate) async fn passkey_assertion_for(
        &self,
        proposal_id: &str,
    ) -> Result<Option<StoredPasskeyAssertion>, LedgerError> {
        let row = sqlx::query(concat!(
            assertion_select!(),
            "WHERE purpose = 'decision' AND subject = $1"
        ))
        .bind(proposal_id)
        .fetch_optional(&self.reader)
        .await?;
        row.as_ref().map(stored_assertion).transpose()
    }
}
