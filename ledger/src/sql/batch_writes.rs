//! The writes of consumptions, one job's or a batch's (shared by both
//! backends, see the crate root): each job is planned in memory, its
//! events extending its chain's tail, then one statement
//! (`consume_sql::BATCH_WRITES`) writes them all in one round trip, so a
//! batch holds its chain for one write however many jobs it has. A job
//! alone (`consume.rs`) and each job of a batch's long way are a batch of
//! one here, and a batch's short way (`fast_batch.rs`) plans all its fresh
//! jobs at once: a consumption's rows have one planning and one text per
//! backend, whichever way it went.
//!
//! The statement takes two JSON arrays: `$1` the jobs (one object per
//! consumed nonce, with its intent and, for a builtin, how it ended) and
//! `$2` the events in the order they extend their chains, each with its
//! position `ord`; `$3` is the state namespace. The database checks what
//! it checks of any write: a nonce consumed once, the proof's consume key
//! (PostgreSQL), and the chain trigger refuses an event that does not
//! extend its chain's head, so an event out of order fails the whole
//! statement (and the batch takes the long way) rather than fork a chain.

use serde::Serialize;
use serde_json::json;
use time::Duration;
use zeroize::Zeroizing;

use super::consume::Presented;
use super::consume_sql::BATCH_WRITES;
use super::effects::plan_transition;
use super::events::{self, NewEvent, Tail};
use super::{Conn, rows};
use crate::error::{EffectFailure, LedgerError, LedgerRefusal};
use crate::owner;
use crate::schedule::{self, Change};
use crate::timefmt;
use crate::types::{ConsumeStart, Consumed, Intent};

/// One consumed nonce of `$1`: its intent, and how a builtin ended.
#[derive(Serialize)]
struct JobRow<'a> {
    nonce: String,
    pid: String,
    principal: String,
    session: String,
    op: String,
    args: String,
    sha: String,
    at: String,
    crev: String,
    lease: String,
    owner: &'static str,
    /// The proof's consume key (secret while the proof is unused).
    ckey: &'a str,
    /// `applied` or `failed` for a builtin; none for a two-phase start.
    outcome: Option<&'static str>,
    error: Option<String>,
    result: Option<String>,
    /// The state key written (`value`) or deleted (`value` none) by an
    /// applied builtin, whose `effect_applied` event is at `aseq`.
    skey: Option<String>,
    value: Option<String>,
    effect: Option<&'a str>,
    aseq: Option<i64>,
}

/// One event of `$2`, at position `ord` of the batch's events.
#[derive(Serialize)]
struct EventRow<'a> {
    ord: usize,
    chain: &'a str,
    seq: i64,
    at: &'a str,
    kind: &'static str,
    pid: &'a str,
    actor: &'a str,
    details: String,
    prev: String,
    hash: String,
}

/// The planned writes of a batch's fresh jobs, in order; `'a` is the
/// batch's jobs, whose consume keys and effects they borrow.
#[derive(Default)]
pub(super) struct BatchWrites<'a> {
    jobs: Vec<JobRow<'a>>,
    /// Serialized as planned: an event borrows its job's names.
    events: Vec<String>,
}

impl<'a> BatchWrites<'a> {
    /// Plan the first transaction of a two-phase consumption of `proof`
    /// (see [`crate::Ledger::begin_consume`]): the nonce, the intent leased
    /// for `lease` and its event.
    pub(super) fn begin(
        &mut self,
        proof: &'a Presented,
        lease: Duration,
        tail: &mut Tail,
    ) -> Result<ConsumeStart, LedgerError> {
        let intent = intent_of(proof, lease)?;
        let at = timefmt::format(intent.recorded_at)?;
        let event = intent_event(tail, &intent, &at)?;
        let job = job_row(&intent, &at, proof)?;
        self.push(job, [("intent", event)])?;
        Ok(ConsumeStart::Fresh(intent))
    }

    /// Plan a builtin consumption of `proof` applying `effect` to the
    /// state key's current value `state`: applied, or consumed and failed
    /// when the transition is refused.
    pub(super) fn builtin(
        &mut self,
        proof: &'a Presented,
        effect: &'a str,
        state: Option<&str>,
        tail: &mut Tail,
    ) -> Result<Consumed, LedgerError> {
        let intent = intent_of(proof, Duration::ZERO)?;
        let at = timefmt::format(intent.recorded_at)?;
        let mut job = job_row(&intent, &at, proof)?;
        let (pid, nonce) = (intent.proposal_id.clone(), intent.nonce.clone());
        let disposition = match plan_transition(effect, &proof.claims().args, state) {
            Ok(plan) => {
                let Applied {
                    key,
                    value,
                    result,
                    events: [first, applied, completed],
                } = plan_applied(&intent, &at, effect, &plan, tail)?;
                let disposition = rows::completed(pid, nonce, "applied", None, &result, &at)?;
                job.outcome = Some("applied");
                job.aseq = Some(applied.seq);
                (job.skey, job.value, job.effect) = (Some(key), value, Some(effect));
                job.result = Some(result);
                let events = [
                    ("intent", first),
                    ("effect_applied", applied),
                    ("completed", completed),
                ];
                self.push(job, events)?;
                disposition
            }
            Err(EffectFailure::Database(e)) => return Err(LedgerError::Database(e)),
            Err(refused) => {
                // Refused before any state write: consumed, and failed.
                let error = refused.to_string();
                let first = intent_event(tail, &intent, &at)?;
                let result = "null";
                let details =
                    events::completed_details(&intent.nonce, "failed", Some(&error), result);
                let proposal = Some(intent.proposal_id.as_str());
                let done = tail.extend(&at, "completed", proposal, &intent.principal, &details)?;
                let disposition =
                    rows::completed(pid, nonce, "failed", Some(error.clone()), result, &at)?;
                job.outcome = Some("failed");
                (job.error, job.result) = (Some(error), Some(result.to_owned()));
                self.push(job, [("intent", first), ("completed", done)])?;
                disposition
            }
        };
        Ok(Consumed::Completed(disposition))
    }

    /// Plan a consumption of `proof` whose effect is only its record (see
    /// [`crate::Ledger::consume_recorded`]): the nonce, the intent and an
    /// applied completion carrying `result` (canonical JSON), with their
    /// events. No state is written.
    pub(super) fn recorded(
        &mut self,
        proof: &'a Presented,
        result: &str,
        tail: &mut Tail,
    ) -> Result<Consumed, LedgerError> {
        let intent = intent_of(proof, Duration::ZERO)?;
        let at = timefmt::format(intent.recorded_at)?;
        let first = intent_event(tail, &intent, &at)?;
        let details = events::completed_details(&intent.nonce, "applied", None, result);
        let proposal = Some(intent.proposal_id.as_str());
        let done = tail.extend(&at, "completed", proposal, &intent.principal, &details)?;
        let (pid, nonce) = (intent.proposal_id.clone(), intent.nonce.clone());
        let disposition = rows::completed(pid, nonce, "applied", None, result, &at)?;
        let mut job = job_row(&intent, &at, proof)?;
        job.outcome = Some("applied");
        job.result = Some(result.to_owned());
        self.push(job, [("intent", first), ("completed", done)])?;
        Ok(Consumed::Completed(disposition))
    }

    /// Add `job` and its `events` (with their kinds), which extend its
    /// principal's chain in order.
    fn push<const N: usize>(
        &mut self,
        job: JobRow<'a>,
        events: [(&'static str, NewEvent); N],
    ) -> Result<(), LedgerError> {
        for (kind, event) in events {
            let row = EventRow {
                ord: self.events.len(),
                chain: &job.principal,
                seq: event.seq,
                at: &job.at,
                kind,
                pid: &job.pid,
                actor: &job.principal,
                details: event.details,
                prev: event.prev_hash,
                hash: event.hash,
            };
            self.events.push(to_json("event", &row)?);
        }
        self.jobs.push(job);
        Ok(())
    }

    /// Whether a builtin consumption is among the planned writes.
    pub(super) fn has_builtin(&self) -> bool {
        self.jobs.iter().any(|job| job.outcome.is_some())
    }

    /// Write every planned job in one statement on `conn`, inside the
    /// batch's write transaction. Nothing planned: nothing to write.
    pub(super) async fn write(self, conn: &mut Conn) -> Result<(), LedgerError> {
        if self.jobs.is_empty() {
            return Ok(());
        }
        // The jobs carry consume keys: their text is cleared once sent.
        let jobs = Zeroizing::new(to_json("jobs", &self.jobs)?);
        let events = format!("[{}]", self.events.join(","));
        sqlx::query(BATCH_WRITES)
            .bind(jobs.as_str())
            .bind(events)
            .bind(schedule::NAMESPACE)
            .execute(&mut *conn)
            .await?;
        Ok(())
    }
}

/// The row of `intent`'s nonce and intent, recorded at `at`.
fn job_row<'a>(intent: &Intent, at: &str, proof: &'a Presented) -> Result<JobRow<'a>, LedgerError> {
    Ok(JobRow {
        nonce: intent.nonce.clone(),
        pid: intent.proposal_id.clone(),
        principal: intent.principal.clone(),
        session: intent.session.clone(),
        op: intent.operation.clone(),
        args: intent.arguments_json.clone(),
        sha: intent.proof_sha256.clone(),
        at: at.to_owned(),
        crev: intent.contract_revision.clone(),
        lease: timefmt::format(intent.lease_until)?,
        owner: owner::current(),
        ckey: proof.consume_key(),
        outcome: None,
        error: None,
        result: None,
        skey: None,
        value: None,
        effect: None,
        aseq: None,
    })
}

/// The `intent` event of `intent`, planned on `tail`.
fn intent_event(tail: &mut Tail, intent: &Intent, at: &str) -> Result<NewEvent, LedgerError> {
    let details = json!({
        "nonce": intent.nonce,
        "proof_sha256": intent.proof_sha256,
        "session": intent.session,
        "operation": intent.operation,
    });
    tail.extend(
        at,
        "intent",
        Some(&intent.proposal_id),
        &intent.principal,
        &details,
    )
}

/// The rows and events of a builtin consumption whose transition is
/// allowed, planned on the chain's tail.
struct Applied {
    /// The state key written or deleted.
    key: String,
    /// Its new value, canonical JSON; `None` deletes it.
    value: Option<String>,
    /// The effect's result, canonical JSON.
    result: String,
    /// The `intent`, `effect_applied` and `completed` events, in order.
    events: [NewEvent; 3],
}

/// Plan the writes of an allowed transition `plan` of `intent`'s builtin
/// `effect` at `at`, advancing `tail` past its three events.
fn plan_applied(
    intent: &Intent,
    at: &str,
    effect: &str,
    plan: &schedule::Plan,
    tail: &mut Tail,
) -> Result<Applied, LedgerError> {
    let (key, value) = match &plan.change {
        Change::Put { key, value } => (
            key,
            Some(
                countersign_verifier::canonical::to_canonical(value)
                    .map_err(|e| LedgerError::Corrupt(format!("schedule value: {e}")))?,
            ),
        ),
        Change::Delete { key } => (key, None),
    };
    let result = countersign_verifier::canonical::to_canonical(&plan.result)
        .map_err(|e| LedgerError::Corrupt(format!("effect result: {e}")))?;
    let (proposal, actor) = (Some(intent.proposal_id.as_str()), &intent.principal);
    let first = intent_event(tail, intent, at)?;
    let details = events::applied_details(&intent.nonce, effect);
    let applied = tail.extend(at, "effect_applied", proposal, actor, &details)?;
    let details = events::completed_details(&intent.nonce, "applied", None, &result);
    let completed = tail.extend(at, "completed", proposal, actor, &details)?;
    Ok(Applied {
        key: key.clone(),
        value,
        result,
        events: [first, applied, completed],
    })
}

/// The intent a verified proof authorizes, recorded now, leased to its
/// head for `lease`.
fn intent_of(proof: &Presented, lease: Duration) -> Result<Intent, LedgerError> {
    let claims = proof.claims();
    let recorded_at = timefmt::now();
    Ok(Intent {
        proposal_id: claims.pid.clone(),
        nonce: claims.jti.clone(),
        principal: claims.sub.clone(),
        session: claims.sid.clone(),
        operation: claims.op.clone(),
        arguments_json: countersign_verifier::canonical::to_canonical(&claims.args)
            .map_err(|_| LedgerRefusal::ProposalMismatch)?,
        proof_sha256: proof.proof_sha256().to_owned(),
        contract_revision: claims.crev.clone(),
        recorded_at,
        lease_until: recorded_at + lease,
    })
}

/// `value` as JSON text.
fn to_json(what: &str, value: &impl Serialize) -> Result<String, LedgerError> {
    serde_json::to_string(value).map_err(|e| LedgerError::Corrupt(format!("batch {what}: {e}")))
}
