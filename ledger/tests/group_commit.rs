//! Group commit: consumptions queued while the writer is busy share the
//! next transaction and its commit, each in its own savepoint. A job that
//! fails or is refused inside a batch rolls back only its own work (its
//! proof stays usable where the refusal allows), the others commit, and
//! each caller is answered once the commit is durable. On PostgreSQL a
//! job whose proposal another transaction holds goes to the next batch
//! instead of waiting while its batch holds the chain.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Kind, PRINCIPAL, Raw, TestLedger, approve, create_schedule, verified};
use countersign_ledger::{
    Consumed, DispositionStatus, LedgerError, LedgerRefusal, Proposal, ProposalStatus,
    RevokeOutcome,
};
use tokio::task::JoinHandle;

/// Long enough for spawned callers to reach the ledger's queue.
const SETTLE: Duration = Duration::from_millis(300);

/// The sizes of the batches `t`'s ledger committed, as they commit.
fn batch_sizes(t: &TestLedger) -> Arc<Mutex<Vec<usize>>> {
    let sizes = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&sizes);
    t.ledger
        .observe_batches(Arc::new(move |n| seen.lock().unwrap().push(n)));
    sizes
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

/// Present proof `token` of `p` in a task of its own.
fn present(t: &TestLedger, p: &Proposal, token: &str) -> JoinHandle<Result<Consumed, LedgerError>> {
    let ledger = t.ledger.clone();
    let proof = verified(p, token);
    tokio::spawn(async move { ledger.consume_builtin(&proof, "schedule.create").await })
}

/// The first caller takes the writer and waits there; the callers of
/// `then` queue behind it and make the next batch, once `writer` is
/// released.
async fn batch_behind(
    t: &TestLedger,
    writer: Raw,
    first: (&Proposal, &str),
    then: &[(&Proposal, &str)],
) -> Vec<Result<Consumed, LedgerError>> {
    let leader = present(t, first.0, first.1);
    tokio::time::sleep(SETTLE).await;
    let queued: Vec<_> = then.iter().map(|(p, token)| present(t, p, token)).collect();
    tokio::time::sleep(SETTLE).await;
    release(writer).await;
    let mut results = vec![leader.await.unwrap()];
    for task in queued {
        results.push(task.await.unwrap());
    }
    results
}

fn applied(result: &Result<Consumed, LedgerError>) -> bool {
    matches!(result, Ok(Consumed::Completed(d)) if d.status == DispositionStatus::Applied)
}

/// Make inserts of `proposal_id`'s completion fail ("injected failure"),
/// or stop doing so: the last write of a consumption, after its nonce,
/// intent, events and state change were written in the same transaction.
async fn fail_consuming(t: &TestLedger, proposal_id: &str, on: bool) {
    let sql = match (t.kind, on) {
        (Kind::Sqlite, true) => format!(
            "CREATE TRIGGER fail_one BEFORE INSERT ON completions
             WHEN NEW.proposal_id = '{proposal_id}'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
        ),
        (Kind::Sqlite, false) => "DROP TRIGGER fail_one".to_string(),
        (Kind::Postgres, true) => format!(
            "CREATE FUNCTION fail_one() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
               IF NEW.proposal_id = '{proposal_id}' THEN
                 RAISE EXCEPTION 'injected failure';
               END IF;
               RETURN NEW;
             END $$;
             CREATE TRIGGER fail_one BEFORE INSERT ON completions
             FOR EACH ROW EXECUTE FUNCTION fail_one()"
        ),
        (Kind::Postgres, false) => {
            "DROP TRIGGER fail_one ON completions; DROP FUNCTION fail_one()".to_string()
        }
    };
    let mut raw = t.raw().await;
    raw.exec(&sql).await.unwrap();
    raw.close().await;
}

on_both_backends!(one_caller_alone_commits_a_batch_of_one);
async fn one_caller_alone_commits_a_batch_of_one(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let sizes = batch_sizes(&t);
    let proofs = approved(&t, 2).await;
    for (p, token) in &proofs {
        assert!(applied(&present(&t, p, token).await.unwrap()));
    }
    assert_eq!(*sizes.lock().unwrap(), vec![1, 1]);
}

on_both_backends!(a_failure_inside_a_batch_rolls_back_only_itself);
async fn a_failure_inside_a_batch_rolls_back_only_itself(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let sizes = batch_sizes(&t);
    let proofs = approved(&t, 4).await;
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| (&proofs[i].0, proofs[i].1.as_str()));
    fail_consuming(&t, &two.0.id, true).await;

    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, four]).await;
    assert!(applied(&results[0]));
    match &results[1] {
        Err(LedgerError::Database(message)) => assert!(message.contains("injected failure")),
        other => panic!("expected the injected failure, got {other:?}"),
    }
    assert!(applied(&results[2]) && applied(&results[3]), "{results:?}");
    // The failed job shared the second batch and wrote nothing.
    assert_eq!(*sizes.lock().unwrap(), vec![1, 3]);
    assert_eq!(t.count("consumed_nonces").await, 3);
    assert_eq!(t.count("intents").await, 3);
    assert_eq!(t.ledger.disposition(&two.0.id).await.unwrap(), None);
    let status = t.ledger.proposal(&two.0.id).await.unwrap().unwrap().status;
    assert_eq!(status, ProposalStatus::Approved);
    assert_eq!(
        common::schedule_keys(&t.ledger).await,
        ["schedule-1", "schedule-3", "schedule-4"]
    );

    // Its proof is still usable, once the fault is gone.
    fail_consuming(&t, &two.0.id, false).await;
    assert!(applied(&present(&t, two.0, two.1).await.unwrap()));
    assert_eq!(t.count("consumed_nonces").await, 4);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

on_both_backends!(a_refusal_and_a_replay_inside_a_batch_answer_as_alone);
async fn a_refusal_and_a_replay_inside_a_batch_answer_as_alone(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let sizes = batch_sizes(&t);
    let proofs = approved(&t, 3).await;
    let [one, two, three] = [0, 1, 2].map(|i| (&proofs[i].0, proofs[i].1.as_str()));
    assert_eq!(
        t.ledger.revoke(&two.0.id, PRINCIPAL, "no").await,
        Ok(RevokeOutcome::Revoked)
    );

    // Behind the first: the revoked proof, and the third proof twice.
    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, three]).await;
    assert!(applied(&results[0]));
    assert_eq!(
        results[1],
        Err(LedgerError::Refused(LedgerRefusal::Revoked))
    );
    let Ok(Consumed::Completed(done)) = &results[2] else {
        panic!("expected the third proof applied, got {:?}", results[2]);
    };
    assert_eq!(results[3], Ok(Consumed::Replay(done.clone())));
    assert_eq!(*sizes.lock().unwrap(), vec![1, 3]);
    assert_eq!(t.count("consumed_nonces").await, 2);
    assert_eq!(
        common::schedule_keys(&t.ledger).await,
        ["schedule-1", "schedule-3"]
    );
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
    let sizes = batch_sizes(&t);
    let proofs = approved(&t, 4).await;
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| (&proofs[i].0, proofs[i].1.as_str()));

    let mut holder = t.raw().await;
    let hold = format!(
        "BEGIN; SELECT id FROM proposals WHERE id = '{}' FOR UPDATE",
        three.0.id
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
    assert_eq!(*sizes.lock().unwrap(), vec![1, 2, 1]);
    assert_eq!(t.count("consumed_nonces").await, 4);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}

/// PostgreSQL: a batch whose commit fails (here a deferred check of the
/// third proposal's completion) keeps nothing of any of its jobs, answers
/// each of them with that failure, and every proof of it stays usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_commit_answers_every_job_of_its_batch_and_keeps_nothing() {
    let t = TestLedger::on(Kind::Postgres).await;
    let sizes = batch_sizes(&t);
    let proofs = approved(&t, 4).await;
    let [one, two, three, four] = [0, 1, 2, 3].map(|i| (&proofs[i].0, proofs[i].1.as_str()));
    let mut raw = t.raw().await;
    let fail_at_commit = format!(
        "CREATE FUNCTION fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN
           IF NEW.proposal_id = '{}' THEN RAISE EXCEPTION 'injected commit failure'; END IF;
           RETURN NEW;
         END $$;
         CREATE CONSTRAINT TRIGGER fail_commit AFTER INSERT ON completions
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION fail_commit()",
        three.0.id
    );
    raw.exec(&fail_at_commit).await.unwrap();

    let writer = hold_writer(&t).await;
    let results = batch_behind(&t, writer, one, &[two, three, four]).await;
    assert!(applied(&results[0]));
    for result in &results[1..] {
        match result {
            Err(LedgerError::Database(message)) => {
                assert!(message.contains("injected commit failure"), "{message}")
            }
            other => panic!("expected the commit's failure, got {other:?}"),
        }
    }
    assert_eq!(*sizes.lock().unwrap(), vec![1]);
    assert_eq!(t.count("consumed_nonces").await, 1);
    assert_eq!(t.count("events").await, t.count("proposals").await * 2 + 3);
    assert_eq!(common::schedule_keys(&t.ledger).await, ["schedule-1"]);

    raw.exec("DROP TRIGGER fail_commit ON completions; DROP FUNCTION fail_commit()")
        .await
        .unwrap();
    raw.close().await;
    for (p, token) in [two, three, four] {
        assert!(applied(&present(&t, p, token).await.unwrap()));
    }
    assert_eq!(t.count("consumed_nonces").await, 4);
    assert!(t.ledger.verify_chain().await.unwrap().is_intact());
}
