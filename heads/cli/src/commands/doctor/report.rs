//! What `countersign doctor` reports: one [`Check`] per thing checked, and
//! the two renderings (one line each for people, one JSON document for
//! programs). The verdicts that need no I/O live here too, so that they are
//! tested without an installation.

use countersign_registry::terminal_safe;
use serde_json::{Value, json};

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Nothing to do.
    Ok,
    /// Works now, but worth a look (expiring soon, not running, not comparable).
    Warn,
    /// Something will fail: the command exits non-zero.
    Fail,
}

impl Status {
    /// The word a person reads.
    fn text(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
        }
    }

    /// The JSON value (lowercase, as every other value the CLI prints).
    fn json(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// Which check (`signer`, `certificate head`, ...).
    pub(crate) name: String,
    /// Its verdict.
    pub(crate) status: Status,
    /// What was found, precisely.
    pub(crate) detail: String,
    /// What to do about it, for a warning or a failure.
    pub(crate) fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(name: impl Into<String>, detail: impl Into<String>) -> Check {
        Check {
            name: name.into(),
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn warn(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: Option<String>,
    ) -> Check {
        Check {
            name: name.into(),
            status: Status::Warn,
            detail: detail.into(),
            fix,
        }
    }

    pub(crate) fn fail(
        name: impl Into<String>,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            name: name.into(),
            status: Status::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Whether no check failed.
pub(crate) fn all_passed(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.status != Status::Fail)
}

/// One line per check: status, name, detail and, if any, the fix. Every
/// value is made terminal-safe (details quote files and servers).
pub(crate) fn text(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        out.push_str(&format!(
            "{:<4}  {:<width$}  {}",
            c.status.text(),
            terminal_safe(&c.name),
            terminal_safe(&c.detail)
        ));
        if let Some(fix) = &c.fix {
            out.push_str(&format!("; fix: {}", terminal_safe(fix)));
        }
        out.push('\n');
    }
    out
}

/// The one `--json` document: `{"ok", "checks": [{"name", "status", "detail", "fix"?}]}`.
pub(crate) fn json(checks: &[Check]) -> Value {
    let ok = all_passed(checks);
    let checks: Vec<Value> = checks
        .iter()
        .map(|c| {
            let mut doc = json!({"name": c.name, "status": c.status.json(), "detail": c.detail});
            if let (Some(fix), Some(map)) = (&c.fix, doc.as_object_mut()) {
                map.insert("fix".into(), Value::String(fix.clone()));
            }
            doc
        })
        .collect();
    json!({"ok": ok, "checks": checks})
}

/// A PASERK v4 public key id: `k4.pid.` and 44 base64url characters (the
/// 33-byte BLAKE2b digest, unpadded).
pub(crate) fn is_paserk_pid(id: &str) -> bool {
    id.strip_prefix("k4.pid.").is_some_and(|rest| {
        rest.len() == 44
            && rest
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// The key-set check: the ids the signer publishes against the ids the
/// gate derived from the published keys (what this head verifies with).
pub(crate) fn key_sets(published: &[String], gate: &[String]) -> Check {
    const NAME: &str = "key sets";
    if published.is_empty() {
        return Check::fail(
            NAME,
            "the signer publishes no verifying key",
            "check the signer's key (`countersign-signer` logs its key id at start)",
        );
    }
    if let Some(bad) = published.iter().find(|id| !is_paserk_pid(id)) {
        return Check::fail(
            NAME,
            format!("the signer publishes a malformed key id {bad:?} (expected k4.pid.…)"),
            "upgrade the signer and this head to the same countersign release",
        );
    }
    let (mut a, mut b) = (published.to_vec(), gate.to_vec());
    a.sort();
    b.sort();
    if a != b {
        return Check::fail(
            NAME,
            format!(
                "the signer publishes {} but this head would verify with {}",
                a.join(", "),
                b.join(", ")
            ),
            "upgrade the signer and this head to the same countersign release",
        );
    }
    Check::ok(
        NAME,
        format!("this head verifies with the signer's {} key(s)", a.len()),
    )
}

/// The clock check from a measured skew (the reference clock minus ours).
pub(crate) fn clock_skew(source: &str, skew_secs: f64, allowance_secs: i64) -> Check {
    const NAME: &str = "clock skew";
    let allowance = allowance_secs as f64;
    if skew_secs.abs() > allowance {
        Check::fail(
            NAME,
            format!(
                "{source} is {skew_secs:+.1} s from this host's clock, beyond the verifier's {allowance_secs} s allowance"
            ),
            "synchronise the clocks (NTP, `timedatectl set-ntp true`)",
        )
    } else {
        Check::ok(
            NAME,
            format!(
                "{source} is {skew_secs:+.1} s from this host's clock (allowance {allowance_secs} s)"
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const PID: &str = "k4.pid.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

    #[test]
    fn recognises_a_paserk_pid() {
        assert!(is_paserk_pid(PID));
        assert!(!is_paserk_pid("k4.pid."));
        assert!(!is_paserk_pid(&PID.replace("k4.pid", "k3.pid")));
        assert!(!is_paserk_pid(&format!("{PID}A")));
        assert!(!is_paserk_pid(&PID.replace('A', "+")));
    }

    #[test]
    fn key_sets_fail_when_empty_malformed_or_different() {
        assert_eq!(key_sets(&[], &[]).status, Status::Fail);
        assert_eq!(
            key_sets(&["k4.pid.x".into()], &["k4.pid.x".into()]).status,
            Status::Fail
        );
        let other = PID.replace('A', "B");
        assert_eq!(
            key_sets(&[PID.into()], std::slice::from_ref(&other)).status,
            Status::Fail
        );
        assert_eq!(
            key_sets(&[PID.into(), other.clone()], &[other, PID.into()]).status,
            Status::Ok
        );
    }

    #[test]
    fn clock_skew_fails_beyond_the_allowance_either_way() {
        assert_eq!(clock_skew("db", 59.9, 60).status, Status::Ok);
        assert_eq!(clock_skew("db", -60.0, 60).status, Status::Ok);
        assert_eq!(clock_skew("db", 61.0, 60).status, Status::Fail);
        assert_eq!(clock_skew("db", -75.0, 60).status, Status::Fail);
    }

    #[test]
    fn renders_one_line_per_check_and_one_document() {
        let checks = vec![
            Check::ok("home", "fine"),
            Check::fail("signer", "down\u{1b}[2J", "run `countersign up`"),
        ];
        let text = text(&checks);
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with("ok    home    fine\n"));
        assert!(text.contains("FAIL  signer  down\\u{1b}[2J; fix: run `countersign up`"));
        let doc = json(&checks);
        assert_eq!(doc["ok"], false);
        assert_eq!(
            doc["checks"][0],
            json!({"name": "home", "status": "ok", "detail": "fine"})
        );
        assert_eq!(doc["checks"][1]["fix"], "run `countersign up`");
        assert!(!all_passed(&checks));
    }
}
