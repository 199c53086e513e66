//! A coding agent's hook answered by a rule, as the agent feels it: the
//! whole `countersign hook claude-code` process (start, propose, the
//! signer's rule approval, claim, verify, consume, answer), beside its
//! floor in the same loop: `countersign show` (a process start and one
//! signer call), plus one durable SQLite commit made by a fresh process
//! (the hook's own consumption) and one made over a kept connection (the
//! signer's record of the proposal and its rule approval). Target: p50
//! within 1.3x of that floor.
//!
//! A signer runs in this process (`TestSigner`: real mTLS on 127.0.0.1,
//! SQLite ledger, rules enabled) with one rule covering `git status` in
//! every session; each iteration asks about a new tool call.

use countersign_gate::signer_client;
use countersign_identity::Role;
use countersign_proto::v1::CreateRuleRequest;
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::json;

use countersign_ledger::Ledger;

use super::heads::{Cli, binary};
use super::latency::{Samples, ms};
use super::{Fixture, Options, RawDb, fresh_commit, fresh_database, prepare, verdict};

/// Iterations before the measured ones.
const WARM_UP: usize = 5;

/// The target ratio of the hook's p50 to the floor's.
const TARGET: f64 = 1.3;

pub(super) async fn run(fx: &Fixture, opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(100)).max(1);
    // The commit floors: a ledger of their own, proposals approved
    // beforehand; two per iteration (a kept connection, a fresh process).
    let (url, _pg, _dir) = fresh_database("sqlite").await;
    let ledger = Ledger::open(&url).await.map_err(|e| e.to_string())?;
    let raw = RawDb::open(&url).await;
    let mut commits = prepare(fx, &ledger, 95_000_000, 2 * (n + WARM_UP)).await;
    let signer = TestSigner::start_configured(
        Registry::default_toml(),
        None,
        "\n[rules]\nenabled = true\n",
    )
    .await
    .map_err(|e| format!("signer: {e}"))?;
    let home = signer.home();
    let addr = signer.addr().to_string();
    let mut approver = signer_client::connect(home, &addr, Role::Approver)
        .await
        .map_err(|e| e.to_string())?;
    let expires = time::OffsetDateTime::now_utc() + time::Duration::hours(2);
    let definition = json!({
        "operations": ["agent.shell"],
        "constraints": [{"pointer": "/tool_input/command",
            "argv": {"program": "git", "args": ["status"], "more_args": false}}],
        "sessions": ["*"],
        "max_uses": 100_000,
        "per_hour": 3600,
        "expires_at": countersign_verifier::timestamp::format_whole_seconds(expires)
            .map_err(|e| e.to_string())?,
    })
    .to_string();
    let shown = approver
        .create_rule(CreateRuleRequest {
            definition_json: definition.clone(),
            dry_run: true,
            definition_sha256: String::new(),
        })
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    approver
        .create_rule(CreateRuleRequest {
            definition_json: definition,
            dry_run: false,
            definition_sha256: shown.definition_sha256,
        })
        .await
        .map_err(|e| e.to_string())?;

    let cli = Cli::new(binary("countersign")?, home.root());
    let (_, seed) = cli
        .run(
            &["--json", "propose", "schedule.create", "--args-file", "-"],
            r#"{"name":"seed","cron":"0 3 * * *"}"#,
        )
        .await?;
    let seed: serde_json::Value = serde_json::from_str(&seed).map_err(|e| e.to_string())?;
    let seed = seed["id"].as_str().ok_or("no proposal id")?.to_owned();

    println!(
        "## A hook answered by a rule ({n} iterations after {WARM_UP} warm-up, beside its floor)"
    );
    const SHOW: &str = "cli show (start + mTLS call)";
    const KEPT_COMMIT: &str = "one SQLite commit, kept connection";
    const FRESH_COMMIT: &str = "one SQLite commit, fresh process";
    const HOOK: &str = "hook claude-code, rule-covered (allow)";
    let mut s = Samples::default();
    for i in 0..WARM_UP + n {
        let (t, _) = cli.run(&["--json", "show", &seed], "").await?;
        let input = json!({
            "session_id": "bench-session", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
            "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "git status"}, "tool_use_id": format!("toolu_bench_{i}"),
        })
        .to_string();
        let (u, answer) = cli
            .run(&["hook", "claude-code", "--wait-secs", "10"], &input)
            .await?;
        if !answer.contains(r#""permissionDecision":"allow""#) {
            return Err(format!("the hook did not allow: {answer}"));
        }
        s.add(SHOW, t, i >= WARM_UP);
        s.add(HOOK, u, i >= WARM_UP);
        let (id, proof) = commits.pop().ok_or("out of prepared proposals")?;
        let t = std::time::Instant::now();
        raw.consume(id.into(), &proof).await;
        s.add(KEPT_COMMIT, t.elapsed(), i >= WARM_UP);
        let (id, proof) = commits.pop().ok_or("out of prepared proposals")?;
        let t = fresh_commit(&url, &id, &proof).await?;
        s.add(FRESH_COMMIT, t, i >= WARM_UP);
    }
    println!("{:<44} {:>10} {:>10}", "what", "p50", "p99");
    for name in [SHOW, KEPT_COMMIT, FRESH_COMMIT, HOOK] {
        println!("{name:<44} {:>10} {:>10}", ms(s.p50(name)), ms(s.p99(name)));
    }
    let floor = s.p50(SHOW) + s.p50(FRESH_COMMIT) + s.p50(KEPT_COMMIT);
    let ratio = s.p50(HOOK).as_secs_f64() / floor.as_secs_f64();
    println!(
        "Target: hook p50 {ratio:.2}x its floor, show + a fresh process's commit + a kept connection's commit = {} (target <= {TARGET}x) {}",
        ms(floor),
        verdict(ratio <= TARGET)
    );
    let against_show = s.p50(HOOK).as_secs_f64() / s.p50(SHOW).as_secs_f64();
    println!("  (against show alone: {against_show:.2}x)");
    let program = binary("countersign")?;
    let size = std::fs::metadata(&program)
        .map_err(|e| format!("{}: {e}", program.display()))?
        .len();
    let mib = size as f64 / (1024.0 * 1024.0);
    println!(
        "Target: the countersign binary ({}) is {mib:.1} MiB (target < 40 MiB) {}",
        program.display(),
        verdict(mib < 40.0)
    );
    Ok(())
}
