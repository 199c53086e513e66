//! The heads' side of consumption (shared by both backends, see the
//! crate root): consume a verified proof once, record how it ended, read
//! dispositions, list interrupted intents and record a person's resolution.
//!
//! Two flows share the same steps (`check_consumable`, `record_intent`,
//! and for builtins `effects::apply_and_complete_in`):
//! - `consume_builtin`, for effects inside the ledger: checks, nonce,
//!   intent, effect and completion in ONE write transaction. Any error rolls
//!   all of it back: the nonce is not burned, nothing is applied, and the
//!   same proof can be presented again. Never uncertain.
//! - `begin_consume` + `complete`, for effects outside the ledger
//!   (`command`): the first transaction burns the nonce and records the
//!   intent, the head runs the effect, the second records completion. An
//!   intent without completion is `uncertain` until reconciled.

use serde_json::{Value, json};
use sqlx::Row as _;

use super::effects::{Recorded, apply_and_complete_in};
use super::locks::lock_proposal_row;
use super::rows::{self, disposition_select, intent_select};
use super::{Conn, Store, events};
use crate::error::{LedgerError, LedgerRefusal};
use crate::fault::crash_point;
use crate::timefmt;
use crate::types::{ConsumeStart, Consumed, Disposition, EffectOutcome, Intent};
use countersign_verifier::VerifiedProof;

/// Checks 1 to 4 of `begin_consume` on `conn`: `Some` with the recorded
/// disposition if the nonce was already consumed, `None` if the proof may
/// be consumed now, a refusal otherwise. With `lock` (inside the write
/// transaction) it first locks the proposal row (PostgreSQL), so revocation
/// and consumption of one proposal serialize; the checks after it then read
/// what the previous lock holder committed.
async fn check_consumable(
    conn: &mut Conn,
    proof: &VerifiedProof,
    lock: bool,
) -> Result<Option<Disposition>, LedgerError> {
    let claims = proof.claims();
    if lock {
        lock_proposal_row(conn, &claims.pid).await?;
    }
    // Every fact the checks need, in one statement.
    let row = sqlx::query(
        "SELECT p.principal AS p_principal, p.operation AS p_operation,
                p.arguments_sha256 AS p_arguments_sha256,
                p.contract_revision AS p_contract_revision,
                p.policy_revision AS p_policy_revision,
                i.session AS i_session, r.proposal_id IS NOT NULL AS revoked,
                n.nonce AS nonce, n.proposal_id AS proposal_id,
                c.status AS status, c.error AS error, c.result AS result,
                c.completed_at AS completed_at
         FROM proposals p
         LEFT JOIN issuances i
                ON i.proposal_id = p.id AND i.proof_sha256 = $2 AND i.nonce = $3
         LEFT JOIN revocations r ON r.proposal_id = p.id
         LEFT JOIN consumed_nonces n ON n.nonce = i.nonce
         LEFT JOIN completions c ON c.nonce = n.nonce
         WHERE p.id = $1",
    )
    .bind(&claims.pid)
    .bind(proof.proof_sha256())
    .bind(&claims.jti)
    .fetch_optional(&mut *conn)
    .await?;

    // 1. The proposal, and that the claims match it.
    let row = row.ok_or(LedgerRefusal::UnknownProposal)?;
    let matches = row.try_get::<String, _>("p_principal")? == claims.sub
        && row.try_get::<String, _>("p_operation")? == claims.op
        && row.try_get::<String, _>("p_arguments_sha256")? == claims.args_sha256
        && row.try_get::<String, _>("p_contract_revision")? == claims.crev
        && row.try_get::<String, _>("p_policy_revision")? == claims.prev;
    if !matches {
        return Err(LedgerRefusal::ProposalMismatch.into());
    }

    // 2. The issuance with exactly this proof hash and nonce, for this session.
    let session = row
        .try_get::<Option<String>, _>("i_session")?
        .ok_or(LedgerRefusal::NotIssued)?;
    if session != claims.sid {
        return Err(LedgerRefusal::ProposalMismatch.into());
    }

    // 3. Not revoked.
    if row.try_get::<bool, _>("revoked")? {
        return Err(LedgerRefusal::Revoked.into());
    }

    // 4. Already consumed: the recorded disposition, never a second effect.
    if row.try_get::<Option<String>, _>("nonce")?.is_none() {
        return Ok(None);
    }
    rows::disposition(&row).map(Some)
}

/// Insert a completion and its event on `conn`, inside the caller's write
/// transaction. With `nonce`, the intent must be that nonce (a head's
/// completion); without, any uncertain intent of the proposal (a person's
/// resolution, `NotUncertain` otherwise). `(status, error, result)`.
pub(super) async fn complete_in(
    conn: &mut Conn,
    proposal_id: &str,
    nonce: Option<&str>,
    outcome: (&str, Option<&str>, &Value),
    resolved_by: Option<&str>,
) -> Result<Disposition, LedgerError> {
    lock_proposal_row(conn, proposal_id).await?;
    let existing = sqlx::query(concat!(disposition_select!(), "WHERE n.proposal_id = $1"))
        .bind(proposal_id)
        .fetch_optional(&mut *conn)
        .await?;
    let existing = existing.map(|row| rows::disposition(&row)).transpose()?;
    let unknown = || match resolved_by {
        Some(_) => LedgerError::NotUncertain(proposal_id.to_string()),
        None => LedgerError::UnknownIntent(proposal_id.to_string()),
    };
    let Some(existing) = existing else {
        return Err(unknown());
    };
    if nonce.is_some_and(|n| n != existing.nonce) {
        return Err(unknown());
    }
    if existing.completed_at.is_some() {
        return Err(match resolved_by {
            Some(_) => LedgerError::NotUncertain(proposal_id.to_string()),
            None => LedgerError::AlreadyCompleted(proposal_id.to_string()),
        });
    }
    let principal: String;
    let actor = match resolved_by {
        Some(by) => Actor::Person(by),
        None => {
            principal = sqlx::query("SELECT principal FROM intents WHERE nonce = $1")
                .bind(&existing.nonce)
                .fetch_one(&mut *conn)
                .await?
                .try_get("principal")?;
            Actor::Head(&principal)
        }
    };
    insert_completion(conn, proposal_id, &existing.nonce, outcome, actor).await
}

/// Who records a completion: the head of the intent's principal, or a
/// person resolving an uncertain intent.
#[derive(Clone, Copy)]
pub(super) enum Actor<'a> {
    /// A head completing its own intent: the intent's principal.
    Head(&'a str),
    /// A person's resolution: who resolved it.
    Person(&'a str),
}

/// Write a completion and its `completed` (or `resolved`) event on `conn`,
/// inside the caller's write transaction, for an intent the caller knows
/// has no completion yet (checked by [`complete_in`], or recorded by the
/// same transaction). The disposition is what was written.
pub(super) async fn insert_completion(
    conn: &mut Conn,
    proposal_id: &str,
    nonce: &str,
    (status, error, result): (&str, Option<&str>, &Value),
    actor: Actor<'_>,
) -> Result<Disposition, LedgerError> {
    let result_text = countersign_verifier::canonical::to_canonical(result)
        .map_err(|e| LedgerError::Corrupt(format!("effect result: {e}")))?;
    let at = timefmt::format(timefmt::now())?;
    let (kind, who, resolved_by) = match actor {
        Actor::Head(principal) => ("completed", principal, None),
        Actor::Person(by) => ("resolved", by, Some(by)),
    };
    sqlx::query(
        "INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
             completed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(nonce)
    .bind(proposal_id)
    .bind(status)
    .bind(error)
    .bind(&result_text)
    .bind(resolved_by)
    .bind(&at)
    .execute(&mut *conn)
    .await?;
    let details = json!({ "nonce": nonce, "status": status, "error": error });
    events::append(conn, &at, kind, Some(proposal_id), who, &details).await?;
    rows::completed(
        proposal_id.to_string(),
        nonce.to_string(),
        status,
        error.map(str::to_string),
        &result_text,
        &at,
    )
}

/// Step 5 of a consumption, on `conn` inside the caller's write
/// transaction, after [`check_consumable`] found the nonce fresh: burn the
/// nonce, record the intent and its `intent` event.
async fn record_intent(conn: &mut Conn, proof: &VerifiedProof) -> Result<Intent, LedgerError> {
    let claims = proof.claims();
    let proof_sha256 = proof.proof_sha256().to_string();
    let arguments_json = countersign_verifier::canonical::to_canonical(&claims.args)
        .map_err(|_| LedgerRefusal::ProposalMismatch)?;
    let recorded_at = timefmt::now();
    let at = timefmt::format(recorded_at)?;
    sqlx::query(
        "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at) VALUES ($1, $2, $3)",
    )
    .bind(&claims.jti)
    .bind(&claims.pid)
    .bind(&at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO intents (nonce, proposal_id, principal, session, operation,
             arguments_json, proof_sha256, recorded_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&claims.jti)
    .bind(&claims.pid)
    .bind(&claims.sub)
    .bind(&claims.sid)
    .bind(&claims.op)
    .bind(&arguments_json)
    .bind(&proof_sha256)
    .bind(&at)
    .execute(&mut *conn)
    .await?;
    let details = json!({
        "nonce": claims.jti,
        "proof_sha256": proof_sha256,
        "session": claims.sid,
        "operation": claims.op,
    });
    events::append(
        conn,
        &at,
        "intent",
        Some(&claims.pid),
        &claims.sub,
        &details,
    )
    .await?;
    Ok(Intent {
        proposal_id: claims.pid.clone(),
        nonce: claims.jti.clone(),
        principal: claims.sub.clone(),
        session: claims.sid.clone(),
        operation: claims.op.clone(),
        arguments_json,
        proof_sha256,
        recorded_at,
    })
}

impl Store {
    /// Checks 1 to 4 on a read connection, without any lock: a replay or a
    /// refusal is answered at once (both are final: consumed nonces,
    /// revocations and proposals are append-only), so a losing caller never
    /// queues for the write lock. `Some` with the recorded disposition on a
    /// replay. Only the checks inside the write transaction decide.
    async fn precheck(&self, proof: &VerifiedProof) -> Result<Option<Disposition>, LedgerError> {
        let mut read = self.reader.acquire().await?;
        check_consumable(&mut read, proof, false).await
    }

    /// Consume a verified proof once; see [`crate::Ledger::begin_consume`].
    /// The checks run twice: [`Store::precheck`], then again inside the
    /// write transaction, which alone decides.
    pub(crate) async fn begin_consume(
        &self,
        proof: &VerifiedProof,
    ) -> Result<ConsumeStart, LedgerError> {
        if let Some(disposition) = self.precheck(proof).await? {
            return Ok(ConsumeStart::Replay(disposition));
        }
        let mut tx = self.write_tx().await?;
        if let Some(disposition) = check_consumable(&mut tx, proof, true).await? {
            tx.rollback().await?;
            return Ok(ConsumeStart::Replay(disposition));
        }
        let intent = record_intent(&mut tx, proof).await?;
        tx.commit().await?;
        Ok(ConsumeStart::Fresh(intent))
    }

    /// Consume a verified proof and apply its builtin `effect` in ONE write
    /// transaction; see [`crate::Ledger::consume_builtin`]. The same steps
    /// as [`Store::begin_consume`] followed by those of
    /// [`Store::apply_builtin_and_complete`], committed once.
    pub(crate) async fn consume_builtin(
        &self,
        proof: &VerifiedProof,
        effect: &str,
    ) -> Result<Consumed, LedgerError> {
        // Only the transition the proof authorizes: a builtin backs only the
        // operation of its own name (the registry enforces it too).
        if effect != proof.claims().op {
            return Err(LedgerRefusal::ProposalMismatch.into());
        }
        if let Some(disposition) = self.precheck(proof).await? {
            return Ok(Consumed::Replay(disposition));
        }
        let mut tx = self.write_tx().await?;
        if let Some(disposition) = check_consumable(&mut tx, proof, true).await? {
            tx.rollback().await?;
            return Ok(Consumed::Replay(disposition));
        }
        let intent = record_intent(&mut tx, proof).await?;
        crash_point("after_intent");
        let (_, disposition) =
            apply_and_complete_in(&mut tx, &intent, effect, Recorded::ThisTransaction).await?;
        crash_point("after_effect");
        tx.commit().await?;
        Ok(Consumed::Completed(disposition))
    }

    /// Record the completion of an intent (the second transaction).
    pub(crate) async fn complete(
        &self,
        intent: &Intent,
        outcome: &EffectOutcome,
    ) -> Result<Disposition, LedgerError> {
        let (status, error, result) = outcome.parts();
        self.record_completion(
            &intent.proposal_id,
            Some(&intent.nonce),
            status,
            error,
            result,
            None,
        )
        .await
    }

    /// A person's resolution of an uncertain intent.
    pub(crate) async fn resolve_uncertain(
        &self,
        proposal_id: &str,
        applied: bool,
        by: &str,
    ) -> Result<Disposition, LedgerError> {
        let (status, error) = if applied {
            ("applied", None)
        } else {
            ("failed", Some("resolved by a person as not applied"))
        };
        let result = json!({ "resolved_by": by });
        self.record_completion(proposal_id, None, status, error, &result, Some(by))
            .await
    }

    /// Record a completion and its event in its own write transaction.
    async fn record_completion(
        &self,
        proposal_id: &str,
        nonce: Option<&str>,
        status: &str,
        error: Option<&str>,
        result: &Value,
        resolved_by: Option<&str>,
    ) -> Result<Disposition, LedgerError> {
        let mut tx = self.write_tx().await?;
        let disposition = complete_in(
            &mut tx,
            proposal_id,
            nonce,
            (status, error, result),
            resolved_by,
        )
        .await?;
        tx.commit().await?;
        Ok(disposition)
    }

    /// The disposition of a proposal's consumed proof, if consumed.
    pub(crate) async fn disposition(
        &self,
        proposal_id: &str,
    ) -> Result<Option<Disposition>, LedgerError> {
        let row = sqlx::query(concat!(disposition_select!(), "WHERE n.proposal_id = $1"))
            .bind(proposal_id)
            .fetch_optional(&self.reader)
            .await?;
        row.map(|row| rows::disposition(&row)).transpose()
    }

    /// Intents without completion, oldest first.
    pub(crate) async fn interrupted(&self) -> Result<Vec<Intent>, LedgerError> {
        let found = sqlx::query(concat!(
            intent_select!(),
            "WHERE NOT EXISTS (SELECT 1 FROM completions c WHERE c.nonce = t.nonce)
             ORDER BY t.recorded_at, t.nonce"
        ))
        .fetch_all(&self.reader)
        .await?;
        found.iter().map(rows::intent).collect()
    }
}
