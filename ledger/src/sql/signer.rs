//! The signer's side of the ledger (shared by both backends): proposals,
//! decisions, issuances and revocations, each write with its event in one
//! write transaction that first locks the proposal row. Reads derive the
//! status.
//!
//! Never stores a proof, only its SHA-256; never logs argument values.

use countersign_verifier::{Grant, Premise};
use serde_json::json;
use sqlx::Row as _;

use super::batch::Job;
use super::locks::{lock_head, lock_proposal_row};
use super::passkeys::{accept_answer, check_assertion, insert_assertion};
use super::rows::{self, proposal_select};
use super::{Conn, Store, events, is_unique_violation, rules};
use crate::error::LedgerError;
use crate::passkeys::{AssertionPurpose, PasskeyAssertionRecord};
use crate::timefmt;
use crate::outbox::OutboxNotification;
use crate::types::{
    IssuanceRecord, KeyEvent, Proposal, ProposalRecord, ProposalStatus, RevokeOutcome,
};

/// A proposal as its write lock finds it.
struct Locked {
    principal: String,
    decided: bool,
    decide_by: Option<time::OffsetDateTime>,
}

/// The proposal's principal, whether it has a decision and when its
/// decision window closes, under the write lock.
async fn lock_proposal(conn: &mut Conn, id: &str) -> Result<Option<Locked>, LedgerError> {
    lock_proposal_row(conn, id).await?;
    let row = sqlx::query(
        "SELECT p.principal, d.proposal_id IS NOT NULL AS decided, p.decide_by
         FROM proposals p LEFT JOIN decisions d ON d.proposal_id = p.id WHERE p.id = $1",
    )
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    match row {
        None => Ok(None),
        Some(row) => Ok(Some(Locked {
            principal: row.try_get("principal")?,
            decided: row.try_get("decided")?,
            decide_by: rows::optional_time_col(&row, "decide_by")?,
        })),
    }
}

/// Insert a `(proposal_id, principal, reason, at)` row with `sql` and its
/// `kind` event (details: the reason), both stamped now.
pub(super) async fn insert_with_reason(
    conn: &mut Conn,
    sql: &'static str,
    kind: &str,
    proposal_id: &str,
    principal: &str,
    reason: &str,
) -> Result<(), LedgerError> {
    let at = timefmt::format(timefmt::now())?;
    sqlx::query(sql)
        .bind(proposal_id)
        .bind(principal)
        .bind(reason)
        .bind(&at)
        .execute(&mut *conn)
        .await?;
    let details = json!({ "reason": reason });
    events::append(
        conn,
        principal,
        &at,
        kind,
        Some(proposal_id),
        principal,
        &details,
    )
    .await
}

/// What became of a proposal's proof, read under the proposal's lock.
struct IssuedProof {
    /// The issued proof's SHA-256, if one was issued.
    proof_sha256: Option<String>,
    revoked: bool,
    consumed: bool,
}

/// Lock `proposal_id` and read what became of its proof;
/// `UnknownProposal` unless it exists and is `principal`'s.
async fn issued_proof(
    conn: &mut Conn,
    proposal_id: &str,
    principal: &str,
) -> Result<IssuedProof, LedgerError> {
    lock_proposal_row(conn, proposal_id).await?;
    let row = sqlx::query(
        "SELECT p.principal AS principal,
                i.proof_sha256 AS proof_sha256,
                r.proposal_id IS NOT NULL AS revoked,
                n.nonce IS NOT NULL AS consumed
         FROM proposals p
         LEFT JOIN issuances i ON i.proposal_id = p.id
         LEFT JOIN revocations r ON r.proposal_id = p.id
         LEFT JOIN consumed_nonces n ON n.proposal_id = p.id
         WHERE p.id = $1",
    )
    .bind(proposal_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Err(LedgerError::UnknownProposal(proposal_id.to_string()));
    };
    if row.try_get::<String, _>("principal")? != principal {
        return Err(LedgerError::UnknownProposal(proposal_id.to_string()));
    }
    Ok(IssuedProof {
        proof_sha256: row.try_get("proof_sha256")?,
        revoked: row.try_get("revoked")?,
        consumed: row.try_get("consumed")?,
    })
}

/// Lock the proposal and check it exists, is `principal`'s
/// (`UnknownProposal` otherwise), has no decision (`NotPending`) and its
/// decision window is open (`WindowClosed`), by the clock read after the
/// lock.
pub(super) async fn lock_undecided(
    conn: &mut Conn,
    proposal_id: &str,
    principal: &str,
) -> Result<(), LedgerError> {
    let Some(locked) = lock_proposal(conn, proposal_id).await? else {
        return Err(LedgerError::UnknownProposal(proposal_id.to_string()));
    };
    if locked.principal != principal {
        return Err(LedgerError::UnknownProposal(proposal_id.to_string()));
    }
    if locked.decided {
        return Err(LedgerError::NotPending(proposal_id.to_string()));
    }
    match locked.decide_by {
        Some(closes) if timefmt::now() >= closes => Err(LedgerError::WindowClosed(
            proposal_id.to_string(),
            closes,
        )),
        _ => Ok(()),
    }
}

/// Whether [`write_approval`] still accepts its passkey assertion as the
/// answer to its challenge (taking the challenge, comparing the counter),
/// or the same transaction did already (a quorum's completing approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// Accept it here.
    ToAccept,
    /// Accepted earlier in this transaction.
    Accepted,
}

/// Under the proposal's lock ([`lock_undecided`]): check the issuance
/// matches the proposal (`IssuanceMismatch`) and the passkey assertion, if
/// any, then write the approve decision, the issuance, the assertion and
/// the `approved` event. `handoff`: the proof is kept for a head to claim,
/// which the event records (`"delivery": "handoff"`); a passkey assertion
/// must then have been made for a handoff too.
pub(super) async fn write_approval(
    conn: &mut Conn,
    i: &IssuanceRecord,
    passkey: Option<&PasskeyAssertionRecord>,
    handoff: bool,
    answer: Answer,
) -> Result<(), LedgerError> {
    let issued_at = timefmt::format(i.issued_at)?;
    let expires_at = timefmt::format(i.expires_at)?;
    let row = sqlx::query(concat!(proposal_select!(), "WHERE p.id = $1"))
        .bind(&i.proposal_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else {
        return Err(LedgerError::UnknownProposal(i.proposal_id.clone()));
    };
    let p = rows::proposal(&row, timefmt::now())?;
    if p.proposal.operation != i.operation
        || p.proposal.arguments_sha256 != i.arguments_sha256
        || p.proposal.contract_revision != i.contract_revision
        || p.proposal.policy_revision != i.policy_revision
    {
        return Err(LedgerError::IssuanceMismatch(i.proposal_id.clone()));
    }
    // Issued under a rule (its provenance says which version): live at
    // that version, with uses left in total and in the last hour,
    // checked under the chain head's lock and counted below, in this
    // transaction. A rule is not a person's passkey: never both.
    let grant = Grant::from_provenance(&i.provenance);
    if let Some(g) = &grant {
        if passkey.is_some() {
            return Err(LedgerError::AssertionMismatch(format!(
                "rule approval of {}",
                i.proposal_id
            )));
        }
        rules::check_use(&mut *conn, g, &i.principal).await?;
    }
    if let Some(a) = passkey {
        // The chain head after the proposal (the lock order): a removal
        // of the credential commits before this reads it, or waits.
        lock_head(&mut *conn, &i.principal).await?;
        let (purpose, pid) = (AssertionPurpose::Decision, &i.proposal_id);
        check_assertion(&mut *conn, a, purpose, pid, &i.principal, "approval").await?;
        if (a.delivery == "handoff") != handoff {
            return Err(LedgerError::AssertionMismatch(format!(
                "delivery of the approval of {pid}"
            )));
        }
        if answer == Answer::ToAccept {
            accept_answer(&mut *conn, a).await?;
        }
    }
    sqlx::query(
        "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
         VALUES ($1, 'approve', $2, NULL, $3)",
    )
    .bind(&i.proposal_id)
    .bind(&i.principal)
    .bind(&issued_at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO issuances (proposal_id, proof_sha256, nonce, principal, session,
             operation, arguments_sha256, contract_revision, policy_revision, provenance,
             audience, issued_at, expires_at, consume_digest, key_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(&i.proposal_id)
    .bind(&i.proof_sha256)
    .bind(&i.nonce)
    .bind(&i.principal)
    .bind(&i.session)
    .bind(&i.operation)
    .bind(&i.arguments_sha256)
    .bind(&i.contract_revision)
    .bind(&i.policy_revision)
    .bind(&i.provenance)
    .bind(&i.audience)
    .bind(&issued_at)
    .bind(&expires_at)
    .bind(&i.consume_digest)
    .bind(&i.key_id)
    .execute(&mut *conn)
    .await?;
    let mut details = json!({
        "proof_sha256": i.proof_sha256,
        "session": i.session,
        "provenance": i.provenance,
        "audience": i.audience,
        "expires_at": expires_at,
    });
    if let Some(a) = passkey {
        // After the issuance: the schema wants a decision's subject issued.
        insert_assertion(&mut *conn, a, &issued_at).await?;
        // A new key only on these events: older events hash as before.
        if let Some(fields) = details.as_object_mut() {
            fields.insert("passkey".into(), json!(a.credential_id));
        }
    }
    if let Some(g) = &grant {
        rules::insert_use(&mut *conn, g, i, &issued_at).await?;
        // Only on rule approvals, as above.
        if let Some(fields) = details.as_object_mut() {
            fields.insert("rule".into(), json!(g.rule));
            fields.insert("rule_version".into(), json!(g.version));
        }
    }
    if handoff {
        // Likewise only on handoff approvals: a direct one hashes as
        // every approval before this key did, and an event without it
        // is never handed to a head.
        if let Some(fields) = details.as_object_mut() {
            fields.insert("delivery".into(), json!("handoff"));
        }
    }
    events::append(
        conn,
        &i.principal,
        &issued_at,
        "approved",
        Some(&i.proposal_id),
        &i.principal,
        &details,
    )
    .await
}

/// An approval to record, owned: it runs as a job of a group commit
/// (`batch.rs`), in a task of its own that may outlive the caller's borrow.
pub(super) struct Approval {
    pub(super) issuance: IssuanceRecord,
    pub(super) passkey: Option<PasskeyAssertionRecord>,
    pub(super) handoff: bool,
}

/// Record `a` on `conn`, inside the batch's write transaction: lock the
/// proposal and check it is undecided ([`lock_undecided`]), then
/// [`write_approval`]. Writes nothing on an error.
pub(super) async fn approve_in(conn: &mut Conn, a: &Approval) -> Result<(), LedgerError> {
    let i = &a.issuance;
    lock_undecided(conn, &i.proposal_id, &i.principal).await?;
    write_approval(conn, i, a.passkey.as_ref(), a.handoff, Answer::ToAccept).await?;
    // Test-only: the issuance written, its transaction not committed.
    crate::fault::crash_point("signer_in_issuance");
    Ok(())
}

/// Record a new proposal, its `proposed` event and its notification, if
/// any, on `tx` inside a write transaction. `DuplicateProposal` if the id
/// exists.
pub(super) async fn insert_proposal_in(
    tx: &mut Conn,
    p: &Proposal,
    announce: &[OutboxNotification],
) -> Result<(), LedgerError> {
        let created_at = timefmt::format(p.created_at)?;
        let decide_by = p.decide_by.map(timefmt::format).transpose()?;
        let premise = p
            .premise
            .as_ref()
            .map(Premise::canonical_text)
            .transpose()
            .map_err(|e| LedgerError::Corrupt(format!("premise: {e}")))?;
        let policy = p
            .policy
            .as_ref()
            .map(|policy| countersign_verifier::canonical::to_canonical(&policy.to_value()))
            .transpose()
            .map_err(|e| LedgerError::Corrupt(format!("policy verdict: {e}")))?;
        let inserted = sqlx::query(
            "INSERT INTO proposals (id, principal, session, operation, arguments_json,
                 arguments_sha256, contract_revision, policy_revision, note, preview, created_at,
                 premise, decide_by, policy)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(p.id.as_str())
        .bind(p.principal.as_str())
        .bind(p.session.as_str())
        .bind(&p.operation)
        .bind(&p.arguments_json)
        .bind(&p.arguments_sha256)
        .bind(&p.contract_revision)
        .bind(&p.policy_revision)
        .bind(&p.note)
        .bind(&p.preview)
        .bind(&created_at)
        .bind(&premise)
        .bind(&decide_by)
        .bind(&policy)
        .execute(&mut *tx)
        .await;
        match inserted {
            Err(e) if is_unique_violation(&e) => {
                return Err(LedgerError::DuplicateProposal(p.id.to_string()));
            }
            other => other?,
        };
        let mut details = json!({
            "session": p.session.as_str(),
            "operation": p.operation,
            "arguments_sha256": p.arguments_sha256,
            "contract_revision": p.contract_revision,
            "policy_revision": p.policy_revision,
        });
        // The chain commits to the premise the person was shown.
        if let Some(premise) = &p.premise {
            details["premise"] = premise.claim_value();
        }
        // And to the window the person had to decide in.
        if let Some(decide_by) = &decide_by {
            details["decide_by"] = decide_by.as_str().into();
        }
        // And to what the operator's policy said of it.
        if let Some(policy) = &p.policy {
            details["policy"] = policy.to_value();
        }
        events::append(
            tx,
            &p.principal,
            &created_at,
            "proposed",
            Some(&p.id),
            &p.principal,
            &details,
        )
        .await?;
        // Its notification commits with it, or neither does.
        for n in announce {
            Store::insert_notification(tx, n).await?;
        }
    Ok(())
}

impl Store {
    /// Record a new proposal and its `proposed` event; its record as
    /// committed.
    pub(crate) async fn insert_proposal(
        &self,
        p: &Proposal,
        announce: &[OutboxNotification],
    ) -> Result<ProposalRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        insert_proposal_in(&mut tx, p, announce).await?;
        tx.commit().await?;
        tracing::debug!(proposal_id = %p.id, operation = %p.operation, "proposal recorded");
        Ok(ProposalRecord::inserted(p))
    }

    /// Record a new proposal and a rule's approval of it (`i`, a handoff)
    /// in one write transaction: both commit, or neither does. Errors as
    /// for each alone; on any, nothing is written.
    pub(crate) async fn insert_rule_approved_proposal(
        &self,
        p: &Proposal,
        i: &IssuanceRecord,
    ) -> Result<ProposalRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        insert_proposal_in(&mut tx, p, &[]).await?;
        lock_undecided(&mut tx, &i.proposal_id, &i.principal).await?;
        write_approval(&mut tx, i, None, true, Answer::ToAccept).await?;
        tx.commit().await?;
        tracing::debug!(proposal_id = %p.id, operation = %p.operation, "proposal recorded approved by a rule");
        ProposalRecord::inserted(p).after_approval(i.clone())
    }

    /// One proposal with its derived status.
    pub(crate) async fn proposal(&self, id: &str) -> Result<Option<ProposalRecord>, LedgerError> {
        let row = sqlx::query(concat!(proposal_select!(), "WHERE p.id = $1"))
            .bind(id)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|row| rows::proposal(&row, timefmt::now()))
            .transpose()
    }

    /// The principal's undecided proposals whose decision window is open,
    /// oldest first.
    pub(crate) async fn pending(
        &self,
        principal: &str,
    ) -> Result<Vec<ProposalRecord>, LedgerError> {
        let found = sqlx::query(concat!(
            proposal_select!(),
            "WHERE p.principal = $1 AND d.proposal_id IS NULL ORDER BY p.created_at, p.id"
        ))
        .bind(principal)
        .fetch_all(&self.reader)
        .await?;
        let now = timefmt::now();
        let mut pending = Vec::with_capacity(found.len());
        for row in &found {
            let record = rows::proposal(row, now)?;
            // Undecided and past its window: expired, not waiting.
            if record.status == ProposalStatus::Pending {
                pending.push(record);
            }
        }
        Ok(pending)
    }

    /// Record a denial and its event; `NotPending` if already decided.
    pub(crate) async fn record_denial(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<(), LedgerError> {
        const DENY: &str =
            "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
             VALUES ($1, 'deny', $2, $3, $4)";
        self.record_terminal(DENY, "denied", proposal_id, principal, reason)
            .await
    }

    /// Record the proposer's withdrawal and its event; `NotPending` if
    /// already decided.
    pub(crate) async fn record_withdrawal(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<(), LedgerError> {
        const WITHDRAW: &str =
            "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
             VALUES ($1, 'withdraw', $2, $3, $4)";
        self.record_terminal(WITHDRAW, "withdrawn", proposal_id, principal, reason)
            .await
    }

    /// The principal's proposals, newest first, at most `limit`.
    pub(crate) async fn proposals_of(
        &self,
        principal: &str,
        limit: u32,
    ) -> Result<Vec<ProposalRecord>, LedgerError> {
        let found = sqlx::query(concat!(
            proposal_select!(),
            "WHERE p.principal = $1 ORDER BY p.created_at DESC, p.id DESC LIMIT $2"
        ))
        .bind(principal)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        let now = timefmt::now();
        found.iter().map(|row| rows::proposal(row, now)).collect()
    }

    /// A terminal decision other than approval (`sql` inserts it), with its
    /// event, in one write transaction.
    async fn record_terminal(
        &self,
        sql: &'static str,
        kind: &str,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_undecided(&mut tx, proposal_id, principal).await?;
        insert_with_reason(&mut tx, sql, kind, proposal_id, principal, reason).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Record a change of the signer's key set: one `key_rotated` or
    /// `key_retired` event (details: the key id), by `actor`, in its own
    /// write transaction. There is no fact row: the key index in the
    /// signer's directory is the record, the chain its witness.
    pub(crate) async fn record_key_event(
        &self,
        event: KeyEvent,
        key_id: &str,
        actor: &str,
    ) -> Result<(), LedgerError> {
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        let details = json!({ "key_id": key_id });
        let global = crate::chain::GLOBAL_CHAIN;
        events::append(&mut tx, global, &at, event.kind(), None, actor, &details).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Record the approve decision, the issuance and the event atomically,
    /// with the passkey assertion that authorized it, if any (checked
    /// before anything is written; its credential is named in the event).
    /// `handoff`: the proof is kept for a head to claim, which the event
    /// records (`"delivery": "handoff"`); a passkey assertion must then
    /// have been made for a handoff too.
    ///
    /// Runs as a job of a group commit (`batch.rs`): concurrent approvals
    /// and consumptions share one write transaction, each in its own
    /// savepoint, and this returns once that transaction committed.
    pub(crate) async fn record_approval(
        &self,
        i: &IssuanceRecord,
        passkey: Option<&PasskeyAssertionRecord>,
        handoff: bool,
    ) -> Result<(), LedgerError> {
        let approval = Box::new(Approval {
            issuance: i.clone(),
            passkey: passkey.cloned(),
            handoff,
        });
        self.queued(|reply| Job::Approve { approval, reply }).await
    }

    /// Whether the approval that issued `proof_sha256` for `proposal_id`
    /// was recorded for a handoff: its `approved` event says
    /// `"delivery": "handoff"`. The event read is the first `approved`
    /// event of the proposal naming that proof: the one written in the
    /// approval's own transaction, which a later event (a head role may
    /// append events on PostgreSQL) cannot precede, since the proof's hash
    /// is unknown before it is issued.
    pub(crate) async fn approved_for_handoff(
        &self,
        proposal_id: &str,
        proof_sha256: &str,
    ) -> Result<bool, LedgerError> {
        let rows = sqlx::query(
            "SELECT id, details FROM events
             WHERE kind IN ('approved', 'handed_off') AND proposal_id = $1 ORDER BY id",
        )
        .bind(proposal_id)
        .fetch_all(&self.reader)
        .await?;
        for row in &rows {
            let text: String = row.try_get("details")?;
            let details: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                let id = row.try_get::<i64, _>("id").unwrap_or_default();
                LedgerError::Corrupt(format!("event {id} details: {e}"))
            })?;
            if details.get("proof_sha256").and_then(|v| v.as_str()) == Some(proof_sha256)
                && details.get("delivery").and_then(|v| v.as_str()) == Some("handoff")
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Hand off the waiting proof of a direct approval (see
    /// `Ledger::record_hand_off`), in one write transaction.
    pub(crate) async fn record_hand_off(
        &self,
        proposal_id: &str,
        principal: &str,
        proof_sha256: &str,
        approver: &str,
    ) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        let issued = issued_proof(&mut tx, proposal_id, principal).await?;
        if issued.proof_sha256.as_deref() != Some(proof_sha256) || issued.revoked || issued.consumed
        {
            return Err(LedgerError::NotPending(proposal_id.to_string()));
        }
        let at = timefmt::format(timefmt::now())?;
        let details = json!({ "proof_sha256": proof_sha256, "delivery": "handoff" });
        events::append(
            &mut tx,
            principal,
            &at,
            "handed_off",
            Some(proposal_id),
            approver,
            &details,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Revoke the unconsumed proof of a proposal, in one write transaction.
    pub(crate) async fn revoke(
        &self,
        proposal_id: &str,
        principal: &str,
        reason: &str,
    ) -> Result<RevokeOutcome, LedgerError> {
        let mut tx = self.write_tx().await?;
        let issued = issued_proof(&mut tx, proposal_id, principal).await?;
        if issued.consumed {
            return Ok(RevokeOutcome::AlreadyUsed);
        }
        if issued.proof_sha256.is_none() || issued.revoked {
            return Ok(RevokeOutcome::NothingToRevoke);
        }
        const REVOKE: &str = "INSERT INTO revocations (proposal_id, principal, reason, revoked_at)
             VALUES ($1, $2, $3, $4)";
        insert_with_reason(&mut tx, REVOKE, "revoked", proposal_id, principal, reason).await?;
        tx.commit().await?;
        Ok(RevokeOutcome::Revoked)
    }
}
