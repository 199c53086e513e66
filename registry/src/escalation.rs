//! An operation's escalation: if no one decided a proposal of it within a
//! first delay, the notification goes again, to the next approvers or
//! channels the operator named.
//!
//! `escalation = { after_secs = 600, channels = ["smtp"], approvers = ["carol"] }`
//! in an `[[operation]]` entry. Checked here at load: the delay is
//! 1..=604800 s and shorter than the operation's own decision window when
//! it sets one, each channel is one the notify process knows, none twice,
//! each approver a valid approver name, none twice, and at least one
//! channel or approver. This module decides only what is configured; the
//! signer schedules the escalation and the notify process delivers it.
//! Like the decision window, it is not in the contract revision: it
//! changes who is told, never what a proof binds.

use std::collections::BTreeSet;

use countersign_verifier::ApproverName;
use serde::Deserialize;

use crate::definition::DECISION_WINDOW_CAP_SECS;
use crate::quorum::approver_names;

/// The notify process's channels an escalation may name.
pub const ESCALATION_CHANNELS: &[&str] = &["webhook", "smtp", "desktop", "push"];

/// `escalation = { after_secs, channels, approvers }` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawEscalation {
    after_secs: u64,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    approvers: Vec<String>,
}

/// A checked escalation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    /// Seconds after the proposal with no decision before it escalates.
    pub after_secs: u64,
    /// The channels it goes to (of [`ESCALATION_CHANNELS`]), in the order
    /// written; empty: every channel the notify process has.
    pub channels: Vec<String>,
    /// The approvers whose paired devices a push of it goes to, sorted;
    /// empty: every device that a first push would reach.
    pub approvers: Vec<ApproverName>,
}

impl RawEscalation {
    /// Checks the entry against the operation's decision window, if it
    /// sets one; the error is the reason (the caller names the field).
    pub(crate) fn build(&self, window_secs: Option<u64>) -> Result<Escalation, String> {
        if !(1..=DECISION_WINDOW_CAP_SECS).contains(&self.after_secs) {
            return Err(format!(
                "after_secs = {} is outside 1..={DECISION_WINDOW_CAP_SECS}",
                self.after_secs
            ));
        }
        if let Some(window) = window_secs
            && self.after_secs >= window
        {
            return Err(format!(
                "after_secs = {} is not shorter than the decision window ({window} s): it would escalate a proposal no one can decide any more",
                self.after_secs
            ));
        }
        if self.channels.is_empty() && self.approvers.is_empty() {
            return Err("name at least one channel or approver to escalate to".into());
        }
        let mut seen = BTreeSet::new();
        for channel in &self.channels {
            if !ESCALATION_CHANNELS.contains(&channel.as_str()) {
                return Err(format!(
                    "channel {channel:?} is not one of {}",
                    ESCALATION_CHANNELS.join(", ")
                ));
            }
            if !seen.insert(channel.as_str()) {
                return Err(format!("channel {channel:?} is listed twice"));
            }
        }
        Ok(Escalation {
            after_secs: self.after_secs,
            channels: self.channels.clone(),
            approvers: approver_names(&self.approvers)?.into_iter().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn raw(after_secs: u64, channels: &[&str], approvers: &[&str]) -> RawEscalation {
        RawEscalation {
            after_secs,
            channels: channels.iter().map(|c| (*c).to_owned()).collect(),
            approvers: approvers.iter().map(|a| (*a).to_owned()).collect(),
        }
    }

    #[test]
    fn builds_a_checked_escalation_with_sorted_approvers() {
        let built = raw(600, &["smtp", "push"], &["carol", "bob"])
            .build(Some(3600))
            .unwrap();
        assert_eq!(built.after_secs, 600);
        assert_eq!(built.channels, ["smtp", "push"]);
        let names: Vec<&str> = built.approvers.iter().map(ApproverName::as_str).collect();
        assert_eq!(names, ["bob", "carol"]);
        assert!(raw(1, &[], &["bob"]).build(None).is_ok());
    }

    #[test]
    fn refuses_what_could_never_reach_anyone_in_time() {
        for (escalation, window, why) in [
            (
                raw(0, &["smtp"], &[]),
                None,
                "after_secs = 0 is outside 1..=604800",
            ),
            (raw(604_801, &["smtp"], &[]), None, "outside 1..=604800"),
            (
                raw(3600, &["smtp"], &[]),
                Some(3600),
                "not shorter than the decision window (3600 s)",
            ),
            (raw(60, &[], &[]), None, "at least one channel or approver"),
            (
                raw(60, &["sms"], &[]),
                None,
                "channel \"sms\" is not one of webhook, smtp, desktop, push",
            ),
            (
                raw(60, &["smtp", "smtp"], &[]),
                None,
                "channel \"smtp\" is listed twice",
            ),
            (
                raw(60, &[], &["Bob"]),
                None,
                "approver \"Bob\" is not an approver name",
            ),
            (
                raw(60, &[], &["bob", "bob"]),
                None,
                "approver \"bob\" is listed twice",
            ),
        ] {
            let refused = escalation.build(window).unwrap_err();
            assert!(refused.contains(why), "{refused}");
        }
    }
}
