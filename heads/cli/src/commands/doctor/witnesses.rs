//! The doctor's witnessing check: with `[tlog] policy`, that the policy
//! file reads and parses and each witness's URL is usable (https, or plain
//! http to a loopback IP address), as `countersign witness serve` would
//! find it. Nothing is printed without `[tlog]`; no witness is contacted
//! and the ledger is not read (`countersign witness status` shows each
//! witness's state, a halted one included).

use countersign_identity::Config;

use super::report::Check;

/// One check, or none without `[tlog]`.
pub(super) fn check_witnesses(config: &Config) -> Option<Check> {
    let tlog = config.tlog.as_ref()?;
    Some(match countersign_witness::policy_targets(tlog) {
        Ok(targets) => {
            let names: Vec<&str> = targets.iter().map(|t| t.name.as_str()).collect();
            Check::ok(
                "witnesses",
                format!(
                    "{} in {} ({}); `countersign witness status` shows what each cosigned",
                    targets.len(),
                    tlog.policy.display(),
                    names.join(", ")
                ),
            )
        }
        Err(e) => Check::fail(
            "witnesses",
            e.to_string(),
            "fix the tlog policy file named by [tlog] policy (docs/audit.md, Witnesses)",
        ),
    })
}
