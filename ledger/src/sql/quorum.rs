//! Quorum decisions (shared by both backends): an approver's approval or
//! denial of a quorum proposal, each with its chained event in one write
//! transaction under the proposal's lock; the M-th approval writes the
//! approve decision and the issuance in that same transaction
//! (`signer::write_approval`). Reads return a proposal's decisions in order.
//!
//! The lock makes concurrent approvers take turns: the second re-reads
//! what the first committed, so the approvals counted are exactly the
//! caller's `prior` or the call is refused (`QuorumMoved`) with nothing
//! written, and at most one approval can be the M-th. The schema's
//! triggers hold the order and the count again.

use serde_json::json;
use sqlx::Row as _;

use super::locks::lock_head;
use super::passkeys::{accept_answer, check_assertion};
use super::signer::{Answer, lock_undecided, write_approval};
use super::{Conn, DbRow, Store, events, is_unique_violation};
use crate::error::LedgerError;
use crate::passkeys::{AssertionPurpose, PasskeyAssertionRecord, StoredPasskeyAssertion};
use crate::quorum::{
    QuorumApproval, QuorumDecision, QuorumOutcome, QuorumVerdict, StoredQuorumAssertion,
};
use crate::timefmt;

const DECISIONS: &str = "SELECT approver, seq, required, decision, reason, passkey, decided_at
     FROM quorum_decisions WHERE proposal_id = $1 ORDER BY seq";

fn decision(row: &DbRow) -> Result<QuorumDecision, LedgerError> {
    let number = |col: &str| -> Result<u32, LedgerError> {
        let n: i64 = row.try_get(col)?;
        u32::try_from(n).map_err(|_| LedgerError::Corrupt(format!("quorum decision {col} {n}")))
    };
    let verdict = match row.try_get::<String, _>("decision")?.as_str() {
        "approve" => QuorumVerdict::Approve,
        "deny" => QuorumVerdict::Deny,
        other => return Err(LedgerError::Corrupt(format!("quorum decision {other:?}"))),
    };
    Ok(QuorumDecision {
        approver: row.try_get("approver")?,
        seq: number("seq")?,
        required: number("required")?,
        verdict,
        reason: row.try_get("reason")?,
        passkey: row.try_get("passkey")?,
        decided_at: timefmt::parse(&row.try_get::<String, _>("decided_at")?)?,
    })
}

/// The proposal's quorum decisions in order, on `conn`.
async fn decisions_on(
    conn: &mut Conn,
    proposal_id: &str,
) -> Result<Vec<QuorumDecision>, LedgerError> {
    let rows = sqlx::query(DECISIONS)
        .bind(proposal_id)
        .fetch_all(&mut *conn)
        .await?;
    rows.iter().map(decision).collect()
}

/// Insert one quorum decision row and its event, stamped `at`.
async fn insert_decision(
    conn: &mut Conn,
    proposal_id: &str,
    d: &QuorumDecision,
    at: &str,
) -> Result<(), LedgerError> {
    sqlx::query(
        "INSERT INTO quorum_decisions
             (proposal_id, approver, seq, required, decision, reason, passkey, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(proposal_id)
    .bind(&d.approver)
    .bind(i64::from(d.seq))
    .bind(i64::from(d.required))
    .bind(d.verdict.as_str())
    .bind(&d.reason)
    .bind(&d.passkey)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Check an approver's assertion (this proposal, an active passkey of the
/// principal that this approver enrolled) and store it, stamped `at`. A
/// challenge accepted before is `ChallengeUsed`.
async fn insert_quorum_assertion(
    conn: &mut Conn,
    a: &QuorumApproval<'_>,
    p: &PasskeyAssertionRecord,
    at: &str,
) -> Result<(), LedgerError> {
    // The chain head after the proposal (the lock order): a removal of the
    // credential commits before this reads it, or waits.
    lock_head(&mut *conn, a.principal).await?;
    let (purpose, pid) = (AssertionPurpose::Decision, a.proposal_id);
    check_assertion(&mut *conn, p, purpose, pid, a.principal, "quorum approval").await?;
    accept_answer(&mut *conn, p).await?;
    let enrolled_by: Option<String> =
        sqlx::query_scalar("SELECT enrolled_by FROM passkeys WHERE credential_id = $1")
            .bind(&p.credential_id)
            .fetch_optional(&mut *conn)
            .await?;
    if enrolled_by.as_deref() != Some(a.approver) {
        return Err(LedgerError::AssertionMismatch(format!(
            "approval of {pid} by {}: the passkey is another approver's",
            a.approver
        )));
    }
    let inserted = sqlx::query(
        "INSERT INTO quorum_passkey_assertions (proposal_id, approver, credential_id,
             challenge, challenge_random, delivery, authenticator_data, client_data_json,
             signature, sign_count, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(pid)
    .bind(a.approver)
    .bind(&p.credential_id)
    .bind(&p.challenge)
    .bind(&p.challenge_random)
    .bind(&p.delivery)
    .bind(&p.authenticator_data)
    .bind(&p.client_data_json)
    .bind(&p.signature)
    .bind(i64::from(p.sign_count))
    .bind(at)
    .execute(&mut *conn)
    .await;
    match inserted {
        // The row's key is the decision just written: only the challenge
        // can have been there before.
        Err(e) if is_unique_violation(&e) => Err(LedgerError::ChallengeUsed),
        other => {
            other?;
            Ok(())
        }
    }
}

fn quorum_assertion(row: &DbRow, id: i64) -> Result<StoredQuorumAssertion, LedgerError> {
    let count: i64 = row.try_get("sign_count")?;
    Ok(StoredQuorumAssertion {
        approver: row.try_get("approver")?,
        stored: StoredPasskeyAssertion {
            id,
            assertion: PasskeyAssertionRecord {
                credential_id: row.try_get("credential_id")?,
                purpose: AssertionPurpose::Decision,
                subject: row.try_get("proposal_id")?,
                challenge: row.try_get("challenge")?,
                challenge_random: row.try_get("challenge_random")?,
                delivery: row.try_get("delivery")?,
                authenticator_data: row.try_get("authenticator_data")?,
                client_data_json: row.try_get("client_data_json")?,
                signature: row.try_get("signature")?,
                sign_count: u32::try_from(count)
                    .map_err(|_| LedgerError::Corrupt(format!("sign count {count}")))?,
            },
            at: timefmt::parse(&row.try_get::<String, _>("at")?)?,
        },
    })
}

impl Store {
    /// Every quorum approver's stored passkey assertion, in a stable order
    /// (when stored, then proposal and approver), numbered from 1.
    pub(crate) async fn quorum_passkey_assertions(
        &self,
    ) -> Result<Vec<StoredQuorumAssertion>, LedgerError> {
        let rows = sqlx::query(
            "SELECT proposal_id, approver, credential_id, challenge, challenge_random, delivery,
                    authenticator_data, client_data_json, signature, sign_count, at
             FROM quorum_passkey_assertions ORDER BY at, proposal_id, approver",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .zip(1_i64..)
            .map(|(row, id)| quorum_assertion(row, id))
            .collect()
    }

    /// A proposal's quorum decisions, in the order they were recorded.
    pub(crate) async fn quorum_decisions(
        &self,
        proposal_id: &str,
    ) -> Result<Vec<QuorumDecision>, LedgerError> {
        let mut conn = self.reader.acquire().await?;
        decisions_on(&mut conn, proposal_id).await
    }

    /// Record an approver's approval of a quorum proposal; see
    /// [`crate::Ledger::record_quorum_approval`].
    pub(crate) async fn record_quorum_approval(
        &self,
        a: &QuorumApproval<'_>,
    ) -> Result<QuorumOutcome, LedgerError> {
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        lock_undecided(&mut tx, a.proposal_id, a.principal).await?;
        let recorded = decisions_on(&mut tx, a.proposal_id).await?;
        if recorded.iter().any(|d| d.approver == a.approver) {
            return Err(LedgerError::AlreadyApproved(
                a.proposal_id.to_owned(),
                a.approver.to_owned(),
            ));
        }
        let counted: Vec<&str> = recorded.iter().map(|d| d.approver.as_str()).collect();
        if counted != a.prior.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(LedgerError::QuorumMoved(a.proposal_id.to_owned()));
        }
        let approvals = u32::try_from(recorded.len() + 1)
            .map_err(|_| LedgerError::Corrupt("quorum decision count".into()))?;
        let completes = approvals == a.required;
        if approvals > a.required || completes != a.issuance.is_some() {
            return Err(LedgerError::IssuanceMismatch(a.proposal_id.to_owned()));
        }
        if let Some(i) = a.issuance
            && (i.proposal_id != a.proposal_id || i.principal != a.principal)
        {
            return Err(LedgerError::IssuanceMismatch(a.proposal_id.to_owned()));
        }
        let row = QuorumDecision {
            approver: a.approver.to_owned(),
            seq: approvals,
            required: a.required,
            verdict: QuorumVerdict::Approve,
            reason: None,
            passkey: a.passkey.map(|p| p.credential_id.clone()),
            decided_at: timefmt::now(),
        };
        insert_decision(&mut tx, a.proposal_id, &row, &at).await?;
        if let Some(p) = a.passkey {
            insert_quorum_assertion(&mut tx, a, p, &at).await?;
        }
        let mut details = json!({
            "approver": a.approver,
            "seq": approvals,
            "required": a.required,
        });
        if let (Some(fields), Some(p)) = (details.as_object_mut(), a.passkey) {
            fields.insert("passkey".into(), json!(p.credential_id));
        }
        events::append(
            &mut tx,
            a.principal,
            &at,
            "quorum_approved",
            Some(a.proposal_id),
            a.approver,
            &details,
        )
        .await?;
        if let Some(issuance) = a.issuance {
            // The completing approver's assertion was accepted (its
            // challenge taken) with its quorum row just above.
            write_approval(&mut tx, issuance, a.passkey, a.handoff, Answer::Accepted).await?;
        }
        tx.commit().await?;
        Ok(if completes {
            QuorumOutcome::Issued
        } else {
            QuorumOutcome::Counted { approvals }
        })
    }

    /// Record a quorum approver's denial; see
    /// [`crate::Ledger::record_quorum_denial`].
    pub(crate) async fn record_quorum_denial(
        &self,
        proposal_id: &str,
        principal: &str,
        approver: &str,
        required: u32,
        reason: &str,
    ) -> Result<(), LedgerError> {
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        lock_undecided(&mut tx, proposal_id, principal).await?;
        let recorded = decisions_on(&mut tx, proposal_id).await?;
        if recorded.iter().any(|d| d.approver == approver) {
            return Err(LedgerError::AlreadyApproved(
                proposal_id.to_owned(),
                approver.to_owned(),
            ));
        }
        let seq = u32::try_from(recorded.len() + 1)
            .map_err(|_| LedgerError::Corrupt("quorum decision count".into()))?;
        let row = QuorumDecision {
            approver: approver.to_owned(),
            seq,
            required,
            verdict: QuorumVerdict::Deny,
            reason: Some(reason.to_owned()),
            passkey: None,
            decided_at: timefmt::now(),
        };
        insert_decision(&mut tx, proposal_id, &row, &at).await?;
        sqlx::query(
            "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
             VALUES ($1, 'deny', $2, $3, $4)",
        )
        .bind(proposal_id)
        .bind(principal)
        .bind(reason)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        let details = json!({ "reason": reason, "approver": approver, "seq": seq });
        events::append(
            &mut tx,
            principal,
            &at,
            "denied",
            Some(proposal_id),
            approver,
            &details,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
