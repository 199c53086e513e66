//! The witnessing client against a real c2sp.org/tlog-witness written by
//! nobody here (aics-witness, from PyPI), on both ledger backends: the
//! first checkpoint is cosigned and stored, and the cosigned checkpoint
//! meets the policy's quorum; a 409 is answered by a resend from the
//! witness's size with a fresh consistency proof; a restart resumes the
//! queue without resending what was acknowledged; a witness that cosigned
//! more than the log holds is reported as a rollback and halted; a
//! cosignature that does not verify is refused and not stored; a witness
//! unreachable for the gap interval is recorded as a gap event, once.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use countersign_ledger::witness::{WITNESS_BACK_EVENT, WITNESS_GAP_EVENT, WITNESS_ROLLBACK_EVENT};
use countersign_ledger::{CosignatureRefusal, LedgerError};
use countersign_tlog::{Note, Policy};
use countersign_witness::{Exchange, Outcome, WitnessClient, Witnessing};
use support::{
    Answer, Kind, RealWitness, TestLedger, free_port, policy, settings, stand_in,
    stand_in_cosigner, target,
};

const LONG: Duration = Duration::from_secs(300);

/// A client of `t` for the stand-in witness on `port`.
async fn stand_in_client(t: &TestLedger, port: u16, gap: Duration) -> WitnessClient {
    let key = stand_in_cosigner().verifier_key();
    let url = format!("http://127.0.0.1:{port}");
    WitnessClient::load(t.ledger.clone(), target("w", &key, &url), settings(gap))
        .await
        .unwrap()
}

fn exchange(old: u64, size: u64, status: u16) -> Exchange {
    Exchange {
        old,
        size,
        status: Some(status),
    }
}

on_both_backends!(the_first_checkpoint_is_cosigned_and_meets_the_policy);
async fn the_first_checkpoint_is_cosigned_and_meets_the_policy(kind: Kind) {
    let Some(witness) = RealWitness::start("witness.test/w1").await else {
        return;
    };
    let t = TestLedger::on(kind).await;
    let checkpoint = t.grow(3).await;
    let mut client = WitnessClient::load(
        t.ledger.clone(),
        target("w1", &witness.key, &witness.url),
        settings(LONG),
    )
    .await
    .unwrap();
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![exchange(0, checkpoint.size, 200)]);
    assert_eq!(round.outcome, Outcome::Cosigned { size: 3 });
    assert_eq!(client.state().acknowledged, 3);

    let (size, note) = t
        .ledger
        .latest_cosigned_checkpoint()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(size, 3);
    let policy = Policy::parse(policy(&[("w1", &witness.key, &witness.url)]).as_bytes()).unwrap();
    let verified = policy
        .verify_checkpoint(&Note::parse(note.as_bytes()).unwrap())
        .unwrap();
    assert_eq!(verified.checkpoint().size(), 3);
    assert!(verified.cosigned_by(&witness.key).is_some());
    // Nothing new: nothing is sent.
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![]);
    assert_eq!(round.outcome, Outcome::UpToDate { size: 3 });
}

on_both_backends!(resends_from_the_witness_size_and_resumes_after_a_restart);
async fn resends_from_the_witness_size_and_resumes_after_a_restart(kind: Kind) {
    let Some(witness) = RealWitness::start("witness.test/w1").await else {
        return;
    };
    let t = TestLedger::on(kind).await;
    let target = target("w1", &witness.key, &witness.url);
    t.grow(4).await;
    let mut first = WitnessClient::load(t.ledger.clone(), target.clone(), settings(LONG))
        .await
        .unwrap();
    assert_eq!(
        first.round().await.unwrap().outcome,
        Outcome::Cosigned { size: 4 }
    );
    drop(first);

    // The log grows while no client runs; the restarted client learns the
    // witness's size (409: 4) and resends from it with a consistency proof.
    t.grow(5).await;
    let ledger = t.reopen().await;
    let mut client = WitnessClient::load(ledger.clone(), target.clone(), settings(LONG))
        .await
        .unwrap();
    assert_eq!(client.state().acknowledged, 4);
    let round = client.round().await.unwrap();
    assert_eq!(
        round.exchanges,
        vec![exchange(0, 9, 409), exchange(4, 9, 200)]
    );
    assert_eq!(round.outcome, Outcome::Cosigned { size: 9 });
    drop(client);

    // Restarted again with nothing new: the size is learnt and nothing
    // acknowledged is sent again.
    let mut client = WitnessClient::load(t.reopen().await, target.clone(), settings(LONG))
        .await
        .unwrap();
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![exchange(0, 9, 409)]);
    assert_eq!(round.outcome, Outcome::UpToDate { size: 9 });
    assert_eq!(client.round().await.unwrap().exchanges, vec![]);
    // The next checkpoint goes from the acknowledged size at once.
    t.grow(2).await;
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![exchange(9, 11, 200)]);
    for size in [4, 9, 11] {
        assert_eq!(ledger.cosignatures(size).await.unwrap().len(), 1, "{size}");
    }
    assert!(ledger.cosignatures(9).await.unwrap()[0].timestamp > 0);
}

on_both_backends!(a_witness_ahead_of_the_log_is_reported_as_a_rollback);
async fn a_witness_ahead_of_the_log_is_reported_as_a_rollback(kind: Kind) {
    let Some(witness) = RealWitness::start("witness.test/w1").await else {
        return;
    };
    let target = target("w1", &witness.key, &witness.url);
    // The witness cosigns the log at size 6 ...
    let before = TestLedger::on(kind).await;
    before.grow(6).await;
    let mut client = WitnessClient::load(before.ledger.clone(), target.clone(), settings(LONG))
        .await
        .unwrap();
    assert_eq!(
        client.round().await.unwrap().outcome,
        Outcome::Cosigned { size: 6 }
    );
    // ... and then sees the same log (same key) with 2 events.
    let after = TestLedger::on(kind).await;
    after.grow(2).await;
    let mut client = WitnessClient::load(after.ledger.clone(), target.clone(), settings(LONG))
        .await
        .unwrap();
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![exchange(0, 2, 409)]);
    assert_eq!(
        round.outcome,
        Outcome::RolledBack {
            witness_size: 6,
            log_size: 2,
            reason: "the witness cosigned a size beyond the log's latest checkpoint".into(),
        }
    );
    let event = after.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(event.kind, WITNESS_ROLLBACK_EVENT);
    assert_eq!(event.details["witness_size"], 6);
    assert_eq!(event.details["log_size"], 2);
    assert_eq!(event.details["key"], witness.key.to_string());
    assert!(
        after
            .ledger
            .verify_chain()
            .await
            .unwrap()
            .first_break
            .is_none()
    );
    // Halted, across a restart too: nothing more is sent.
    assert!(matches!(
        client.round().await.unwrap(),
        countersign_witness::Round { exchanges, outcome: Outcome::Halted(_) } if exchanges.is_empty()
    ));
    let mut restarted = WitnessClient::load(after.reopen().await, target, settings(LONG))
        .await
        .unwrap();
    assert!(matches!(
        restarted.round().await.unwrap().outcome,
        Outcome::Halted(reason) if reason.contains("witness size 6, log checkpoint size 2")
    ));
    assert!(after.ledger.cosignatures(2).await.unwrap().is_empty());
}

on_both_backends!(a_witness_that_refuses_our_consistency_proof_is_reported_as_a_fork);
async fn a_witness_that_refuses_our_consistency_proof_is_reported_as_a_fork(kind: Kind) {
    let Some(witness) = RealWitness::start("witness.test/w1").await else {
        return;
    };
    let target = target("w1", &witness.key, &witness.url);
    let seen = TestLedger::on(kind).await;
    seen.grow_labelled(4, "seen").await;
    let mut client = WitnessClient::load(seen.ledger.clone(), target.clone(), settings(LONG))
        .await
        .unwrap();
    assert_eq!(
        client.round().await.unwrap().outcome,
        Outcome::Cosigned { size: 4 }
    );
    // The same log key, other events: the tree of 4 has another root.
    let other = TestLedger::on(kind).await;
    other.grow_labelled(6, "other").await;
    let mut client = WitnessClient::load(other.ledger.clone(), target, settings(LONG))
        .await
        .unwrap();
    let round = client.round().await.unwrap();
    assert_eq!(
        round.exchanges,
        vec![exchange(0, 6, 409), exchange(4, 6, 422)]
    );
    assert_eq!(
        round.outcome,
        Outcome::RolledBack {
            witness_size: 4,
            log_size: 6,
            reason:
                "the witness refused the log's consistency proof from the size it cosigned (422)"
                    .into(),
        }
    );
    let event = other.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(event.kind, WITNESS_ROLLBACK_EVENT);
    assert!(client.state().halted.is_some());
}

on_both_backends!(a_checkpoint_another_client_sent_meanwhile_is_no_rollback);
async fn a_checkpoint_another_client_sent_meanwhile_is_no_rollback(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.grow(2).await;
    let port = free_port();
    let server = support::stand_in_overtaken(port, t.ledger.clone()).await;
    let mut client = stand_in_client(&t, port, LONG).await;
    // The witness names 5, beyond the checkpoint of 2 this client read,
    // but the ledger holds 5 by then: resent from it, cosigned.
    let round = client.round().await.unwrap();
    server.abort();
    assert_eq!(
        round.exchanges,
        vec![exchange(0, 2, 409), exchange(5, 5, 200)]
    );
    assert_eq!(round.outcome, Outcome::Cosigned { size: 5 });
    assert!(client.state().halted.is_none());
    assert!(
        !t.ledger
            .events()
            .await
            .unwrap()
            .iter()
            .any(|e| e.kind == WITNESS_ROLLBACK_EVENT)
    );
}

on_both_backends!(refuses_a_cosignature_that_does_not_verify_and_stores_nothing);
async fn refuses_a_cosignature_that_does_not_verify_and_stores_nothing(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.grow(2).await;
    // A witness whose signature bytes are wrong.
    let port = free_port();
    let server = stand_in(port, Answer::Corrupt).await;
    let key = stand_in_cosigner().verifier_key();
    let mut client = stand_in_client(&t, port, LONG).await;
    let round = client.round().await.unwrap();
    assert_eq!(round.exchanges, vec![exchange(0, 2, 200)]);
    assert_eq!(
        round.outcome,
        Outcome::Failed(format!(
            "cosignature refused: {}",
            CosignatureRefusal::DoesNotVerify
        ))
    );
    server.abort();
    assert!(t.ledger.cosignatures(2).await.unwrap().is_empty());
    assert_eq!(t.ledger.latest_cosigned_checkpoint().await.unwrap(), None);
    assert_eq!(client.state().acknowledged, 0);

    // A real witness, under a key the policy gives the same name but
    // another public key: its cosignature is not by the policy's key.
    let Some(witness) = RealWitness::start("stand-in.test/w").await else {
        return;
    };
    let mut client = WitnessClient::load(
        t.ledger.clone(),
        target("w", &key, &witness.url),
        settings(LONG),
    )
    .await
    .unwrap();
    let round = client.round().await.unwrap();
    assert_eq!(
        round.outcome,
        Outcome::Failed(format!(
            "cosignature refused: {}",
            CosignatureRefusal::OtherKey
        ))
    );
    assert!(t.ledger.cosignatures(2).await.unwrap().is_empty());
    // The ledger itself refuses the same line, whoever asks.
    assert!(matches!(
        t.ledger
            .store_cosignature(2, &key, "\u{2014} stand-in.test/w AAAAAAAA")
            .await,
        Err(LedgerError::CosignatureRefused { .. })
    ));
}

on_both_backends!(an_unreachable_witness_is_recorded_as_one_gap_after_the_interval);
async fn an_unreachable_witness_is_recorded_as_one_gap_after_the_interval(kind: Kind) {
    let t = TestLedger::on(kind).await;
    t.grow(2).await;
    let port = free_port();
    let key = stand_in_cosigner().verifier_key();
    let url = format!("http://127.0.0.1:{port}");
    let gap = Duration::from_secs(2);
    let mut client = WitnessClient::load(t.ledger.clone(), target("w", &key, &url), settings(gap))
        .await
        .unwrap();
    let kinds = |events: Vec<countersign_ledger::EventRecord>| -> Vec<String> {
        events
            .into_iter()
            .map(|e| e.kind)
            .filter(|k| k.starts_with("tlog_witness"))
            .collect()
    };
    let round = client.round().await.unwrap();
    assert_eq!(
        round.exchanges,
        vec![Exchange {
            old: 0,
            size: 2,
            status: None
        }]
    );
    assert!(matches!(round.outcome, Outcome::Failed(ref e) if e.contains("cannot connect")));
    assert!(client.state().unreachable_since.is_some());
    assert!(kinds(t.ledger.events().await.unwrap()).is_empty());
    // Still within the interval: no event.
    client.round().await.unwrap();
    assert!(kinds(t.ledger.events().await.unwrap()).is_empty());
    tokio::time::sleep(gap + Duration::from_millis(200)).await;
    client.round().await.unwrap();
    client.round().await.unwrap();
    assert_eq!(
        kinds(t.ledger.events().await.unwrap()),
        vec![WITNESS_GAP_EVENT]
    );
    let gap_event = t.ledger.events().await.unwrap().pop().unwrap();
    assert_eq!(gap_event.details["key"], key.to_string());
    assert_eq!(gap_event.details["gap_secs"], 2);
    // It survives a restart: the outage is not counted again.
    let mut client = WitnessClient::load(t.reopen().await, target("w", &key, &url), settings(gap))
        .await
        .unwrap();
    assert!(client.state().gap_recorded);
    client.round().await.unwrap();
    assert_eq!(
        kinds(t.ledger.events().await.unwrap()),
        vec![WITNESS_GAP_EVENT]
    );
    // The witness answers again: cosigned, and the end of the gap recorded.
    let server = stand_in(port, Answer::Cosign).await;
    assert_eq!(
        client.round().await.unwrap().outcome,
        Outcome::Cosigned { size: 2 }
    );
    server.abort();
    assert_eq!(
        kinds(t.ledger.events().await.unwrap()),
        vec![WITNESS_GAP_EVENT, WITNESS_BACK_EVENT]
    );
    assert_eq!(client.state().unreachable_since, None);
    assert!(!client.state().gap_recorded);
    // The gap event enters the tree: the next checkpoint commits to it.
    let next = t.grow(0).await;
    assert_eq!(next.size, 2 + 2);
}

on_both_backends!(the_running_client_cosigns_each_new_checkpoint);
async fn the_running_client_cosigns_each_new_checkpoint(kind: Kind) {
    let Some(witness) = RealWitness::start("witness.test/w1").await else {
        return;
    };
    let t = TestLedger::on(kind).await;
    let path = t.dir.path().join("policy");
    std::fs::write(&path, policy(&[("w1", &witness.key, &witness.url)])).unwrap();
    let config = countersign_identity::TlogConfig {
        policy: path,
        trust_roots: None,
        gap_secs: 300,
        poll_ms: 50,
        timeout_secs: 5,
    };
    let running = Witnessing::start(t.ledger.clone(), &config).await.unwrap();
    // A second client of the same ledger (another host's `countersign up`)
    // waits: one holds the witnessing chore.
    let first_holder = witnessing_holder(&t.ledger).await;
    let second = Witnessing::start(t.ledger.clone(), &config).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(witnessing_holder(&t.ledger).await, first_holder);
    for n in [3, 2] {
        let checkpoint = t.grow(n).await;
        let mut waited = 0;
        while t
            .ledger
            .cosignatures(checkpoint.size)
            .await
            .unwrap()
            .is_empty()
        {
            assert!(waited < 200, "size {} was not cosigned", checkpoint.size);
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += 1;
        }
    }
    running.stop().await;
    // Given back at stop: it expires at once.
    let lease = t.ledger.leases().await.unwrap();
    let lease = lease.iter().find(|l| l.chore == "witnessing").unwrap();
    assert!(lease.expires_at <= time::OffsetDateTime::now_utc());
    second.stop().await;
    assert_eq!(
        t.ledger
            .latest_cosigned_checkpoint()
            .await
            .unwrap()
            .unwrap()
            .0,
        5
    );
}

/// Who holds the witnessing chore, once someone does.
async fn witnessing_holder(ledger: &countersign_ledger::Ledger) -> String {
    for _ in 0..100 {
        let leases = ledger.leases().await.unwrap();
        if let Some(lease) = leases.iter().find(|l| l.chore == "witnessing") {
            return lease.holder.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("nobody took the witnessing chore");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_to_start_on_an_unreadable_policy_or_an_unusable_url() {
    let t = TestLedger::on(Kind::Sqlite).await;
    let path = t.dir.path().join("policy");
    let config = countersign_identity::TlogConfig {
        policy: path.clone(),
        trust_roots: None,
        gap_secs: 300,
        poll_ms: 50,
        timeout_secs: 5,
    };
    let refusal = |config| {
        let ledger = t.ledger.clone();
        async move { Witnessing::start(ledger, &config).await.unwrap_err() }
    };
    assert!(matches!(
        refusal(config.clone()).await,
        countersign_witness::WitnessError::Read { path: p, .. } if p == path
    ));
    let key = stand_in_cosigner().verifier_key();
    std::fs::write(&path, policy(&[("w", &key, "http://w.example")])).unwrap();
    assert_eq!(
        refusal(config.clone()).await,
        countersign_witness::WitnessError::Targets(countersign_witness::TargetError::Url {
            name: "w".into(),
            url: "http://w.example".into(),
            reason: "plain http:// is allowed only to a loopback IP address (127.0.0.1 or [::1]), not \"w.example\"".into(),
        })
    );
    std::fs::write(&path, "quorum none\nquorum none\n").unwrap();
    assert_eq!(
        refusal(config).await,
        countersign_witness::WitnessError::Targets(countersign_witness::TargetError::Policy(
            countersign_tlog::PolicyError::SecondQuorum { line: 2 }
        ))
    );
}
