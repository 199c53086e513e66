//! The heads' side of consumption (shared by both backends, see the
//! crate root): consume a verified proof once, record how it ended, read
//! dispositions, list interrupted intents and record a person's resolution.
//!
//! Two flows share the same steps (`check_consumable`, then the writes
//! planned and written by `batch_writes.rs` in one round trip):
//! - `consume_builtin`, for effects inside the ledger: checks, nonce,
//!   intent, effect and completion in ONE write transaction. Any error rolls
//!   all of it back: the nonce is not burned, nothing is applied, and the
//!   same proof can be presented again. Never uncertain.
//! - `begin_consume` + `complete`, for effects outside the ledger
//!   (`command`): the first transaction burns the nonce and records the
//!   intent, the head runs the effect, the second records completion. An
//!   intent without completion is `uncertain` until reconciled.
//!
//! Both run as jobs of a group commit (`batch.rs`): concurrent ones share
//! one write transaction, so "ONE write transaction" below means all of a
//! consumption's writes commit together or not at all. A batch of them
//! runs the checks of every job in one statement (`fast_batch.rs`, with
//! the columns and joins of `check_consumable`'s statement, and the same
//! judgement, `judge`) and then every job's writes in one more: the same
//! statement a job alone writes with here, so a consumption's rows have
//! one text per backend (`consume_sql::BATCH_WRITES`).
//!
//! Neither reads anything before its write transaction: a caller that wants
//! replays answered without queueing for the write lock reads the proposal
//! first (the gate does, for verification), as consumed nonces are final.

use serde_json::{Value, json};
use sqlx::Row as _;

use super::batch::Job;
use super::batch_writes::BatchWrites;
use super::events::Tail;
use super::locks::lock_proposal_row;
use super::rows::{self, disposition_select, intent_columns};
use super::{Conn, Store, events, intents, premise};
use crate::error::{LedgerError, LedgerRefusal};
use crate::fault::crash_point;
use crate::owner;
use crate::premise_command::CommandNow;
use crate::schedule;
use crate::timefmt;
use crate::types::{ConsumeStart, Consumed, Disposition, EffectOutcome, Intent, Interrupted};
use countersign_verifier::VerifiedProof;
use time::Duration;

/// What the checks inside a write transaction found.
pub(super) enum Checked {
    /// The nonce was already consumed: its recorded disposition.
    Replay(Disposition),
    /// The proof may be consumed now: the chain head, and the current value
    /// of the state key asked for (canonical JSON), if it has one.
    Fresh { tail: Tail, state: Option<String> },
}

/// The columns the checks of a consumption read (from the proposal `p`,
/// its chain head `h`, issuance `i`, revocation `r`, rule use `u` and
/// rule `g`, consumed nonce `n`, completion `c` and state `s`).
macro_rules! check_columns {
    () => {
        concat!(
            "SELECT p.id AS p_id, p.principal AS p_principal, p.operation AS p_operation,
                p.premise AS p_premise,
                p.arguments_sha256 AS p_arguments_sha256,
                p.contract_revision AS p_contract_revision,
                p.policy_revision AS p_policy_revision,
                i.session AS i_session, i.expires_at AS i_expires_at,
                r.proposal_id IS NOT NULL AS revoked,
                n.nonce AS nonce, n.proposal_id AS proposal_id,
                c.status AS status, c.error AS error, c.result AS result,
                c.completed_at AS completed_at,
                COALESCE(h.count, 0) AS head_count,
                COALESCE(h.hash, '0000000000000000000000000000000000000000000000000000000000000000')
                    AS head_hash,
                s.value AS state_value,
                u.rule_id AS u_rule, u.version AS u_version,
                g.version AS g_version, g.status AS g_status, g.expires_at AS g_expires_at, ",
            db_now!(),
            " AS db_now "
        )
    };
}
pub(super) use check_columns;

/// The joins of the checks' statement, after the proposal `p`: the proof's
/// hash `$sha` (the issued proof's, or that of the one another signer
/// signed again for the nonce, `resigned_proofs`) and nonce `$nonce`, the
/// state namespace `$ns` and key `$key` (SQL expressions).
macro_rules! check_joins {
    ($sha:literal, $nonce:literal, $ns:literal, $key:literal) => {
        concat!(
            " LEFT JOIN chain_heads h ON h.chain = p.principal
             LEFT JOIN issuances i
                    ON i.proposal_id = p.id AND i.nonce = ",
            $nonce,
            " AND (i.proof_sha256 = ",
            $sha,
            " OR EXISTS (SELECT 1 FROM resigned_proofs rp
                          WHERE rp.nonce = i.nonce AND rp.proof_sha256 = ",
            $sha,
            ")) LEFT JOIN revocations r ON r.proposal_id = p.id
             LEFT JOIN rule_uses u ON u.proposal_id = i.proposal_id
             LEFT JOIN rules g ON g.id = u.rule_id
                    AND g.version = (SELECT MAX(x.version) FROM rules x WHERE x.id = u.rule_id)
             LEFT JOIN consumed_nonces n ON n.nonce = i.nonce
             LEFT JOIN completions c ON c.nonce = n.nonce
             LEFT JOIN state s ON s.principal = p.principal AND s.namespace = ",
            $ns,
            " AND s.key = ",
            $key,
            " "
        )
    };
}
pub(super) use check_joins;

/// The checks of a consumption, on `conn` inside the write transaction,
/// which alone decides, once the batch holds the proposal's row lock and
/// the chain head's (on PostgreSQL; see `batch.rs`): so revocation and
/// consumption of one proposal serialize, and the state read here is not
/// changed by another transition before this one commits. The checks read
/// what the previous lock holders committed. `state_key`: the builtin's key
/// in the state store.
async fn check_consumable(
    conn: &mut Conn,
    proof: &Presented,
    state_key: Option<&str>,
) -> Result<Checked, LedgerError> {
    let claims = &proof.claims;
    // Every fact the checks and the writes need, in one statement.
    let row = sqlx::query(concat!(
        check_columns!(),
        "FROM proposals p",
        check_joins!("$2", "$3", "$4", "$5"),
        "WHERE p.id = $1"
    ))
    .bind(&claims.pid)
    .bind(&proof.proof_sha256)
    .bind(&claims.jti)
    .bind(schedule::NAMESPACE)
    .bind(state_key)
    .fetch_optional(&mut *conn)
    .await?;
    let row = row.ok_or(LedgerRefusal::UnknownProposal)?;
    let now = match judge(&row, proof)? {
        Judged::Replay(disposition) => return Ok(Checked::Replay(disposition)),
        Judged::Fresh { now } => now,
    };
    // 6. The premise still holds: a state premise read again under the
    // locks, a command premise as established just before them.
    if let Some(premise) = &claims.premise {
        countersign_verifier::canonical::to_canonical(&claims.args)
            .map_err(|_| LedgerRefusal::ProposalMismatch)?;
        premise::check_holds(conn, &claims.sub, premise, proof.command_now.as_ref()).await?;
    }
    // 6. Issued under a rule: the rule still live at that version.
    check_rule_live(&row, claims.grant.as_ref(), &now)?;
    fresh(&row, proof)
}

/// What steps 1 to 5 of the checks found in a row of the checks'
/// statement.
pub(super) enum Judged {
    /// The nonce was already consumed: its recorded disposition.
    Replay(Disposition),
    /// Not consumed, and not expired at `now` (the database's clock).
    Fresh { now: String },
}

/// Steps 1 to 5 of the checks, from a row of the checks' statement (the
/// premise and the rule follow, see [`check_consumable`]).
pub(super) fn judge(row: &super::DbRow, proof: &Presented) -> Result<Judged, LedgerError> {
    let claims = &proof.claims;
    // 1. The proposal, and that the claims match it.
    if row.try_get::<Option<String>, _>("p_id")?.is_none() {
        return Err(LedgerRefusal::UnknownProposal.into());
    }
    let matches = row.try_get::<String, _>("p_principal")? == claims.sub
        && row.try_get::<String, _>("p_operation")? == claims.op
        && row.try_get::<String, _>("p_arguments_sha256")? == claims.args_sha256
        && row.try_get::<String, _>("p_contract_revision")? == claims.crev
        && row.try_get::<String, _>("p_policy_revision")? == claims.prev;
    // The premise the proof carries is the one recorded at proposal.
    let premise = claims
        .premise
        .as_ref()
        .map(countersign_verifier::Premise::canonical_text)
        .transpose()
        .map_err(|_| LedgerRefusal::ProposalMismatch)?;
    if !matches || row.try_get::<Option<String>, _>("p_premise")? != premise {
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

    // 4. Already consumed: the recorded disposition, never a second effect
    // (also once the rule it was issued under is revoked).
    if row.try_get::<Option<String>, _>("nonce")?.is_some() {
        return rows::disposition(row).map(Judged::Replay);
    }

    // 5. Not expired by the database's clock, read after the locks: the
    // head verified expiry with its own clock before it queued for them.
    // Both are the ledger's fixed, sortable text form.
    let expires_at: String = row.try_get("i_expires_at")?;
    let now: String = row.try_get("db_now")?;
    if now >= expires_at {
        return Err(LedgerRefusal::Expired.into());
    }
    Ok(Judged::Fresh { now })
}

/// A fresh consumption's chain head and state value, from its row of the
/// checks' statement.
pub(super) fn fresh(row: &super::DbRow, proof: &Presented) -> Result<Checked, LedgerError> {
    Ok(Checked::Fresh {
        tail: Tail::from_row(&proof.claims.sub, row, "head_count", "head_hash")?,
        state: row.try_get("state_value")?,
    })
}

/// Step 6 of [`check_consumable`], from its row: a proof issued under a
/// rule (its `grant`, which the issuance's recorded use must name exactly,
/// else `ProposalMismatch`) is consumed only while that rule's latest
/// version is the one it names and active (`RuleRevoked`: revoked or
/// revised since) and unexpired by the database's clock `now`
/// (`RuleExpired`). A proof without a grant must have no recorded use.
pub(super) fn check_rule_live(
    row: &super::DbRow,
    grant: Option<&countersign_verifier::Grant>,
    now: &str,
) -> Result<(), LedgerError> {
    let used: Option<String> = row.try_get("u_rule")?;
    let Some(grant) = grant else {
        return match used {
            None => Ok(()),
            Some(_) => Err(LedgerRefusal::ProposalMismatch.into()),
        };
    };
    let version = i64::try_from(grant.version).map_err(|_| LedgerRefusal::ProposalMismatch)?;
    let recorded = used.as_deref() == Some(grant.rule.as_str())
        && row.try_get::<Option<i64>, _>("u_version")? == Some(version);
    if !recorded {
        return Err(LedgerRefusal::ProposalMismatch.into());
    }
    let live = row.try_get::<Option<i64>, _>("g_version")? == Some(version)
        && row.try_get::<Option<String>, _>("g_status")?.as_deref() == Some("active");
    if !live {
        return Err(LedgerRefusal::RuleRevoked.into());
    }
    let expires_at: Option<String> = row.try_get("g_expires_at")?;
    if expires_at.is_none_or(|e| now >= e.as_str()) {
        return Err(LedgerRefusal::RuleExpired.into());
    }
    Ok(())
}

/// Insert a completion and its event on `conn`, inside the caller's write
/// transaction. With `intent`, it must be exactly the intent recorded
/// under its nonce, checked here (a head's completion); without, any
/// uncertain intent of the proposal (a person's resolution, `NotUncertain`
/// otherwise). `(status, error, result)`.
pub(super) async fn complete_in(
    conn: &mut Conn,
    proposal_id: &str,
    intent: Option<&Intent>,
    outcome: (&str, Option<&str>, &Value),
    resolved_by: Option<&str>,
) -> Result<Disposition, LedgerError> {
    lock_proposal_row(conn, proposal_id).await?;
    if let Some(intent) = intent {
        intents::recorded(conn, intent).await?;
    }
    let nonce = intent.map(|i| i.nonce.as_str());
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
    let intent_row = sqlx::query(concat!(
        "SELECT t.principal AS principal, t.lease_until AS lease_until, t.owner AS owner,
                t.lease_until > ",
        db_now!(),
        " AS leased FROM intents t WHERE t.nonce = $1"
    ))
    .bind(&existing.nonce)
    .fetch_one(&mut *conn)
    .await?;
    let principal: String = intent_row.try_get("principal")?;
    let actor = match resolved_by {
        Some(by) => {
            // A person's resolution never overtakes the head still running
            // the effect: its own completion is the one that counts.
            if still_running(&intent_row)? {
                return Err(LedgerError::StillRunning(
                    proposal_id.to_string(),
                    intent_row.try_get("lease_until")?,
                ));
            }
            Actor::Person(by)
        }
        None => Actor::Head,
    };
    let intent = (existing.nonce.as_str(), principal.as_str());
    insert_completion(conn, proposal_id, intent, outcome, actor).await
}

/// Whether the head that recorded an intent may still be running its
/// effect, from a row with `leased` (its lease has not ended by the
/// database's clock) and `owner`: leased, unless the owner is known to
/// have exited (see `crate::owner`).
pub(super) fn still_running(row: &super::DbRow) -> Result<bool, LedgerError> {
    Ok(
        row.try_get::<bool, _>("leased")?
            && !owner::known_dead(&row.try_get::<String, _>("owner")?),
    )
}

/// Who records a completion: the head of the intent's principal, or a
/// person resolving an uncertain intent.
#[derive(Clone, Copy)]
enum Actor<'a> {
    /// A head completing its own intent (the actor is the intent's
    /// principal).
    Head,
    /// A person's resolution: who resolved it.
    Person(&'a str),
}

/// Write a completion and its `completed` (or `resolved`) event on `conn`,
/// inside the caller's write transaction, for an intent [`complete_in`]
/// found without a completion. `(nonce, principal)`: the intent's; its
/// event extends the principal's chain. The disposition is what was
/// written. (A refused builtin's failed completion is written with its
/// intent, by `batch_writes.rs`.)
async fn insert_completion(
    conn: &mut Conn,
    proposal_id: &str,
    (nonce, principal): (&str, &str),
    (status, error, result): (&str, Option<&str>, &Value),
    actor: Actor<'_>,
) -> Result<Disposition, LedgerError> {
    let result_text = countersign_verifier::canonical::to_canonical(result)
        .map_err(|e| LedgerError::Corrupt(format!("effect result: {e}")))?;
    let at = timefmt::format(timefmt::now())?;
    let (kind, who, resolved_by) = match actor {
        Actor::Head => ("completed", principal, None),
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
    let details = events::completed_details(nonce, status, error, &result_text);
    events::append(conn, principal, &at, kind, Some(proposal_id), who, &details).await?;
    rows::completed(
        proposal_id.to_string(),
        nonce.to_string(),
        status,
        error.map(str::to_string),
        &result_text,
        &at,
    )
}

/// What a consumption needs of a verified proof, owned: a consumption runs
/// as a job of a group commit (`batch.rs`), in a task of its own that may
/// outlive the caller's borrow of the proof.
pub(super) struct Presented {
    claims: countersign_verifier::Claims,
    proof_sha256: String,
    /// The proof's consume key, hex (secret while the proof is unused).
    consume_key: zeroize::Zeroizing<String>,
    /// Its command premise as established before the write transaction.
    command_now: Option<CommandNow>,
}

impl Presented {
    pub(super) fn of(proof: &VerifiedProof, command_now: Option<CommandNow>) -> Presented {
        Presented {
            claims: proof.claims().clone(),
            proof_sha256: proof.proof_sha256().to_string(),
            consume_key: zeroize::Zeroizing::new(proof.consume_key().expose_hex()),
            command_now,
        }
    }

    /// The proposal it names.
    pub(super) fn proposal(&self) -> &str {
        &self.claims.pid
    }

    /// The principal whose chain its events extend.
    pub(super) fn principal(&self) -> &str {
        &self.claims.sub
    }

    /// What the proof says.
    pub(super) fn claims(&self) -> &countersign_verifier::Claims {
        &self.claims
    }

    /// The proof's SHA-256, hex.
    pub(super) fn proof_sha256(&self) -> &str {
        &self.proof_sha256
    }

    /// The proof's consume key, hex (secret while the proof is unused).
    pub(super) fn consume_key(&self) -> &str {
        &self.consume_key
    }
}

/// The first transaction of the two-phase flow (see
/// [`crate::Ledger::begin_consume`]), on `conn` inside the batch's write
/// transaction, under its locks: the checks, then the nonce, the intent
/// and its event. Writes nothing on a replay or an error.
pub(super) async fn begin_in(
    conn: &mut Conn,
    proof: &Presented,
    lease: Duration,
) -> Result<ConsumeStart, LedgerError> {
    let mut tail = match check_consumable(conn, proof, None).await? {
        Checked::Replay(disposition) => return Ok(ConsumeStart::Replay(disposition)),
        Checked::Fresh { tail, .. } => tail,
    };
    let mut writes = BatchWrites::default();
    let started = writes.begin(proof, lease, &mut tail)?;
    writes.write(conn).await?;
    Ok(started)
}

/// The key a builtin `effect` of `proof` reads and writes in the state
/// store; `None` for invalid arguments, which its plan refuses.
pub(super) fn state_key(proof: &Presented, effect: &str) -> Option<String> {
    schedule::key_of(effect, &proof.claims.args).ok()
}

/// A builtin consumption (see [`crate::Ledger::consume_builtin`]), on
/// `conn` inside the batch's write transaction, under its locks: the
/// checks (one statement, which also reads the chain head and the
/// schedule), then every write in one round trip (`batch_writes.rs`). A
/// refused transition records the intent and a `failed` completion, and
/// changes no state.
/// Writes nothing on a replay or an error.
pub(super) async fn builtin_in(
    conn: &mut Conn,
    proof: &Presented,
    effect: &str,
) -> Result<Consumed, LedgerError> {
    let key = state_key(proof, effect);
    let (mut tail, state) = match check_consumable(conn, proof, key.as_deref()).await? {
        Checked::Replay(disposition) => return Ok(Consumed::Replay(disposition)),
        Checked::Fresh { tail, state } => (tail, state),
    };
    // One transaction: nothing can be left running once it ends.
    let mut writes = BatchWrites::default();
    let consumed = writes.builtin(proof, effect, state.as_deref(), &mut tail)?;
    writes.write(conn).await?;
    // Both points are past every write of this consumption and before
    // its transaction commits: a crash at either leaves nothing.
    crash_point("after_intent");
    crash_point("after_effect");
    Ok(consumed)
}

/// A consumption whose effect is its record (see
/// [`crate::Ledger::consume_recorded`]), on `conn` inside the batch's
/// write transaction, under its locks: the checks, then the nonce, the
/// intent and the applied completion carrying `result`. Writes nothing on
/// a replay or an error.
pub(super) async fn recorded_in(
    conn: &mut Conn,
    proof: &Presented,
    result: &str,
) -> Result<Consumed, LedgerError> {
    let mut tail = match check_consumable(conn, proof, None).await? {
        Checked::Replay(disposition) => return Ok(Consumed::Replay(disposition)),
        Checked::Fresh { tail, .. } => tail,
    };
    let mut writes = BatchWrites::default();
    let consumed = writes.recorded(proof, result, &mut tail)?;
    writes.write(conn).await?;
    Ok(consumed)
}

impl Store {
    /// Consume a verified proof once; see [`crate::Ledger::begin_consume`].
    pub(crate) async fn begin_consume(
        &self,
        proof: &VerifiedProof,
        lease: Duration,
        command_now: Option<CommandNow>,
    ) -> Result<ConsumeStart, LedgerError> {
        let proof = Presented::of(proof, command_now);
        self.queued(|reply| Job::Begin {
            proof,
            lease,
            reply,
        })
        .await
    }

    /// Consume a verified proof and apply its builtin `effect` in ONE write
    /// transaction (which it may share with concurrent writes, see
    /// `batch.rs`); see [`crate::Ledger::consume_builtin`].
    pub(crate) async fn consume_builtin(
        &self,
        proof: &VerifiedProof,
        effect: &str,
        command_now: Option<CommandNow>,
    ) -> Result<Consumed, LedgerError> {
        // Only the transition the proof authorizes: a builtin backs only the
        // operation of its own name (the registry enforces it too).
        if effect != proof.claims().op {
            return Err(LedgerRefusal::ProposalMismatch.into());
        }
        let (proof, effect) = (Presented::of(proof, command_now), effect.to_string());
        self.queued(|reply| Job::Builtin {
            proof,
            effect,
            reply,
        })
        .await
    }

    /// Consume a verified proof whose effect is the record of `result`, in
    /// ONE write transaction (which it may share with concurrent writes,
    /// see `batch.rs`); see [`crate::Ledger::consume_recorded`].
    pub(crate) async fn consume_recorded(
        &self,
        proof: &VerifiedProof,
        result: &Value,
        command_now: Option<CommandNow>,
    ) -> Result<Consumed, LedgerError> {
        let result = countersign_verifier::canonical::to_canonical(result)
            .map_err(|e| LedgerError::Corrupt(format!("a recorded result: {e}")))?;
        let proof = Presented::of(proof, command_now);
        self.queued(|reply| Job::Recorded {
            proof,
            result,
            reply,
        })
        .await
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
            Some(intent),
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
        intent: Option<&Intent>,
        status: &str,
        error: Option<&str>,
        result: &Value,
        resolved_by: Option<&str>,
    ) -> Result<Disposition, LedgerError> {
        let mut tx = self.write_tx().await?;
        let disposition = complete_in(
            &mut tx,
            proposal_id,
            intent,
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

    /// Intents without completion, oldest first, each with whether its
    /// lease is still running by the database's clock.
    pub(crate) async fn interrupted(&self) -> Result<Vec<Interrupted>, LedgerError> {
        let found = sqlx::query(concat!(
            "SELECT ",
            intent_columns!(),
            ", t.owner AS owner, t.lease_until > ",
            db_now!(),
            " AS leased
             FROM intents t
             WHERE NOT EXISTS (SELECT 1 FROM completions c WHERE c.nonce = t.nonce)
             ORDER BY t.recorded_at, t.nonce"
        ))
        .fetch_all(&self.reader)
        .await?;
        found
            .iter()
            .map(|row| {
                Ok(Interrupted {
                    intent: rows::intent(row)?,
                    running: still_running(row)?,
                })
            })
            .collect()
    }
}
