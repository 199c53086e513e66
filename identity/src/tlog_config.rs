//! `[tlog]`: the transparency log's witnesses. With `policy`, the
//! witnessing client (`countersign-witness`, run by `countersign up` and
//! `countersign witness serve`, never by the signer) sends each signed
//! checkpoint to the witnesses of that c2sp.org/tlog-policy file and
//! stores their cosignatures. Off unless the section is there.
//!
//! This module only reads the section's shape, bounds its numbers and
//! anchors its paths to the home; the client parses the policy file and
//! the witness URLs, and refuses what it cannot use, when it starts.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How long a witness may stay unreachable before the gap is recorded as
/// an event, unless configured: 5 minutes.
pub const DEFAULT_WITNESS_GAP_SECS: u64 = 300;
/// How often the client looks for a new checkpoint and retries, unless
/// configured, milliseconds.
pub const DEFAULT_WITNESS_POLL_MS: u64 = 5_000;
/// One add-checkpoint exchange's bound, unless configured, seconds.
pub const DEFAULT_WITNESS_TIMEOUT_SECS: u64 = 10;

/// The resolved `[tlog]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlogConfig {
    /// `policy`: the c2sp.org/tlog-policy file naming the witnesses (with
    /// their submission URLs) and the quorum; absolute after resolution.
    pub policy: PathBuf,
    /// `trust_roots`: the PEM bundle of the CAs trusted for https witness
    /// URLs (no system roots are used unless this names them).
    pub trust_roots: Option<PathBuf>,
    /// `gap_secs` (1..=86400): how long a witness may stay unreachable
    /// before a `tlog_witness_gap` event is recorded.
    pub gap_secs: u64,
    /// `poll_ms` (10..=600000): how often the client looks for a new
    /// checkpoint and retries a witness.
    pub poll_ms: u64,
    /// `timeout_secs` (1..=300): the bound on one add-checkpoint exchange.
    pub timeout_secs: u64,
}

/// `[tlog]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TlogSection {
    policy: Option<PathBuf>,
    trust_roots: Option<PathBuf>,
    gap_secs: Option<u64>,
    poll_ms: Option<u64>,
    timeout_secs: Option<u64>,
}

/// The section, checked; `None` without `policy` (no witnessing).
pub(crate) fn tlog_config(section: TlogSection, root: &Path) -> Result<Option<TlogConfig>, String> {
    let anchor = |p: PathBuf| if p.is_absolute() { p } else { root.join(p) };
    let Some(policy) = section.policy else {
        if section.trust_roots.is_some()
            || section.gap_secs.is_some()
            || section.poll_ms.is_some()
            || section.timeout_secs.is_some()
        {
            return Err("tlog: witness settings without tlog.policy".into());
        }
        return Ok(None);
    };
    let bounded = |key: &str, value: Option<u64>, default: u64, max: u64, min: u64| {
        let value = value.unwrap_or(default);
        if (min..=max).contains(&value) {
            Ok(value)
        } else {
            Err(format!("tlog.{key} must be {min}..={max}"))
        }
    };
    Ok(Some(TlogConfig {
        policy: anchor(policy),
        trust_roots: section.trust_roots.map(anchor),
        gap_secs: bounded(
            "gap_secs",
            section.gap_secs,
            DEFAULT_WITNESS_GAP_SECS,
            86_400,
            1,
        )?,
        poll_ms: bounded(
            "poll_ms",
            section.poll_ms,
            DEFAULT_WITNESS_POLL_MS,
            600_000,
            10,
        )?,
        timeout_secs: bounded(
            "timeout_secs",
            section.timeout_secs,
            DEFAULT_WITNESS_TIMEOUT_SECS,
            300,
            1,
        )?,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn parse(text: &str) -> Result<Option<TlogConfig>, String> {
        let section: TlogSection = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        tlog_config(section, Path::new("/home/x"))
    }

    #[test]
    fn defaults_and_anchors_the_policy() {
        assert_eq!(parse("").unwrap(), None);
        assert_eq!(
            parse("policy = \"policy.txt\"").unwrap(),
            Some(TlogConfig {
                policy: "/home/x/policy.txt".into(),
                trust_roots: None,
                gap_secs: 300,
                poll_ms: 5_000,
                timeout_secs: 10,
            })
        );
    }

    #[test]
    fn refuses_out_of_range_numbers_and_settings_without_a_policy() {
        assert_eq!(
            parse("policy = \"/p\"\ngap_secs = 0"),
            Err("tlog.gap_secs must be 1..=86400".into())
        );
        assert_eq!(
            parse("policy = \"/p\"\npoll_ms = 5"),
            Err("tlog.poll_ms must be 10..=600000".into())
        );
        assert_eq!(
            parse("gap_secs = 5"),
            Err("tlog: witness settings without tlog.policy".into())
        );
        assert!(parse("policy = \"/p\"\nwitness = 1").is_err());
    }
}
