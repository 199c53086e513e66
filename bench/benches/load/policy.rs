//! What the operator's Cedar policy adds to a proposal (issue 51), beside
//! its floor: `Propose` end to end with no policy set, with a binding set
//! of 7 policies (the coding-agents example and three more) and with one
//! of 200, all in one loop.
//!
//! Three signers run in this process (`TestSigner`: real mTLS on
//! 127.0.0.1, each a SQLite ledger of its own), the same but for
//! `[policy] cedar`; each has a head of its own over one kept gRPC
//! channel. Every iteration proposes the same kind of call to each of the
//! three, in an order that rotates, so whatever else the machine does
//! falls on all three alike. The proposal is a coding agent's shell
//! command through the hook head that no policy matches: every
//! condition is evaluated, a person decides, and it ends pending under
//! all three, so the work compared differs only by the policy.
//!
//! Beside it, in-process: `PolicySet::evaluate` of the same request
//! against each set (what the signer does at a proposal besides reading
//! the file and comparing its text with the one it last parsed).

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use countersign_gate::signer_client;
use countersign_identity::Role;
use countersign_policy::{Head, PolicyRequest, PolicySet, Verdict, schema};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ProposalStatus, ProposeRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use serde_json::{Value, json};
use tonic::transport::Channel;

use super::watch::{ms, pct, print_rows};
use super::{Options, policy_sets, verdict};

/// Iterations (of all three) before the measured ones.
const WARM_UP: usize = 20;

/// The target: what 200 policies add to a proposal, p50, in nanoseconds.
const TARGET_P50_NS: i128 = 200_000;

/// In-process evaluations of each set per end-to-end iteration.
const EVALUATIONS_PER_ITERATION: usize = 10;

/// The shell command of iteration `i` (the same length for every `i`).
fn arguments(i: usize) -> Value {
    json!({
        "agent": "claude-code",
        "tool_name": "Bash",
        "cwd": "/srv/app",
        "tool_input": { "command": format!("cargo test --workspace -p crate-{i:06}") },
    })
}

/// Proposes iteration `i`'s command through `head`; how long `Propose`
/// took, in nanoseconds. Anything but a pending proposal ends the run.
async fn propose(head: &mut SignerClient<Channel>, i: usize) -> Result<i128, String> {
    let request = ProposeRequest {
        operation: "agent.shell".into(),
        arguments_json: arguments(i).to_string(),
        session: "bench".into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "hook".into(),
    };
    let t = Instant::now();
    let view = head
        .propose(request)
        .await
        .map_err(|e| e.to_string())?
        .into_inner();
    let took = t.elapsed().as_nanos() as i128;
    if view.status() != ProposalStatus::Pending {
        return Err(format!(
            "proposal {} is {:?}, not pending: {}",
            view.id,
            view.status(),
            view.reason
        ));
    }
    Ok(took)
}

/// A signer of the default registry with `extra` config, and a head of it.
async fn signer(extra: &str) -> Result<(TestSigner, SignerClient<Channel>), String> {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, extra)
        .await
        .map_err(|e| format!("signer: {e}"))?;
    let head = signer_client::connect(signer.home(), &signer.addr().to_string(), Role::Head)
        .await
        .map_err(|e| e.to_string())?;
    Ok((signer, head))
}

/// The policy section; an error says what went wrong.
pub(super) async fn run(opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(300)).max(1);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let texts = [policy_sets::example(), policy_sets::generated(200)];
    let mut configs = vec![String::new()];
    for (name, text) in ["example.cedar", "two-hundred.cedar"].iter().zip(&texts) {
        let path = dir.path().join(name);
        std::fs::write(&path, text).map_err(|e| e.to_string())?;
        configs.push(format!("\n[policy]\ncedar = \"{}\"\n", path.display()));
    }
    let mut signers = Vec::new();
    for config in &configs {
        signers.push(signer(config).await?);
    }

    let registry = Registry::from_toml_str(Registry::default_toml()).map_err(|e| e.to_string())?;
    let schema = schema(&registry).map_err(|e| e.to_string())?;
    let sets = texts
        .iter()
        .map(|text| {
            let set = PolicySet::parse(text).map_err(|e| e.to_string())?;
            set.validate(&schema)
                .map_err(|_| "a set does not validate")?;
            Ok(set)
        })
        .collect::<Result<Vec<_>, String>>()?;
    let time_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();

    let mut e2e: [Vec<i128>; 3] = Default::default();
    let mut evaluated: [Vec<i128>; 2] = Default::default();
    let started = Instant::now();
    for i in 0..WARM_UP + n {
        let keep = i >= WARM_UP;
        for k in 0..3 {
            let which = (i + k) % 3;
            let took = propose(&mut signers[which].1, i).await?;
            if keep {
                e2e[which].push(took);
            }
        }
        let args = arguments(i);
        let request = PolicyRequest {
            principal: signers[0].0.principal(),
            agent: Some("claude-code"),
            session: "bench",
            operation: "agent.shell",
            arguments: &args,
            time_unix,
            head: Head::Hook,
        };
        for j in 0..EVALUATIONS_PER_ITERATION * 2 {
            let which = (i + j) % 2;
            let t = Instant::now();
            let said = sets[which]
                .evaluate(&schema, &request)
                .map_err(|e| e.to_string())?;
            let took = t.elapsed().as_nanos() as i128;
            if said != Verdict::PersonDecides {
                return Err(format!("the set said {said:?}"));
            }
            if keep {
                evaluated[which].push(took);
            }
        }
    }
    let elapsed = started.elapsed();

    let [mut floor, mut example, mut two_hundred] = e2e;
    println!(
        "## The operator's policy at a proposal: Propose end to end (hook head, agent.shell, ends pending)"
    );
    let p50s = print_rows(vec![
        ("Propose, no policy set (floor)", &mut floor),
        ("Propose, binding set of 7 policies", &mut example),
        ("Propose, binding set of 200 policies", &mut two_hundred),
    ]);
    println!(
        "({n} iterations of the three, round-robin in rotating order, after {WARM_UP} warm-up; \
         {elapsed:.1?}; SQLite ledgers; p99 is the nearest-rank percentile)"
    );
    println!(
        "in-process PolicySet::evaluate of the same request ({EVALUATIONS_PER_ITERATION} per iteration each, interleaved):"
    );
    for (name, samples) in ["7 policies", "200 policies"].iter().zip(&mut evaluated) {
        println!(
            "  {name:<14} p50 {:>8.1} us   p99 {:>8.1} us",
            pct(samples, 0.5) as f64 / 1e3,
            pct(samples, 0.99) as f64 / 1e3
        );
    }
    println!("Targets:");
    for (name, p50) in [("7 policies", p50s[1]), ("200 policies", p50s[2])] {
        let added = p50 - p50s[0];
        let target = if name == "200 policies" {
            format!(" (target <= 0.2 ms) {}", verdict(added <= TARGET_P50_NS))
        } else {
            String::new()
        };
        println!(
            "  a binding set of {name} adds to Propose, p50: {}{target}",
            ms(added)
        );
    }
    println!();
    Ok(())
}
