//! The gateway's latency, each figure beside its floor in the same loop:
//! an allowed tool call through `countersign mcp` (the gateway, stdio)
//! against the same call made directly to the same upstream over the same
//! transport, and the execution of an approved gated call against what it
//! cannot avoid: the direct call, a fresh `tools/list` of the upstream (the
//! pin check before anything is consumed) and two durable SQLite commits
//! (the intent, then the completion), with the same head's execution of a
//! builtin through the same handoff beside it.
//!
//! The upstream is `@modelcontextprotocol/server-filesystem` from npm
//! (`npm ci --prefix tests/mcp-servers`, which `scripts/test` runs), run
//! with the machine's `node`; a signer runs in this process (`TestSigner`)
//! and the gateway is the real `countersign` of `target/<profile>/`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use countersign_gate::signer_client;
use countersign_identity::Role;
use countersign_ledger::Ledger;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{DecideRequest, Delivery};
use countersign_signer::testing::TestSigner;
use serde_json::json;
use tokio::process::Command;
use tonic::transport::Channel;

use super::heads::{Cli, Mcp, binary};
use super::{Fixture, Options, RawDb, fresh_database, prepare, verdict};

/// Iterations before the measured ones.
const WARM_UP: usize = 3;

const DIRECT_READ: &str = "upstream read_text_file, direct";
const GATEWAY_READ: &str = "gateway read_text_file (allow)";
const DIRECT_WRITE: &str = "upstream write_file, direct";
const DIRECT_LIST: &str = "upstream tools/list, direct";
const COMMIT: &str = "one SQLite commit";
const GATEWAY_EXECUTE: &str = "gateway execute_approved write_file";
const BUILTIN_EXECUTE: &str = "same head, execute_approved of a builtin";

/// The filesystem server's entry point, installed by `scripts/test`.
fn filesystem_server() -> Result<PathBuf, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../tests/mcp-servers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    );
    path.canonicalize().map_err(|_| {
        format!(
            "{} is missing: run `npm ci --prefix tests/mcp-servers`",
            path.display()
        )
    })
}

fn node() -> Result<PathBuf, String> {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("node"))
                .find(|p| p.is_file())
        })
        .ok_or_else(|| "no `node` on PATH (Debian: nodejs)".to_string())
}

/// The section; `n` measured iterations.
pub(crate) async fn run(fx: &Fixture, opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(if opts.quick { 30 } else { 300 });
    let countersign = binary("countersign")?;
    let (node, server) = (node()?, filesystem_server()?);
    let signer = TestSigner::start()
        .await
        .map_err(|e| format!("signer: {e}"))?;
    let home = signer.home();
    let addr = signer.addr().to_string();
    let cli = Cli::new(countersign, home.root());
    let mut approver = signer_client::connect(home, &addr, Role::Approver)
        .await
        .map_err(|e| e.to_string())?;
    let files = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = files.path().canonicalize().map_err(|e| e.to_string())?;
    std::fs::write(root.join("readme.txt"), "hello\n").map_err(|e| e.to_string())?;
    let gateway = format!(
        "decision_wait_secs = 0\n\n[[upstream]]\nname = \"files\"\n[upstream.stdio]\nprogram = {:?}\nargs = [{:?}, {:?}]\n[upstream.tools]\nread_text_file = \"allow\"\nwrite_file = \"approve\"\n",
        node.display().to_string(),
        server.display().to_string(),
        root.display().to_string()
    );
    std::fs::write(home.root().join("gateway.toml"), gateway).map_err(|e| e.to_string())?;
    // Pinning is a person's act: proposed, approved, executed.
    let (_, proposed) = cli
        .run(
            &[
                "--json",
                "gateway",
                "tools",
                "--accept",
                "files/read_text_file",
                "--accept",
                "files/write_file",
            ],
            "",
        )
        .await?;
    let pin_id =
        serde_json::from_str::<serde_json::Value>(&proposed).map_err(|e| e.to_string())?["id"]
            .as_str()
            .ok_or(format!("no proposal: {proposed}"))?
            .to_owned();
    approver
        .decide(DecideRequest {
            proposal_id: pin_id.clone(),
            approve: true,
            delivery: Delivery::Handoff.into(),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    cli.run(&["exec", &pin_id, "--handoff"], "").await?;

    let (url, _pg, _dir) = fresh_database("sqlite").await;
    let ledger = Ledger::open(&url).await.map_err(|e| e.to_string())?;
    let raw = RawDb::open(&url).await;
    let mut commits = prepare(fx, &ledger, 95_000_000, n + WARM_UP).await;

    let mut direct = Mcp::start({
        let mut command = Command::new(&node);
        command.arg(&server).arg(&root);
        command
    })
    .await?;
    let mut through = cli.mcp().await?;
    let read = json!({"path": root.join("readme.txt")});

    println!(
        "## The MCP gateway ({n} iterations after {WARM_UP} warm-up, each figure beside its floor)"
    );
    let started = Instant::now();
    let mut samples: std::collections::BTreeMap<&str, Vec<Duration>> = Default::default();
    for i in 0..WARM_UP + n {
        let keep = i >= WARM_UP;
        let mut add = |name, took| {
            if keep {
                samples.entry(name).or_default().push(took);
            }
        };
        let t = Instant::now();
        direct.call_result("read_text_file", read.clone()).await?;
        add(DIRECT_READ, t.elapsed());
        let t = Instant::now();
        through
            .call_result("files__read_text_file", read.clone())
            .await?;
        add(GATEWAY_READ, t.elapsed());
        let write = json!({"path": root.join(format!("direct-{i}.txt")), "content": "x"});
        let t = Instant::now();
        direct.call_result("write_file", write).await?;
        add(DIRECT_WRITE, t.elapsed());
        let t = Instant::now();
        let tools = direct.list_tools().await?;
        if tools == 0 {
            return Err("the upstream listed no tools".into());
        }
        add(DIRECT_LIST, t.elapsed());
        let (id, proof) = commits.pop().ok_or("out of prepared proposals")?;
        let t = Instant::now();
        raw.consume(id.into(), &proof).await;
        add(COMMIT, t.elapsed());

        // The same MCP head executing a builtin through the same handoff:
        // what an approved execution costs before any upstream is involved.
        let builtin = json!({"arguments": {"name": format!("gw-{i}"), "cron": "0 3 * * *"}});
        let took = executed(
            &mut through,
            &mut approver,
            "propose_schedule_create",
            builtin,
        )
        .await?;
        add(BUILTIN_EXECUTE, took);
        let write = json!({"path": root.join(format!("gated-{i}.txt")), "content": "x"});
        let took = executed(&mut through, &mut approver, "files__write_file", write).await?;
        add(GATEWAY_EXECUTE, took);
    }
    let elapsed = started.elapsed();
    direct.stop().await;
    through.stop().await;
    report(&samples, n, elapsed);
    Ok(())
}

/// Propose through `tool` of the head `through`, approve for a handoff,
/// and time `execute_approved`, which must apply.
async fn executed(
    through: &mut Mcp,
    approver: &mut SignerClient<Channel>,
    tool: &str,
    arguments: serde_json::Value,
) -> Result<Duration, String> {
    let proposed = through.call(tool, arguments).await?;
    let id = proposed["id"]
        .as_str()
        .ok_or(format!("no id: {proposed}"))?
        .to_string();
    approver
        .decide(DecideRequest {
            proposal_id: id.clone(),
            approve: true,
            delivery: Delivery::Handoff.into(),
            ..Default::default()
        })
        .await
        .map_err(|e| e.to_string())?;
    let t = Instant::now();
    let done = through
        .call("execute_approved", json!({"proposal_id": id}))
        .await?;
    let took = t.elapsed();
    if done["applied"] != true {
        return Err(format!(
            "{tool}: the approved proposal did not apply: {done}"
        ));
    }
    Ok(took)
}

fn pct(samples: &[Duration], q: f64) -> Duration {
    let mut v = samples.to_vec();
    v.sort_unstable();
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn report(samples: &std::collections::BTreeMap<&str, Vec<Duration>>, n: usize, elapsed: Duration) {
    let p50 = |name| {
        pct(
            samples.get(name).map(Vec::as_slice).unwrap_or_default(),
            0.5,
        )
    };
    let p99 = |name| {
        pct(
            samples.get(name).map(Vec::as_slice).unwrap_or_default(),
            0.99,
        )
    };
    println!("{:<40} {:>12} {:>12}", "what", "p50", "p99");
    for name in [
        DIRECT_READ,
        GATEWAY_READ,
        DIRECT_WRITE,
        DIRECT_LIST,
        COMMIT,
        BUILTIN_EXECUTE,
        GATEWAY_EXECUTE,
    ] {
        println!("{name:<40} {:>12} {:>12}", ms(p50(name)), ms(p99(name)));
    }
    println!("({n} iterations in {elapsed:.1?}; p99 is the nearest-rank percentile)");
    println!("Targets:");
    let added = p50(GATEWAY_READ).saturating_sub(p50(DIRECT_READ));
    println!(
        "  {GATEWAY_READ}: adds {} p50 over the direct call (target <= 1 ms) {}",
        ms(added),
        verdict(added <= Duration::from_millis(1))
    );
    let floor = p50(DIRECT_WRITE) + p50(DIRECT_LIST) + 2 * p50(COMMIT);
    let added = p50(GATEWAY_EXECUTE).saturating_sub(floor);
    println!(
        "  {GATEWAY_EXECUTE}: adds {} p50 over its floor, the direct call + a fresh tools/list + two commits = {} (target <= 1 ms) {}",
        ms(added),
        ms(floor),
        verdict(added <= Duration::from_millis(1))
    );
    // Not a target: where the time goes. A builtin's execution is one
    // transaction after the handoff; a gated call adds the upstream's
    // tools/list (before anything is consumed), the call, and a second
    // (completion) commit.
    let beyond = p50(GATEWAY_EXECUTE)
        .saturating_sub(p50(BUILTIN_EXECUTE) + p50(DIRECT_WRITE) + p50(DIRECT_LIST) + p50(COMMIT));
    println!(
        "  (breakdown: {} p50 beyond a builtin's execution + the direct call + one tools/list + one commit)",
        ms(beyond)
    );
}
