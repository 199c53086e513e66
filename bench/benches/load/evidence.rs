//! Verifying an evidence bundle as an auditor does: one whole
//! `countersign evidence verify` process per bundle (start, read the
//! bundle, the trust policy and the key set, the nineteen checks, the
//! answer), beside its floor in the same loop: `countersign --version`
//! (the same binary's start, which reads and checks nothing). Target: p50
//! at most 50 ms (issue 49). The bundles are the independent Python
//! implementation's (tests/vectors/evidence): a passkey approval and a
//! quorum approval.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::heads::binary;
use super::latency::{Samples, ms};
use super::{Options, verdict};

/// Iterations before the measured ones.
const WARM_UP: usize = 5;

/// The target: p50 of one verification process.
const TARGET: Duration = Duration::from_millis(50);

/// How long `bin args` took; an error if it did not succeed.
fn timed(bin: &Path, args: &[&str]) -> Result<Duration, String> {
    let start = Instant::now();
    let out = Command::new(bin)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let took = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "{args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(took)
}

pub(super) fn run(opts: &Options) -> Result<(), String> {
    let n = opts.latency_n.unwrap_or(opts.n(300)).max(1);
    let bin = binary("countersign")?;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/evidence");
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let (policy, keys) = (path("policy.txt"), path("keys.json"));
    let mut samples = Samples::default();
    for i in 0..n + WARM_UP {
        let keep = i >= WARM_UP;
        samples.add("floor", timed(&bin, &["--version"])?, keep);
        for (name, bundle) in [("passkey", "bundle.json"), ("quorum", "quorum.json")] {
            let bundle = path(bundle);
            let args = [
                "evidence", "verify", &bundle, "--trust", &policy, "--keys", &keys,
            ];
            samples.add(name, timed(&bin, &args)?, keep);
        }
    }
    println!("\n== evidence verify, one process per bundle ({n} iterations) ==");
    let floor = samples.p50("floor");
    println!(
        "floor: `countersign --version` p50 {} p99 {}",
        ms(floor),
        ms(samples.p99("floor"))
    );
    for name in ["passkey", "quorum"] {
        let p50 = samples.p50(name);
        println!(
            "{name} bundle: p50 {} p99 {} ({} over the floor); target p50 at most {}: {}",
            ms(p50),
            ms(samples.p99(name)),
            ms(p50.saturating_sub(floor)),
            ms(TARGET),
            verdict(p50 <= TARGET)
        );
    }
    Ok(())
}
