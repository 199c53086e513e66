//! The short way through a batch of consumptions (shared by both
//! backends; see `batch.rs`): the checks of every job in one statement,
//! then every fresh job's writes in one more (`batch_writes.rs`), without
//! a savepoint per job. A batch of N consumptions then costs 4 round trips
//! (savepoint, checks, writes, commit) instead of 3N + 1.
//!
//! What makes reading every job's facts at once equivalent to reading
//! each one's just before its writes: the batch holds its locks from the
//! start (on PostgreSQL the proposals and the chain; on SQLite the
//! writer), and its jobs name distinct proposals and distinct state keys
//! (`distinct`: a job repeating an earlier one's goes to the next batch),
//! so no job of the batch writes what another's checks read, except the
//! chain heads, which are carried from job to job here as the writes are
//! planned. Jobs with a premise (its check reads state through statements
//! of its own) and approvals take the long way (`batch.rs`).
//!
//! Refusals and replays are decided from the checks and write nothing.
//! The writes are one statement, so one job's failing write fails them
//! all; that ends the short way: the batch's savepoint is rolled back and
//! the batch runs the long way, each job in its own savepoint, so the
//! failure is the failing job's alone.

use std::collections::HashMap;

use serde_json::json;

use super::batch::Job;
use super::batch_writes::BatchWrites;
use super::consume::{
    Checked, Judged, Presented, check_columns, check_joins, check_rule_live, fresh, judge,
    state_key,
};
use super::events::Tail;
use super::{Conn, DbRow};
use crate::error::LedgerError;
use crate::fault::crash_point;
use crate::schedule;
use crate::types::{ConsumeStart, Consumed};

/// A job's answer, decided in the batch and sent once it committed.
pub(super) enum Answer {
    Consumed(Result<Consumed, LedgerError>),
    Started(Result<ConsumeStart, LedgerError>),
}

/// Whether `job` may take the short way: a consumption without a premise.
pub(super) fn fits(job: &Job) -> bool {
    match job {
        Job::Builtin { proof, .. } | Job::Recorded { proof, .. } | Job::Begin { proof, .. } => {
            proof.claims().premise.is_none()
        }
        Job::Approve { .. } => false,
    }
}

/// `jobs` split in those to run now and those (in order) that repeat an
/// earlier job's proposal or state key, which run in the next batch.
pub(super) fn distinct(jobs: Vec<Job>) -> (Vec<Job>, Vec<Job>) {
    let mut proposals = std::collections::HashSet::new();
    let mut keys = std::collections::HashSet::new();
    jobs.into_iter().partition(|job| {
        let fresh_key = match job {
            Job::Builtin { proof, effect, .. } => match state_key(proof, effect) {
                Some(key) => keys.insert((proof.principal().to_string(), key)),
                None => true,
            },
            _ => true,
        };
        // Both sets learn the job's names even when it is repeated: a
        // third job repeating either is repeated as well.
        proposals.insert(job.proposal().to_string()) && fresh_key
    })
}

/// An approval given to the short way, which [`fits`] keeps out of it.
fn not_short() -> LedgerError {
    LedgerError::Corrupt("an approval cannot take a batch's short way".into())
}

/// The checks of every job of `jobs` (each [`fits`]), in one statement, in
/// the order of `jobs`.
async fn check_all(conn: &mut Conn, jobs: &[Job]) -> Result<Vec<DbRow>, LedgerError> {
    let mut items = Vec::with_capacity(jobs.len());
    for (ord, job) in jobs.iter().enumerate() {
        let (proof, key) = match job {
            Job::Builtin { proof, effect, .. } => (proof, state_key(proof, effect)),
            Job::Recorded { proof, .. } | Job::Begin { proof, .. } => (proof, None),
            Job::Approve { .. } => return Err(not_short()),
        };
        items.push(json!({
            "ord": ord,
            "pid": proof.proposal(),
            "sha": proof.proof_sha256(),
            "nonce": proof.claims().jti,
            "skey": key,
        }));
    }
    let items = serde_json::to_string(&items)
        .map_err(|e| LedgerError::Corrupt(format!("batch checks: {e}")))?;
    let rows = sqlx::query(batch_checks!())
        .bind(items)
        .bind(schedule::NAMESPACE)
        .fetch_all(&mut *conn)
        .await?;
    if rows.len() != jobs.len() {
        return Err(LedgerError::Corrupt(format!(
            "batch checks: {} rows for {} jobs",
            rows.len(),
            jobs.len()
        )));
    }
    Ok(rows)
}

/// The checks of one job from its row (no premise: see [`fits`]).
fn checked(row: &DbRow, proof: &Presented) -> Result<Checked, LedgerError> {
    match judge(row, proof)? {
        Judged::Replay(disposition) => Ok(Checked::Replay(disposition)),
        Judged::Fresh { now } => {
            check_rule_live(row, proof.claims().grant.as_ref(), &now)?;
            fresh(row, proof)
        }
    }
}

/// The chain heads the batch's planned writes extended, by principal: a
/// job extends the one an earlier job of its principal left, else the one
/// its checks read (before any of the batch's writes).
#[derive(Default)]
struct Heads(HashMap<String, Tail>);

impl Heads {
    /// The head to extend for `proof`'s principal.
    fn take(&mut self, proof: &Presented, checked: Tail) -> Tail {
        self.0.remove(proof.principal()).unwrap_or(checked)
    }

    fn put(&mut self, proof: &Presented, tail: Tail) {
        self.0.insert(proof.principal().to_string(), tail);
    }
}

/// Run `jobs` (each [`fits`], [`distinct`]) the short way on `conn`,
/// inside the batch's write transaction: their answers, in order. On a
/// failed write, everything the short way wrote is rolled back and the
/// error returned (the caller takes the long way); if even that rollback
/// fails, `Err(Some(error))`: the transaction is broken.
pub(super) async fn run(conn: &mut Conn, jobs: &[Job]) -> Result<Vec<Answer>, Option<LedgerError>> {
    sqlx::query("SAVEPOINT batch")
        .execute(&mut *conn)
        .await
        .map_err(|e| Some(LedgerError::from(e)))?;
    match writes(conn, jobs).await {
        Ok(answers) => Ok(answers),
        Err(error) => {
            tracing::debug!("a batch's short way failed ({error}); taking the long way");
            match sqlx::query("ROLLBACK TO SAVEPOINT batch")
                .execute(&mut *conn)
                .await
            {
                Ok(_) => Err(None),
                Err(e) => Err(Some(LedgerError::from(e))),
            }
        }
    }
}

/// The checks, then every fresh job's writes in one round trip
/// (`batch_writes.rs`); a failed write is `Err`.
async fn writes(conn: &mut Conn, jobs: &[Job]) -> Result<Vec<Answer>, LedgerError> {
    let rows = check_all(conn, jobs).await?;
    let mut heads = Heads::default();
    let mut planned = BatchWrites::default();
    let mut answers = Vec::with_capacity(jobs.len());
    for (job, row) in jobs.iter().zip(&rows) {
        let answer = match job {
            Job::Builtin { proof, effect, .. } => match checked(row, proof) {
                Err(refused) => Answer::Consumed(Err(refused)),
                Ok(Checked::Replay(d)) => Answer::Consumed(Ok(Consumed::Replay(d))),
                Ok(Checked::Fresh { tail, state }) => {
                    let mut tail = heads.take(proof, tail);
                    let consumed = planned.builtin(proof, effect, state.as_deref(), &mut tail)?;
                    heads.put(proof, tail);
                    Answer::Consumed(Ok(consumed))
                }
            },
            Job::Recorded { proof, result, .. } => match checked(row, proof) {
                Err(refused) => Answer::Consumed(Err(refused)),
                Ok(Checked::Replay(d)) => Answer::Consumed(Ok(Consumed::Replay(d))),
                Ok(Checked::Fresh { tail, .. }) => {
                    let mut tail = heads.take(proof, tail);
                    let consumed = planned.recorded(proof, result, &mut tail)?;
                    heads.put(proof, tail);
                    Answer::Consumed(Ok(consumed))
                }
            },
            Job::Begin { proof, lease, .. } => match checked(row, proof) {
                Err(refused) => Answer::Started(Err(refused)),
                Ok(Checked::Replay(d)) => Answer::Started(Ok(ConsumeStart::Replay(d))),
                Ok(Checked::Fresh { tail, .. }) => {
                    let mut tail = heads.take(proof, tail);
                    let started = planned.begin(proof, *lease, &mut tail)?;
                    heads.put(proof, tail);
                    Answer::Started(Ok(started))
                }
            },
            Job::Approve { .. } => return Err(not_short()),
        };
        answers.push(answer);
    }
    let builtin = planned.has_builtin();
    planned.write(conn).await?;
    if builtin {
        // Past every write of the batch's builtin consumptions and before
        // its transaction commits, as for one alone (`builtin_in`).
        crash_point("after_intent");
        crash_point("after_effect");
    }
    Ok(answers)
}
