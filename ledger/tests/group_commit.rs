//! Group commit: consumptions and approvals queued while the writer is
//! busy share the next transaction and its commit, each in its own
//! savepoint. A job that fails or is refused inside a batch rolls back
//! only its own work (its proof stays usable where the refusal allows, its
//! proposal stays pending), the others commit, and
//! each caller is answered once the commit is durable. On PostgreSQL a
//! job whose proposal another transaction holds goes to the next batch
//! instead of waiting while its batch holds the chain.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Kind, PRINCIPAL, Raw, TestLedger, approve, create_schedule, verified};
use countersign_ledger::{
    CommittedBatch, ConsumeStart, Consumed, DispositionStatus, IssuanceRecord, LedgerError,
    LedgerRefusal, Proposal, ProposalStatus, RevokeOutcome,
};
use serde_json::json;
use tokio::task::JoinHandle;

/// Long enough for spawned callers to reach the ledger's queue.
const SETTLE: Duration = Duration::from_millis(300);

/// What the batches `t`'s ledger committed carried, as they commit.
fn batches(t: &TestLedger) -> Arc<Mutex<Vec<CommittedBatch>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&seen);
    t.ledger
        .observe_batches(Arc::new(move |b| into.lock().unwrap().push(b)));
    seen
}

/// The sizes of the batches seen by [`batches`].
fn sizes(seen: &Mutex<Vec<CommittedBatch>>) -> Vec<usize> {
    seen.lock().unwrap().iter().map(|b| b.size()).collect()
}

/// Whether each batch seen by [`batches`] took the short way.
fn at_once(seen: &Mutex<Vec<CommittedBatch>>) -> Vec<bool> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|b| b.checked_at_once)
        .collect()
}

/// `n` approved `schedule.create` proposals of [`PRINCIPAL`], with proofs.
async fn approved(t: &TestLedger, n: u32) -> Vec<(Proposal, String)> {
    let mut out = Vec::new();
    for i in 1..=n {
        let p = create_schedule(i, &format!("schedule-{i}"));
        let token = approve(&t.ledger, &p, i).await;
        out.push((p, token));
    }
    out
}

/// A raw transaction holding the writer: on SQLite the database's write
/// lock, on PostgreSQL [`PRINCIPAL`]'s chain head (every write of the
/// principal's chain waits for it). Release with [`release`].
async fn hold_writer(t: &TestLedger) -> Raw {
    let mut raw = t.raw().await;
    let sql = match t.kind {
        Kind::Sqlite => "BEGIN IMMEDIATE".to_string(),
        Kind::Postgres => {
            format!("BEGIN; SELECT count FROM countersign_lock_chain('{PRINCIPAL}')")
        }
    };
    raw.exec(&sql).await.unwrap();
    raw
}

async fn release(mut raw: Raw) {
    raw.exec("ROLLBACK").await.unwrap();
    raw.close().await;
}

/// A write a caller queues.
#[derive(Clone, Copy)]
enum Write<'a> {
    /// Present proof `.1` of proposal `.0` (its builtin effect).
    Consume(&'a Proposal, &'a str),
    /// Begin a two-phase consumption of proof `.1` of proposal `.0`.
    Begin(&'a Proposal, &'a str),
    /// Record this approval.
    Approve(&'a IssuanceRecord),
}

/// How a write ended well.
#[derive(Debug, PartialEq)]
enum Done {
    Consumed(Consumed),
    Started(ConsumeStart),
    Approved,
}

/// The lease of a [`Write::Begin`].
const LEASE: time::Duration = time::Duration::minutes(5);

/// Start `write` in a task of its own.
fn start(t: &TestLedger, write: Write<'_>) -> JoinHandle<Result<Done, LedgerError>> {
    let ledger = t.ledger.clone();
    match write {
        Write::Consume(p, token) => {
            let proof = verified(p, token);
            let effect = p.operation.clone();
            tokio::spawn(async move {
                let consumed = ledger.consume_builtin(&proof, &effect).await;
                consumed.map(Done::Consumed)
            })
        }
        Write::Begin(p, token) => {
            let proof = verified(p, token);
            tokio::spawn(async move {
                let started = ledger.begin_consume(&proof, LEASE).await;
                started.map(Done::Started)
            })
        }
        Write::Approve(record) => {
            let record = record.clone();
            tokio::spawn(async move {
                ledger
                    .record_approval(&record)
                    .await
                    .map(|()| Done::Approved)
            })
        }
    }
}

/// Present proof `token` of `p`, alone.
async fn present(t: &TestLedger, p: &Proposal, token: &str) -> Result<Done, LedgerError> {
    start(t, Write::Consume(p, token)).await.unwrap()
}

/// The first write takes the writer and waits there; the writes of `then`
/// queue behind it and make the next batch, once `writer` is released.
async fn batch_behind(
    t: &TestLedger,
    writer: Raw,
    first: Write<'_>,
    then: &[Write<'_>],
) -> Vec<Result<Done, LedgerError>> {
    let leader = start(t, first);
    tokio::time::sleep(SETTLE).await;
    let queued: Vec<_> = then.iter().map(|write| start(t, *write)).collect();
    tokio::time::sleep(SETTLE).await;
    release(writer).await;
    let mut results = vec![leader.await.unwrap()];
    for task in queued {
        results.push(task.await.unwrap());
    }
    results
}

fn applied(result: &Result<Done, LedgerError>) -> bool {
    matches!(result, Ok(Done::Consumed(Consumed::Completed(d))) if d.status == DispositionStatus::Applied)
}

on_both_backends!(one_caller_alone_commits_a_batch_of_one);
async fn one_caller_alone_commits_a_batch_of_one(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let proofs = approved(&t, 2).await;
    let seen = batches(&t);
    for (p, token) in &proofs {
        assert!(applied(&present(&t, p, token).await));
    }
    let (p, _) = pending(&t, 3).await;
    assert_eq!(
        start(&t, Write::Approve(&p)).await.unwrap(),
        Ok(Done::Approved)
    );
    // A job alone runs as it is, not the short way of a batch.
    let alone = |consumptions, approvals| CommittedBatch {
        consumptions,
        approvals,
        checked_at_once: false,
    };
    assert_eq!(
        *seen.lock().unwrap(),
        vec![alone(1, 0), alone(1, 0), alone(0, 1)]
    );
}

/// Proposal `n` of [`PRINCIPAL`], recorded and pending: the approval that
/// would issue a proof for it, and that proof.
async fn pending(t: &TestLedger, n: u32) -> (IssuanceRecord, String) {
    let p = create_schedule(n, &format!("schedule-{n}"));
    t.ledger.insert_proposal(&p).await.unwrap();
    let (token, record) = common::issue(&p, n, 300);
    (record, token)
}

on_both_backends!(a_failure_inside_a_batch_rolls_back_only_itself);
async fn a_failure_inside_a_batch_rolls_back_only_itself(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let proofs = approved(&t, 4).await;
    let seen = batches(&t);
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));
    let (failing, token) = (&proofs[1].0, &proofs[1].1);
    // The completion is the last write of a consumption, after its nonce,
    // intent, events and state change in the same transaction.
    t.inject_insert_failure_for("completions", &failing.id, true)
        .await;

    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, four]).await;
    assert!(applied(&results[0]));
    match &results[1] {
        Err(LedgerError::Database(message)) => assert!(message.contains("injected failure")),
        other => panic!("expected the injected failure, got {other:?}"),
    }
    assert!(applied(&results[2]) && applied(&results[3]), "{results:?}");
    // The failed job shared the second batch and wrote nothing; its
    // failure sent that batch from the short way to a savepoint per job.
    assert_eq!(sizes(&seen), vec![1, 3]);
    assert_eq!(at_once(&seen), vec![false, false]);
    assert_eq!(t.count("consumed_nonces").await, 3);
    assert_eq!(t.count("intents").await, 3);
    assert_eq!(t.ledger.disposition(&failing.id).await.unwrap(), None);
    let status = t
        .ledger
        .proposal(&failing.id)
        .await
        .unwrap()
        .unwrap()
        .status;
    assert_eq!(status, ProposalStatus::Approved);
    assert_eq!(
        common::schedule_keys(&t.ledger).await,
        ["schedule-1", "schedule-3", "schedule-4"]
    );

    // Its proof is still usable, once the fault is gone.
    t.inject_insert_failure_for("completions", &failing.id, false)
        .await;
    assert!(applied(&present(&t, failing, token).await));
    assert_eq!(t.count("consumed_nonces").await, 4);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(a_refusal_and_a_replay_inside_a_batch_answer_as_alone);
async fn a_refusal_and_a_replay_inside_a_batch_answer_as_alone(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let proofs = approved(&t, 3).await;
    let seen = batches(&t);
    let [one, two, three] = [0, 1, 2].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));
    assert_eq!(
        t.ledger.revoke(&proofs[1].0.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );

    // Behind the first: the revoked proof, and the third proof twice (the
    // second time waits for the next batch: a batch names a proposal once).
    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, three]).await;
    assert!(applied(&results[0]));
    assert_eq!(
        results[1],
        Err(LedgerError::Refused(LedgerRefusal::Revoked))
    );
    let Ok(Done::Consumed(Consumed::Completed(done))) = &results[2] else {
        panic!("expected the third proof applied, got {:?}", results[2]);
    };
    assert_eq!(
        results[3],
        Ok(Done::Consumed(Consumed::Replay(done.clone())))
    );
    assert_eq!(sizes(&seen), vec![1, 2, 1]);
    // A refusal inside a batch keeps it on the short way.
    assert_eq!(at_once(&seen), vec![false, true, false]);
    assert_eq!(t.count("consumed_nonces").await, 2);
    assert_eq!(
        common::schedule_keys(&t.ledger).await,
        ["schedule-1", "schedule-3"]
    );
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

fn failed(result: &Result<Done, LedgerError>) -> bool {
    matches!(result, Ok(Done::Consumed(Consumed::Completed(d))) if d.status == DispositionStatus::Failed)
}

on_both_backends!(consumptions_of_one_key_in_a_batch_see_each_other);
async fn consumptions_of_one_key_in_a_batch_see_each_other(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let names = ["schedule-1", "same", "same", "schedule-1", "schedule-5"];
    let mut proofs = Vec::new();
    for (n, name) in (1..).zip(names) {
        let p = create_schedule(n, name);
        let token = approve(&t.ledger, &p, n).await;
        proofs.push((p, token));
    }
    let seen = batches(&t);
    let [one, two, three, four, five] =
        [0, 1, 2, 3, 4].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));

    // Behind the first: two creations of one name (the second waits for
    // the next batch, where it finds the first's schedule), a creation of
    // the first's name (refused as a transition: consumed, failed, its
    // events appended after the previous job's) and one more.
    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, four, five]).await;
    assert!(applied(&results[0]) && applied(&results[1]), "{results:?}");
    assert!(failed(&results[2]) && failed(&results[3]), "{results:?}");
    assert!(applied(&results[4]), "{results:?}");
    assert_eq!(sizes(&seen), vec![1, 3, 1]);
    assert_eq!(at_once(&seen), vec![false, true, false]);
    assert_eq!(t.count("consumed_nonces").await, 5);
    assert_eq!(t.count("completions").await, 5);
    assert_eq!(
        common::schedule_keys(&t.ledger).await,
        ["same", "schedule-1", "schedule-5"]
    );
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(a_batch_writes_each_job_as_it_would_alone);
async fn a_batch_writes_each_job_as_it_would_alone(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let name = |n: &str| json!({ "name": n });
    let proposals = [
        create_schedule(1, "a"),
        create_schedule(2, "b"),
        create_schedule(3, "c"),
        common::proposal(4, "schedule.delete", name("a")),
        common::proposal(5, "schedule.activate", name("b")),
        common::proposal(6, "schedule.resume", name("none")),
        create_schedule(7, "two-phase"),
    ];
    let mut proofs = Vec::new();
    for (n, p) in (1..).zip(&proposals) {
        proofs.push((p, approve(&t.ledger, p, n).await));
    }
    let write = |i: usize| Write::Consume(proofs[i].0, &proofs[i].1);
    for i in [0, 1] {
        assert!(applied(&start(&t, write(i)).await.unwrap()));
    }
    let seen = batches(&t);

    // Behind the third creation, in one batch: a deletion, a put, a
    // refused transition (consumed, failed) and a two-phase start.
    let writer = hold_writer(&t).await;
    let begin = Write::Begin(proofs[6].0, &proofs[6].1);
    let results = batch_behind(&t, writer, write(2), &[write(3), write(4), write(5), begin]).await;
    assert_eq!(sizes(&seen), vec![1, 4]);
    assert_eq!(at_once(&seen), vec![false, true]);
    assert!(applied(&results[0]) && applied(&results[1]) && applied(&results[2]));
    assert!(failed(&results[3]), "{results:?}");
    let Ok(Done::Started(ConsumeStart::Fresh(intent))) = &results[4] else {
        panic!("expected a fresh start, got {:?}", results[4]);
    };

    // Each answer is what the ledger now holds, as for a job alone.
    for (i, result) in results.iter().enumerate().take(4) {
        let Ok(Done::Consumed(Consumed::Completed(answered))) = result else {
            panic!("expected a completion, got {result:?}");
        };
        let stored = t.ledger.disposition(&proposals[i + 2].id).await.unwrap();
        assert_eq!(stored.as_ref(), Some(answered));
    }
    assert_eq!(
        t.ledger.interrupted().await.unwrap().len(),
        1,
        "the two-phase start is an intent without completion"
    );
    assert_eq!(proposals[6].id, intent.proposal_id());
    assert_eq!(common::schedule_keys(&t.ledger).await, ["b", "c"]);

    // A state row's version is its `effect_applied` event, the activated
    // schedule's that of proposal 5.
    let mut raw = t.raw().await;
    let version_of = |key: &str| {
        format!(
            "SELECT e.proposal_id FROM state s JOIN events e ON e.id = s.version
             WHERE e.kind = 'effect_applied' AND e.chain = s.principal AND s.key = '{key}'"
        )
    };
    assert_eq!(
        raw.scalar_text(&version_of("b")).await.unwrap(),
        proposals[4].id
    );
    assert_eq!(
        raw.scalar_text(&version_of("c")).await.unwrap(),
        proposals[2].id
    );
    // Only the two-phase intent is leased; a builtin's ends as it starts.
    let leased = "SELECT count(*) FROM intents WHERE lease_until <> recorded_at";
    assert_eq!(raw.scalar_i64(leased).await.unwrap(), 1);
    let applied_rows = "SELECT count(*) FROM effect_applied";
    assert_eq!(raw.scalar_i64(applied_rows).await.unwrap(), 5);
    // 2 x 3 events alone, then 3 x 3 applied, 2 failed, 1 started.
    let consumption_events =
        "SELECT count(*) FROM events WHERE kind IN ('intent', 'effect_applied', 'completed')";
    assert_eq!(raw.scalar_i64(consumption_events).await.unwrap(), 18);
    raw.close().await;
    assert_eq!(t.count("consumed_nonces").await, 7);
    assert_eq!(t.count("completions").await, 6);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(approvals_share_a_batch_and_a_refused_or_failed_one_stays_pending);
async fn approvals_share_a_batch_and_a_refused_or_failed_one_stays_pending(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let proofs = approved(&t, 2).await;
    let [one, two] = [0, 1].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));
    let (three, three_token) = pending(&t, 3).await;
    let (four, _) = pending(&t, 4).await;
    let (five, _) = pending(&t, 5).await;
    // An approval that does not match its proposal is refused.
    let mut mismatched = three.clone();
    mismatched.arguments_sha256 = "0".repeat(64);
    // And one fails after its decision row was written.
    t.inject_insert_failure_for("issuances", &four.proposal_id, true)
        .await;
    let seen = batches(&t);

    // Behind a consumption: the refused approval, the failing one, a
    // consumption and an approval, in one batch.
    let writer = hold_writer(&t).await;
    let then = [
        Write::Approve(&mismatched),
        Write::Approve(&four),
        two,
        Write::Approve(&five),
    ];
    let results = batch_behind(&t, writer, one, &then).await;
    assert!(applied(&results[0]));
    assert_eq!(
        results[1],
        Err(LedgerError::IssuanceMismatch(three.proposal_id.clone()))
    );
    match &results[2] {
        Err(LedgerError::Database(message)) => assert!(message.contains("injected failure")),
        other => panic!("expected the injected failure, got {other:?}"),
    }
    assert!(applied(&results[3]));
    assert_eq!(results[4], Ok(Done::Approved));
    // A batch with approvals runs each job in its own savepoint.
    let batch = |consumptions, approvals| CommittedBatch {
        consumptions,
        approvals,
        checked_at_once: false,
    };
    assert_eq!(*seen.lock().unwrap(), vec![batch(1, 0), batch(1, 3)]);
    let status = |id: &str| {
        let ledger = t.ledger.clone();
        let id = id.to_string();
        async move { ledger.proposal(&id).await.unwrap().unwrap().status }
    };
    assert_eq!(status(&three.proposal_id).await, ProposalStatus::Pending);
    assert_eq!(status(&four.proposal_id).await, ProposalStatus::Pending);
    assert_eq!(status(&five.proposal_id).await, ProposalStatus::Approved);
    assert_eq!(t.count("decisions").await, 3);
    assert_eq!(t.count("issuances").await, 3);

    // Neither wrote anything: both approvals still go through, and a
    // proof applies.
    t.inject_insert_failure_for("issuances", &four.proposal_id, false)
        .await;
    t.ledger.record_approval(&four).await.unwrap();
    t.ledger.record_approval(&three).await.unwrap();
    let proposal = create_schedule(3, "schedule-3");
    assert!(applied(&present(&t, &proposal, &three_token).await));
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

/// PostgreSQL: while another transaction holds the third proposal's row
/// (and then waits for the principal's chain), the batch does not wait for
/// that proposal: the others commit, the third leads the next batch and
/// applies once the holder is done. Waiting there, holding the chain,
/// would deadlock with the holder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_proposal_is_held_elsewhere_leads_the_next_batch() {
    let t = TestLedger::on(Kind::Postgres).await;
    let proofs = approved(&t, 4).await;
    let seen = batches(&t);
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));

    let mut holder = t.raw().await;
    let hold = format!(
        "BEGIN; SELECT id FROM proposals WHERE id = '{}' FOR UPDATE",
        proofs[2].0.id
    );
    holder.exec(&hold).await.unwrap();
    // Once the batch of the others ran (or waits for the third proposal,
    // holding the chain: the deadlock this avoids), a SETTLE after the
    // writer is released, the holder wants the chain too, as a
    // revocation would.
    let holder = tokio::spawn(async move {
        tokio::time::sleep(SETTLE * 3).await;
        let lock = format!("SELECT count FROM countersign_lock_chain('{PRINCIPAL}')");
        let locked = holder.exec(&lock).await;
        holder.exec("COMMIT").await.unwrap();
        holder.close().await;
        locked
    });
    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, four]).await;
    assert_eq!(holder.await.unwrap(), Ok(()));
    assert!(results.iter().all(applied), "{results:?}");
    assert_eq!(sizes(&seen), vec![1, 2, 1]);
    assert_eq!(at_once(&seen), vec![false, true, false]);
    assert_eq!(t.count("consumed_nonces").await, 4);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

/// PostgreSQL: a batch whose commit fails (here a deferred check of the
/// third proposal's completion) keeps nothing of any of its jobs, answers
/// each of them with that failure, every proof of it stays usable and the
/// proposal it approved stays pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_answers_every_job_of_its_batch_and_keeps_nothing() {
    let t = TestLedger::on(Kind::Postgres).await;
    let proofs = approved(&t, 4).await;
    let (five, five_token) = pending(&t, 5).await;
    let seen = batches(&t);
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));
    let mut raw = t.raw().await;
    let fail_at_commit = format!(
        "CREATE FUNCTION fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.proposal_id = '{}' THEN RAISE EXCEPTION 'injected commit failure'; END IF;
           RETURN NEW;
         END $$;
         CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON completions
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_commit()",
        proofs[2].0.id
    );
    raw.exec(&fail_at_commit).await.unwrap();
    let events = t.count("events").await;

    let writer = hold_writer(&t).await;
    let then = [two, three, Write::Approve(&five), four];
    let results = batch_behind(&t, writer, one, &then).await;
    assert!(applied(&results[0]));
    for result in &results[1..] {
        match result {
            Err(LedgerError::Database(message)) => {
                assert!(message.contains("injected commit failure"), "{message}")
            }
            other => panic!("expected the commit's failure, got {other:?}"),
        }
    }
    assert_eq!(sizes(&seen), vec![1]);
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert_eq!(t.count("issuances").await, 4);
    // The first consumption's intent, effect_applied and completed.
    assert_eq!(t.count("events").await, events + 3);
    assert_eq!(common::schedule_keys(&t.ledger).await, ["schedule-1"]);
    let status = t.ledger.proposal(&five.proposal_id).await.unwrap().unwrap();
    assert_eq!(status.status, ProposalStatus::Pending);

    raw.exec("DROP TRIGGER fail_commit ON completions; DROP FUNCTION fail_commit()")
        .await
        .unwrap();
    raw.close().await;
    for (p, token) in &proofs[1..] {
        assert!(applied(&present(&t, p, token).await));
    }
    t.ledger.record_approval(&five).await.unwrap();
    let proposal = create_schedule(5, "schedule-5");
    assert!(applied(&present(&t, &proposal, &five_token).await));
    assert_eq!(t.count("consumed_nonces").await, 5);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

/// The server process of this database's one ledger connection waiting
/// for a lock (a batch waiting for the chain), once there is one. Other
/// tests' databases on the same server are not looked at.
async fn waiting_batch(raw: &mut Raw) -> i64 {
    let waiting = "SELECT COALESCE(MIN(pid), 0)::bigint FROM pg_stat_activity
                   WHERE datname = current_database() AND application_name = 'countersign'
                     AND wait_event_type = 'Lock'";
    for _ in 0..100 {
        let pid = raw.scalar_i64(waiting).await.unwrap();
        if pid != 0 {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no batch waited for the chain within 5 s");
}

/// PostgreSQL: a queue's batches run on one connection while they end
/// cleanly (no connection goes back to the pool, whose ping is a round
/// trip, between them), and a batch that ended in an error gives its
/// connection back: here the server ended the connection while its batch
/// waited for the chain, and the next batch runs on another one. The
/// failed job's proof stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_keeps_its_connection_between_batches_and_drops_a_broken_one() {
    let t = TestLedger::on(Kind::Postgres).await;
    let proofs = approved(&t, 5).await;
    let seen = batches(&t);
    let [one, two, three, four, five] =
        [0, 1, 2, 3, 4].map(|i| Write::Consume(&proofs[i].0, &proofs[i].1));
    let mut raw = t.raw().await;
    raw.exec(
        "CREATE TABLE batch_backends (proposal_id TEXT, pid INT);
         CREATE FUNCTION note_backend() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           INSERT INTO batch_backends VALUES (NEW.proposal_id, pg_backend_pid());
           RETURN NEW;
         END $$;
         CREATE TRIGGER note_backend AFTER INSERT ON completions
         FOR EACH ROW EXECUTE FUNCTION note_backend()",
    )
    .await
    .unwrap();

    // One leads, waiting for the chain; two and three make the next batch.
    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three]).await;
    assert!(results.iter().all(applied), "{results:?}");
    assert_eq!(sizes(&seen), vec![1, 2]);
    let backends = "SELECT COUNT(DISTINCT pid) FROM batch_backends";
    assert_eq!(raw.scalar_i64(backends).await.unwrap(), 1);

    // Four leads, waiting for the chain, and its connection is ended
    // there; five, queued behind it, runs on another connection.
    let writer = hold_writer(&t).await;
    let leader = start(&t, four);
    tokio::time::sleep(SETTLE).await;
    let queued = start(&t, five);
    tokio::time::sleep(SETTLE).await;
    let waiting = waiting_batch(&mut raw).await;
    raw.exec(&format!("SELECT pg_terminate_backend({waiting})"))
        .await
        .unwrap();
    let failed_four = leader.await.unwrap();
    assert!(
        matches!(failed_four, Err(LedgerError::Database(_))),
        "{failed_four:?}"
    );
    tokio::time::sleep(SETTLE).await;
    release(writer).await;
    assert!(applied(&queued.await.unwrap()));
    assert!(applied(&present(&t, &proofs[3].0, &proofs[3].1).await));
    let fifth = format!(
        "SELECT pid::bigint FROM batch_backends WHERE proposal_id = '{}'",
        proofs[4].0.id
    );
    assert_ne!(raw.scalar_i64(&fifth).await.unwrap(), waiting);
    assert_eq!(t.count("consumed_nonces").await, 5);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());

    raw.exec(
        "DROP TRIGGER note_backend ON completions; DROP FUNCTION note_backend();
         DROP TABLE batch_backends",
    )
    .await
    .unwrap();
    raw.close().await;
}
