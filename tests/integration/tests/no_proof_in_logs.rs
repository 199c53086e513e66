//! A raw proof is a secret. This runs a whole flow (direct approval, proof
//! file, replay, tampered proof, handoff) with every tracing event at TRACE
//! level captured, from the in-process signer and the CLI head alike, and
//! asserts that no proof appears in the logs, in any command's output or
//! error, in the event log, or anywhere in the ledger's files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign_identity::Role;
use countersign_proto::v1::ClaimHandoffRequest;
use support::{CREATE_NIGHTLY, Capture, Harness, Person, Run};

fn everything_printed(runs: &[Run]) -> String {
    runs.iter()
        .map(|r| format!("{}\n{}\n{}\n{:?}\n", r.stdout, r.stderr, r.shown, r.result))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proof_appears_in_logs_outputs_errors_or_the_ledger() {
    let capture = Capture::trace();

    let h = Harness::start().await;
    let mut proofs = Vec::new();
    let mut runs = Vec::new();

    // Direct approval: the proof exists only inside the CLI process.
    let direct = h.propose("schedule.create", CREATE_NIGHTLY).await;
    runs.push(
        h.cli_with(&["approve", &direct], "", Person::TypesTheChallenge)
            .await,
    );

    // A proof file: executed, replayed, and tampered with.
    let carried = h
        .propose("schedule.activate", r#"{"name":"nightly"}"#)
        .await;
    let path = h.approve_to_file(&carried).await;
    let proof = std::fs::read_to_string(&path).unwrap();
    runs.push(h.exec(&carried, &path, &[]).await);
    runs.push(h.exec(&carried, &path, &[]).await);
    runs.push(h.exec(&carried, &path, &["--session", "elsewhere"]).await);
    let mut tampered = proof.trim().to_string();
    tampered.pop();
    tampered.push('A');
    let tampered_path = h.proof_file("tampered", &tampered);
    runs.push(h.exec(&carried, &tampered_path, &[]).await);
    proofs.push(proof.trim().to_string());
    proofs.push(tampered);

    // A handoff claimed by a head, then executed.
    let handed = h.propose("schedule.pause", r#"{"name":"nightly"}"#).await;
    runs.push(
        h.cli_with(
            &["approve", &handed, "--for-mcp"],
            "",
            Person::TypesTheChallenge,
        )
        .await,
    );
    let mut head = h.signer.client(Role::Head).await.unwrap();
    let claimed = head
        .claim_handoff(ClaimHandoffRequest {
            proposal_id: handed.clone(),
            session: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner();
    let claimed_path = h.proof_file("claimed", &claimed.proof);
    runs.push(h.exec(&handed, &claimed_path, &[]).await);
    proofs.push(claimed.proof.clone());

    for run in &runs[..2] {
        assert_eq!(run.result, Ok(()), "{}", run.stdout);
    }
    assert_eq!(runs.last().unwrap().result, Ok(()));

    let logs = capture.text();
    assert!(logs.contains("TRACE"), "TRACE events were captured");
    assert!(logs.contains("proof refused"), "the refusals were logged");
    let printed = everything_printed(&runs);
    let events = format!("{:?}", h.ledger().events().await.unwrap());
    let mut ledger_bytes = Vec::new();
    for suffix in ["", "-wal"] {
        let file = format!("{}{suffix}", h.signer.home().ledger_path().display());
        ledger_bytes.extend(std::fs::read(file).unwrap_or_default());
    }
    let ledger_text = String::from_utf8_lossy(&ledger_bytes);
    for proof in &proofs {
        assert!(proof.starts_with("v4.public."));
        // The signed body without its footer is enough to be a leak.
        let body = proof.split('.').nth(2).unwrap();
        for (place, text) in [
            ("logs", &logs),
            ("command output", &printed),
            ("events", &events),
            ("ledger files", &ledger_text.to_string()),
        ] {
            assert!(!text.contains(body), "a proof appears in the {place}");
        }
    }
}
