//! Schemathesis (an independent OpenAPI fuzzer, pinned in
//! tests/requirements.txt) against a served API: every documented
//! operation, with generated valid and invalid requests, checked for server
//! errors, undocumented status codes, responses that break the schema,
//! invalid data accepted, valid data refused, and auth that is ignored.
//!
//! Requires `schemathesis` on PATH (`pip install -r tests/requirements.txt`,
//! which `scripts/test` does); without it this test FAILS rather than
//! skipping. The run is bounded (`--max-examples`, `--max-time`) and seeded
//! so that CI is repeatable; set `COUNTERSIGN_SCHEMATHESIS_SEED` to explore
//! other inputs (a failure prints a `st replay` id to reproduce it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::Api;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_nothing_against_the_served_document() {
    let api = Api::start().await;
    let token = api.token().await;
    // Some state for the generated requests to find.
    api.approved(&token, "nightly").await;
    let doc = api.get(&token, "/openapi.json").await.body;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("openapi.json");
    std::fs::write(&schema, doc).unwrap();
    // The credential goes through the environment, not the command line.
    let config = dir.path().join("schemathesis.toml");
    std::fs::write(
        &config,
        "headers = { Authorization = \"Bearer ${COUNTERSIGN_TEST_TOKEN}\" }\n",
    )
    .unwrap();
    let output = tokio::process::Command::new("schemathesis")
        .arg("--config-file")
        .arg(&config)
        .arg("run")
        .arg(&schema)
        .args(["--url", &format!("http://{}", api.addr)])
        .args([
            "--checks",
            "all",
            "--max-examples",
            "20",
            "--max-time",
            "45",
            "--workers",
            "1",
        ])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args([
            "--seed",
            &std::env::var("COUNTERSIGN_SCHEMATHESIS_SEED").unwrap_or_else(|_| "20261130".into()),
        ])
        .arg("--no-color")
        .env("COUNTERSIGN_TEST_TOKEN", &token)
        .env("SCHEMATHESIS_HOOKS", "")
        .current_dir(dir.path())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("cannot run schemathesis ({e}): pip install -r tests/requirements.txt")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "schemathesis found problems:\n{stdout}\n{stderr}"
    );
    assert!(!stdout.contains(&token), "the credential was printed");
}
