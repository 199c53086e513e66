//! Group commit of consumptions and approvals (shared by both backends,
//! see the crate root): concurrent ones share one write transaction and
//! one commit.
//!
//! A consumption (`consume.rs`) or an approval, i.e. an issuance
//! (`signer.rs`), is queued as a job; whoever finds no batch running for
//! its queue starts one, in a task of its own (so a caller that stops
//! waiting cannot take the others' jobs down with it). That task takes
//! every job queued, runs them in one write transaction, each in its own
//! savepoint, commits once, and only then answers each caller; then it
//! takes what queued meanwhile, until the queue is empty. One caller alone
//! is a batch of one, started at once, without a savepoint: no added wait
//! and no added round trip.
//!
//! A batch of consumptions without premises takes a short way
//! (`fast_batch.rs`): every job's checks in one statement and every job's
//! writes in one more, without a savepoint per job; should the writes
//! fail, the batch goes back and takes the long way below.
//!
//! What a job's refusal or failure does: its savepoint is rolled back, so
//! it writes nothing (a consumption's proof stays usable, an approval's
//! proposal stays pending), and the other jobs go on. What a failed commit
//! does: nothing of the batch is durable, so every job of it is answered
//! with that error (even one that was refused or a replay: its answer was
//! read from writes that never committed), every proof of it stays usable
//! and every proposal it approved stays pending.
//!
//! Queues: on SQLite one (a database has one writer anyway). On
//! PostgreSQL one per chain, since a batch holds its chain's head until it
//! commits: locks are taken proposal first, chain second, and a batch
//! waits only for its first job's proposal, then the chain. It locks the
//! later jobs' proposals in one statement, without waiting (`SKIP LOCKED`):
//! waiting there, holding the chain, could deadlock with another process's
//! transaction that holds that proposal and waits for the chain. A job
//! whose proposal is held elsewhere goes back to the front of the queue
//! and leads the next batch, where it waits like any first job.
//!
//! Connections: on PostgreSQL a queue's task runs its batches on one
//! connection, held from one batch to the next (`BatchConn`), and gives it
//! back when the queue is empty or a batch ended in an error.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use time::Duration;
use tokio::sync::oneshot;

use super::consume::{Presented, begin_in, builtin_in, recorded_in};
use super::fast_batch::{self, Answer};
use super::locks::{lock_head, lock_proposal_row, try_lock_proposal_rows};
use super::signer::{Approval, approve_in};
use super::{BatchConn, Conn, ROW_LOCKS, Store};
use crate::error::LedgerError;
use crate::types::{CommittedBatch, ConsumeStart, Consumed};

/// At most this many jobs share a transaction (on PostgreSQL each
/// savepoint that writes is a subtransaction, and a backend keeps 64 of
/// them in shared memory before it overflows to disk).
const MAX_BATCH: usize = 64;

/// Where a job's answer goes.
pub(super) type Reply<T> = oneshot::Sender<Result<T, LedgerError>>;

/// One queued write, and where its answer goes.
pub(super) enum Job {
    /// [`crate::Ledger::consume_builtin`] of this proof and effect.
    Builtin {
        proof: Presented,
        effect: String,
        reply: Reply<Consumed>,
    },
    /// [`crate::Ledger::consume_recorded`] of this proof with this result
    /// (canonical JSON).
    Recorded {
        proof: Presented,
        result: String,
        reply: Reply<Consumed>,
    },
    /// [`crate::Ledger::begin_consume`] of this proof with this lease.
    Begin {
        proof: Presented,
        lease: Duration,
        reply: Reply<ConsumeStart>,
    },
    /// [`crate::Ledger::record_approval`] and its kin: an issuance.
    Approve {
        approval: Box<Approval>,
        reply: Reply<()>,
    },
}

/// A job that ran: whether it wrote nothing because it failed, and how to
/// answer its caller once the batch's fate is known.
struct Ran {
    failed: bool,
    /// An approval (else a consumption).
    approval: bool,
    answer: Box<dyn FnOnce(Option<LedgerError>) + Send>,
}

impl Job {
    /// The proposal it writes about (locked first).
    pub(super) fn proposal(&self) -> &str {
        match self {
            Job::Builtin { proof, .. } | Job::Recorded { proof, .. } | Job::Begin { proof, .. } => {
                proof.proposal()
            }
            Job::Approve { approval, .. } => &approval.issuance.proposal_id,
        }
    }

    /// The principal whose chain its events extend.
    fn principal(&self) -> &str {
        match self {
            Job::Builtin { proof, .. } | Job::Recorded { proof, .. } | Job::Begin { proof, .. } => {
                proof.principal()
            }
            Job::Approve { approval, .. } => &approval.issuance.principal,
        }
    }

    /// Run the job on `conn`, inside the batch's transaction.
    async fn run(self, conn: &mut Conn) -> Ran {
        match self {
            Job::Builtin {
                proof,
                effect,
                reply,
            } => Ran::of(builtin_in(conn, &proof, &effect).await, reply, false),
            Job::Recorded {
                proof,
                result,
                reply,
            } => Ran::of(recorded_in(conn, &proof, &result).await, reply, false),
            Job::Begin {
                proof,
                lease,
                reply,
            } => Ran::of(begin_in(conn, &proof, lease).await, reply, false),
            Job::Approve { approval, reply } => {
                Ran::of(approve_in(conn, &approval).await, reply, true)
            }
        }
    }

    /// Answer the caller with what the batch's short way decided
    /// (`fast_batch.rs`), or with the commit's failure.
    fn answer(self, answer: Answer, commit_failed: Option<LedgerError>) {
        // The caller may have stopped waiting; its job still ran.
        match (self, answer) {
            (Job::Builtin { reply, .. } | Job::Recorded { reply, .. }, Answer::Consumed(result)) => {
                let _ = reply.send(unless(commit_failed, result));
            }
            (Job::Begin { reply, .. }, Answer::Started(result)) => {
                let _ = reply.send(unless(commit_failed, result));
            }
            (job, _) => job.fail(LedgerError::Corrupt(
                "a batch answered a job of another kind".into(),
            )),
        }
    }

    /// Answer the caller with `error`, without running the job.
    fn fail(self, error: LedgerError) {
        match self {
            Job::Builtin { reply, .. } | Job::Recorded { reply, .. } => {
                drop(reply.send(Err(error)));
            }
            Job::Begin { reply, .. } => drop(reply.send(Err(error))),
            Job::Approve { reply, .. } => drop(reply.send(Err(error))),
        }
    }
}

impl Ran {
    fn of<T: Send + 'static>(
        result: Result<T, LedgerError>,
        reply: Reply<T>,
        approval: bool,
    ) -> Ran {
        Ran {
            failed: result.is_err(),
            approval,
            answer: Box::new(move |commit_failed| {
                // The caller may have stopped waiting; its job still ran.
                let _ = reply.send(unless(commit_failed, result));
            }),
        }
    }
}

/// What the jobs that `ran` were.
fn committed(ran: &[Ran]) -> CommittedBatch {
    let approvals = ran.iter().filter(|r| r.approval).count();
    CommittedBatch {
        consumptions: ran.len() - approvals,
        approvals,
        checked_at_once: false,
    }
}

/// `result`, unless the commit failed with `commit_failed`.
fn unless<T>(
    commit_failed: Option<LedgerError>,
    result: Result<T, LedgerError>,
) -> Result<T, LedgerError> {
    match commit_failed {
        Some(error) => Err(error),
        None => result,
    }
}

/// Answer every one of `jobs` with `error`, without running them.
fn fail_all(jobs: impl IntoIterator<Item = Job>, error: &LedgerError) {
    for job in jobs {
        job.fail(error.clone());
    }
}

/// A queue of jobs, and whether a batch is running for it.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    leading: bool,
}

/// The group-commit queues of one ledger (shared by its clones), and who
/// hears each batch's size.
#[derive(Default)]
pub(crate) struct Batches {
    queues: Mutex<HashMap<String, Queue>>,
    observer: RwLock<Option<BatchObserver>>,
}

/// Called with what each batch that committed carried (jobs refused
/// inside it included; a lone job that was refused rolled back, and no
/// commit is counted).
pub(crate) type BatchObserver = Arc<dyn Fn(CommittedBatch) + Send + Sync>;

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Batches")
    }
}

impl Batches {
    fn queues(&self) -> MutexGuard<'_, HashMap<String, Queue>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn observe(&self, observer: BatchObserver) {
        *self
            .observer
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(observer);
    }

    fn observed(&self, batch: CommittedBatch) {
        let observer = self.observer.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(observer) = observer.as_ref() {
            observer(batch);
        }
    }
}

/// The answer of a job whose batch's task ended before answering it (it
/// panicked, or the runtime is shutting down): nothing of it committed.
fn writer_stopped() -> LedgerError {
    LedgerError::Database("the ledger's writer stopped before answering".into())
}

/// Whoever runs a queue's batches: on drop without [`Leader::done`] (the
/// task panicked or the runtime is shutting down), the queue gets no new
/// leader by itself, so its waiting jobs are answered with an error and
/// the next job leads again.
struct Leader {
    store: Store,
    queue: String,
    done: bool,
}

impl Drop for Leader {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let orphans = self.store.batches.queues().remove(&self.queue);
        for job in orphans.into_iter().flat_map(|q| q.jobs) {
            job.fail(writer_stopped());
        }
    }
}

impl Store {
    /// Make `observer` hear the size of every batch that commits.
    pub(crate) fn observe_batches(&self, observer: BatchObserver) {
        self.batches.observe(observer);
    }

    /// Queue the job `job` makes of its reply, and wait for its answer,
    /// which comes once its batch ended.
    pub(super) async fn queued<T>(
        &self,
        job: impl FnOnce(Reply<T>) -> Job,
    ) -> Result<T, LedgerError> {
        let (reply, answer) = oneshot::channel();
        self.submit(job(reply));
        answer.await.unwrap_or_else(|_| Err(writer_stopped()))
    }

    /// Queue a write; start a batch for its queue if none runs.
    fn submit(&self, job: Job) {
        // One queue per chain where a batch locks its chain (PostgreSQL).
        let queue = if ROW_LOCKS {
            job.principal().to_string()
        } else {
            String::new()
        };
        let lead = {
            let mut queues = self.batches.queues();
            let entry = queues.entry(queue.clone()).or_default();
            entry.jobs.push_back(job);
            !std::mem::replace(&mut entry.leading, true)
        };
        if lead {
            let leader = Leader {
                store: self.clone(),
                queue,
                done: false,
            };
            tokio::spawn(leader.run());
        }
    }
}

impl Leader {
    /// Run batches until the queue is empty, on one connection while
    /// each batch ends cleanly.
    async fn run(mut self) {
        let mut held: Option<BatchConn> = None;
        loop {
            let batch: Vec<Job> = {
                let mut queues = self.store.batches.queues();
                // Only this leader removes its queue, so it is there.
                let queue = queues.entry(self.queue.clone()).or_default();
                if queue.jobs.is_empty() {
                    queues.remove(&self.queue);
                    self.done = true;
                    return;
                }
                let take = queue.jobs.len().min(MAX_BATCH);
                queue.jobs.drain(..take).collect()
            };
            let (again, ended) = self.store.run_batch(batch, &mut held).await;
            if ended == Ended::InError {
                // Possibly broken: back to the pool, which pings it.
                held = None;
            }
            if !again.is_empty() {
                let mut queues = self.store.batches.queues();
                let queue = queues.entry(self.queue.clone()).or_default();
                for job in again.into_iter().rev() {
                    queue.jobs.push_front(job);
                }
            }
        }
    }
}

/// How a batch's transaction ended, for the connection it ran on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Committed or rolled back, as the connection answered.
    Cleanly,
    /// A statement, the commit or the rollback failed, or the transaction
    /// never began.
    InError,
}

impl Ended {
    /// `Cleanly` if the transaction's end succeeded.
    fn of(succeeded: bool) -> Ended {
        if succeeded {
            Ended::Cleanly
        } else {
            Ended::InError
        }
    }
}

impl Store {
    /// Run `jobs` in one write transaction on the queue's connection
    /// (`held`) and answer each once it ended; the jobs to run again (their
    /// proposal was held by another transaction), in order, for the next
    /// batch, which the first of them leads; and how it ended.
    async fn run_batch(&self, jobs: Vec<Job>, held: &mut Option<BatchConn>) -> (Vec<Job>, Ended) {
        let mut jobs = jobs.into_iter();
        let Some(first) = jobs.next() else {
            return (Vec::new(), Ended::Cleanly);
        };
        let mut tx = match self.batch_tx(held).await {
            Ok(tx) => tx,
            Err(error) => {
                fail_all(std::iter::once(first).chain(jobs), &error);
                return (Vec::new(), Ended::InError);
            }
        };
        // The waits, in the lock order: the first job's proposal, then the
        // chain (every job of a PostgreSQL batch is of this chain).
        let locked = async {
            lock_proposal_row(&mut tx, first.proposal()).await?;
            lock_head(&mut tx, first.principal()).await
        }
        .await;
        if let Err(error) = locked {
            fail_all(std::iter::once(first).chain(jobs), &error);
            return (Vec::new(), Ended::InError);
        }
        if jobs.as_slice().is_empty() {
            let ran = first.run(&mut tx).await;
            let ended = if ran.failed {
                tx.rollback().await.map_err(LedgerError::from)
            } else {
                tx.commit().await.map_err(LedgerError::from)
            };
            if !ran.failed && ended.is_ok() {
                self.batches.observed(committed(std::slice::from_ref(&ran)));
            }
            let how = Ended::of(ended.is_ok());
            (ran.answer)(ended.err().filter(|_| !ran.failed));
            return (Vec::new(), how);
        }

        // The later jobs' proposals, in one statement, without waiting
        // while the chain is held; a job whose proposal another
        // transaction holds goes to the next batch.
        let rest: Vec<Job> = jobs.collect();
        let proposals: Vec<&str> = rest.iter().map(Job::proposal).collect();
        let held = match try_lock_proposal_rows(&mut tx, &proposals).await {
            Ok(held) => held,
            Err(error) => {
                fail_all(std::iter::once(first).chain(rest), &error);
                return (Vec::new(), Ended::InError);
            }
        };
        let (rest, mut again): (Vec<Job>, Vec<Job>) = rest
            .into_iter()
            .partition(|job| !held.iter().any(|id| id == job.proposal()));
        let mut jobs: Vec<Job> = std::iter::once(first).chain(rest).collect();

        // Consumptions alone take the short way (`fast_batch.rs`): one
        // statement for every job's checks, one for every job's writes;
        // a job repeating an earlier one's proposal or state key
        // waits for the next batch, after the held ones.
        if jobs.iter().all(fast_batch::fits) {
            let (now, later) = fast_batch::distinct(jobs);
            jobs = now;
            again.extend(later);
            match fast_batch::run(&mut tx, &jobs).await {
                Ok(answers) => {
                    let ended = tx.commit().await.map_err(LedgerError::from).err();
                    let how = Ended::of(ended.is_none());
                    if ended.is_none() {
                        self.batches.observed(CommittedBatch {
                            consumptions: jobs.len(),
                            approvals: 0,
                            checked_at_once: true,
                        });
                    }
                    for (job, answer) in jobs.into_iter().zip(answers) {
                        job.answer(answer, ended.clone());
                    }
                    return (again, how);
                }
                // A write failed and was rolled back: the long way below.
                Err(None) => {}
                Err(Some(broken)) => {
                    let _ = tx.rollback().await;
                    fail_all(jobs, &broken);
                    return (again, Ended::InError);
                }
            }
        }

        let mut ran = Vec::new();
        let mut broken = None;
        for job in jobs {
            if let Some(error) = &broken {
                job.fail(LedgerError::clone(error));
                continue;
            }
            if let Err(error) = sqlx::query("SAVEPOINT job").execute(&mut *tx).await {
                let error = LedgerError::from(error);
                job.fail(error.clone());
                broken = Some(error);
                continue;
            }
            let done = job.run(&mut tx).await;
            if done.failed
                && let Err(error) = sqlx::query("ROLLBACK TO SAVEPOINT job")
                    .execute(&mut *tx)
                    .await
            {
                broken = Some(LedgerError::from(error));
            }
            ran.push(done);
        }
        let ended = match broken {
            Some(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
            None => tx.commit().await.map_err(LedgerError::from),
        };
        let how = Ended::of(ended.is_ok());
        if ended.is_ok() {
            self.batches.observed(committed(&ran));
        }
        for done in ran {
            (done.answer)(ended.as_ref().err().cloned());
        }
        (again, how)
    }
}
