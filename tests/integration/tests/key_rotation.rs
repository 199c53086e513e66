//! Key rotation on a running head: the API head is started before
//! `countersign-signer keys rotate` runs (the real binary, against the
//! running signer's home). Proofs signed before and after the rotation both
//! verify on that head; after `keys retire` the old key's proofs are refused
//! (`unknown_key_id`) once the head has refreshed its keys; a flood of
//! proofs naming unknown key ids makes the head call PublicKeys a bounded
//! number of times; both changes are in an intact audit chain. On both
//! ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::process::Command;
use std::time::Duration;

use api_support::{Api, assert_refused};
use countersign_integration_tests::bin;
use countersign_registry::Registry;
use ed25519_dalek::SigningKey;
use support::{Backend, Harness, forge};

/// `countersign-signer keys ARGS --home HOME`: its stdout; it must succeed.
fn signer_keys(h: &Harness, args: &[&str]) -> String {
    let out = Command::new(bin("countersign-signer"))
        .arg("keys")
        .args(args)
        .args(["--home", &h.home()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "keys {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The key id a proof's footer names.
fn kid_of(proof: &str) -> String {
    let (_, _, footer) = forge::split(proof);
    let footer: serde_json::Value = serde_json::from_slice(&footer).unwrap();
    footer["kid"].as_str().unwrap().to_owned()
}

/// Past the head's refresh rate limit (5 s).
async fn past_the_refresh_limit() {
    tokio::time::sleep(Duration::from_millis(5_200)).await;
}

async fn proofs_from_before_and_after_a_rotation_verify_on_a_running_head(backend: Backend) {
    let api = Api::over(Harness::start_on(backend, Registry::default_toml()).await).await;
    let token = api.token().await;
    let (early, early_proof) = api.approved(&token, "early").await;
    let (stale, stale_proof) = api.approved(&token, "stale").await;
    let old_kid = kid_of(&early_proof);
    assert_eq!(
        signer_keys(&api.h, &["list"]),
        format!("{old_kid} active file\n")
    );

    let new_kid = signer_keys(&api.h, &["rotate"]).trim().to_owned();
    assert_ne!(new_kid, old_kid);
    assert_eq!(
        signer_keys(&api.h, &["list"]),
        format!("{old_kid} verifying file\n{new_kid} active file\n")
    );
    // The key set a receiving service pins says the same.
    let export = api.h.cli(&["keys", "export"]).await;
    let set: serde_json::Value = serde_json::from_str(export.stdout.trim()).unwrap();
    let statuses: Vec<(String, String)> = set["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["id"].as_str().unwrap().to_owned(),
                k["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        statuses.contains(&(new_kid.clone(), "active".into())),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&(old_kid.clone(), "verifying".into())),
        "{statuses:?}"
    );

    // Signed with the new key: the head learns it on first sight.
    let (late, late_proof) = api.approved(&token, "late").await;
    assert_eq!(kid_of(&late_proof), new_kid);
    let reply = api.execute(&token, &late, &late_proof).await;
    assert_eq!(reply.json()["applied"], true, "{}", reply.body);
    // Signed before the rotation: the old key still verifies.
    let reply = api.execute(&token, &early, &early_proof).await;
    assert_eq!(reply.json()["applied"], true, "{}", reply.body);

    signer_keys(&api.h, &["retire", &old_kid]);
    assert_eq!(
        signer_keys(&api.h, &["list"]),
        format!("{old_kid} retired file\n{new_kid} active file\n")
    );
    // The head refreshes at the next unknown key id past the rate limit.
    past_the_refresh_limit().await;
    let (probe, probe_proof) = api.approved(&token, "probe").await;
    let unknown = forge::signed_by(&probe_proof, &SigningKey::from_bytes(&[9u8; 32]));
    assert_refused(
        &api.execute(&token, &probe, &unknown).await,
        "unknown_key_id",
    );
    assert_refused(
        &api.execute(&token, &stale, &stale_proof).await,
        "unknown_key_id",
    );

    let audit = api.h.cli(&["--json", "audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stderr);
    assert_eq!(audit.json()["intact"], true, "{}", audit.stdout);
    let events = api.h.ledger().events().await.unwrap();
    let keys: Vec<(String, String)> = events
        .iter()
        .filter(|e| e.kind.starts_with("key_"))
        .map(|e| (e.kind.clone(), e.details.to_string()))
        .collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_eq!(keys[0].0, "key_rotated");
    assert!(keys[0].1.contains(&new_kid), "{keys:?}");
    assert_eq!(keys[1].0, "key_retired");
    assert!(keys[1].1.contains(&old_kid), "{keys:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_from_before_and_after_a_rotation_verify_on_a_running_head_on_sqlite() {
    proofs_from_before_and_after_a_rotation_verify_on_a_running_head(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_from_before_and_after_a_rotation_verify_on_a_running_head_on_postgres() {
    proofs_from_before_and_after_a_rotation_verify_on_a_running_head(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unknown_key_ids_makes_at_most_one_public_keys_call() {
    let api = Api::over(Harness::start().await).await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "flood").await;
    let before = api.h.signer.state().public_keys_served();
    let mut flood = tokio::task::JoinSet::new();
    for n in 0..40u8 {
        let unknown = forge::signed_by(&proof, &SigningKey::from_bytes(&[n + 100; 32]));
        let (addr, auth) = (api.addr, format!("Bearer {token}"));
        let target = format!("/v1/proposals/{id}/execute");
        flood.spawn(async move {
            let body = serde_json::json!({ "proof": unknown }).to_string();
            let headers = [
                ("Authorization", auth.as_str()),
                ("Content-Type", "application/json"),
            ];
            api_support::http(addr, "POST", &target, &headers, body.as_bytes()).await
        });
    }
    for reply in flood.join_all().await {
        assert_refused(&reply, "unknown_key_id");
    }
    let made = api.h.signer.state().public_keys_served() - before;
    assert!(made <= 1, "{made} PublicKeys calls for one flood");
    // The genuine proof still executes.
    let reply = api.execute(&token, &id, &proof).await;
    assert_eq!(reply.json()["applied"], true, "{}", reply.body);
}
