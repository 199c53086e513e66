//! Whether the fact tables and the event log tell the same story: every
//! proposal, decision, issuance, revocation, consumed nonce, intent,
//! applied effect and completion has exactly its chained event (key
//! rotations and retirements have no row and need only name their key; a
//! proof re-issued for reconcile has none and names its nonce and hash), every such
//! event has its row, and the state store holds exactly what replaying the
//! applied builtin effects, in chain order, produces.
//!
//! Quorum decisions likewise: every approver's approval has its
//! `quorum_approved` event and every quorum denial its `denied` event naming
//! the approver, every approver's stored passkey assertion the
//! `quorum_approved` event naming its credential; and an issued quorum
//! proposal's provenance names exactly the approvers recorded as approving
//! it, in order.
//!
//! Passkeys likewise: every enrolled credential has its `passkey_enrolled`
//! event (which also fixes its principal, its authority and the SHA-256 of
//! its public key, so a key swapped in the row is caught), every removal
//! its `passkey_removed` event, every assertion the enrolment, removal or
//! `approved` event that names its credential, and every decision
//! assertion an issuance. Rules too: every version has its `rule_created`,
//! `rule_revised` or `rule_revoked` event (with its hash, limits and
//! expiry, so a budget raised in the row is caught), and every use the
//! `approved` event that names the rule version. Verifying the assertions' signatures is the
//! audit's next step, not this module's.
//!
//! Backend-independent: the backends read the rows (in the same snapshot
//! as the chain walk) and hand them here. Owns no I/O. What it catches: a
//! row written, replaced or removed without its event (the head role's
//! direct writes on PostgreSQL, `INSERT OR REPLACE` on SQLite), an event
//! appended without its row, and a state value no applied effect explains.
//! What it cannot catch: a writer who adds both a row and a consistent
//! event (on PostgreSQL the head role cannot consume without the proof,
//! which the `consumed_nonces_need_proof` trigger checks).

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::chain::RawEvent;
use crate::passkeys::{ENROLMENT_CODE, SIGNER_ADMIN};
use crate::schedule::{self, Change};

/// One fact as a comparable line (`kind proposal [nonce] [detail]`), with
/// how many times it was seen.
type Tally = BTreeMap<String, u32>;

/// The rows of the fact tables the comparison needs.
#[derive(Default)]
pub(crate) struct FactRows {
    /// `proposals.id`.
    pub(crate) proposals: Vec<String>,
    /// `decisions (proposal_id, decision)`.
    pub(crate) decisions: Vec<(String, String)>,
    /// `issuances (proposal_id, proof_sha256)`.
    pub(crate) issuances: Vec<(String, String)>,
    /// `revocations.proposal_id`.
    pub(crate) revocations: Vec<String>,
    /// `consumed_nonces (proposal_id, nonce)`.
    pub(crate) consumed: Vec<(String, String)>,
    /// `intents`, by nonce.
    pub(crate) intents: Vec<IntentRow>,
    /// `effect_applied (nonce, effect)`.
    pub(crate) applied: Vec<(String, String)>,
    /// `completions (proposal_id, nonce, status)`.
    pub(crate) completions: Vec<(String, String, String)>,
    /// `state (principal, namespace, key, value)`.
    pub(crate) state: Vec<(String, String, String, String)>,
    /// `passkeys`.
    pub(crate) passkeys: Vec<PasskeyRow>,
    /// `passkey_removals (credential_id, authorized_by)`.
    pub(crate) passkey_removals: Vec<(String, String)>,
    /// `passkey_assertions (purpose, subject, credential_id)`.
    pub(crate) passkey_assertions: Vec<(String, String, String)>,
    /// `quorum_decisions (proposal_id, approver, decision)`, by proposal and seq.
    pub(crate) quorum_decisions: Vec<(String, String, String)>,
    /// `issuances (proposal_id, provenance)`.
    pub(crate) provenances: Vec<(String, String)>,
    /// `quorum_passkey_assertions (proposal_id, approver, credential_id)`.
    pub(crate) quorum_passkeys: Vec<(String, String, String)>,
    /// `rules`, every version, as the line its event makes
    /// ([`rule_version_line`]).
    pub(crate) rule_versions: Vec<String>,
    /// `rule_uses (proposal_id, rule_id, version)`.
    pub(crate) rule_uses: Vec<(String, String, i64)>,
    /// `rules (proposal_id, id)` of rules created by approving a proposal.
    pub(crate) rules_from_proposals: Vec<(String, String)>,
    /// `resigned_proofs`, each as the line its event makes: `resigned
    /// <proposal> <nonce> <hash> <key> <issued hash> <issued key>`.
    pub(crate) resigned: Vec<String>,
}

/// The fact a rule version states, as one comparable line: its event's
/// kind (from the version and status), id, version, principal, status,
/// definition hash, limits and expiry.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rule_version_line(
    id: &str,
    version: i64,
    principal: &str,
    status: &str,
    definition_sha256: &str,
    max_uses: i64,
    per_hour: i64,
    expires_at: &str,
) -> String {
    let kind = match (version, status) {
        (_, "revoked") => "rule_revoked",
        (1, _) => "rule_created",
        _ => "rule_revised",
    };
    format!(
        "{kind} {id} {version} {principal} {status} {definition_sha256} {max_uses} {per_hour} {expires_at}"
    )
}

/// The columns of a `passkeys` row the comparison needs.
pub(crate) struct PasskeyRow {
    pub(crate) credential_id: String,
    pub(crate) principal: String,
    pub(crate) authorized_by: String,
    pub(crate) public_key: String,
}

/// SHA-256 hex of a stored public key's text, as a `passkey_enrolled`
/// event records it.
pub(crate) fn public_key_sha256(public_key: &str) -> String {
    hex::encode(Sha256::digest(public_key.as_bytes()))
}

/// The columns of an `intents` row the comparison needs.
pub(crate) struct IntentRow {
    pub(crate) proposal_id: String,
    pub(crate) nonce: String,
    pub(crate) principal: String,
    pub(crate) proof_sha256: String,
    pub(crate) arguments_json: String,
}

/// The event side, collected row by row during the chain walk.
#[derive(Default)]
pub(crate) struct EventFacts {
    tally: Tally,
    /// Nonces of `effect_applied` events, in chain order, with the effect.
    applied_in_order: Vec<(String, String)>,
    /// The first event whose details lack what its kind promises.
    unreadable: Option<String>,
}

impl EventFacts {
    /// Take the facts `event` states.
    pub(crate) fn push(&mut self, event: &RawEvent) {
        if self.unreadable.is_some() {
            return;
        }
        let details: Value = serde_json::from_str(&event.details).unwrap_or(Value::Null);
        let field = |name: &str| {
            details
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let pid = event.proposal_id.clone().unwrap_or_default();
        let mut seen = |line: String| *self.tally.entry(line).or_default() += 1;
        let complete = match event.kind.as_str() {
            "proposed" => {
                seen(format!("proposed {pid}"));
                true
            }
            "denied" | "withdrawn" | "revoked" => {
                seen(format!("{} {pid}", event.kind));
                // Since schema version 5: a quorum approver's denial.
                if let Some(approver) = field("approver") {
                    seen(format!("quorum deny {pid} {approver}"));
                }
                true
            }
            "quorum_approved" => match field("approver") {
                Some(approver) => {
                    seen(format!("quorum approve {pid} {approver}"));
                    if let Some(credential) = field("passkey") {
                        seen(format!("quorum_passkey {pid} {approver} {credential}"));
                    }
                    true
                }
                None => false,
            },
            // Since schema version 4: a person's approval of rule.create,
            // which issued no proof and created the rule it names.
            "approved" if field("proof_sha256").is_none() => match field("created_rule") {
                Some(rule) => {
                    seen(format!("approved {pid}"));
                    seen(format!("rule_from {pid} {rule}"));
                    true
                }
                None => false,
            },
            "approved" => match field("proof_sha256") {
                Some(proof) => {
                    seen(format!("approved {pid}"));
                    seen(format!("issued {pid} {proof}"));
                    // Since schema version 3: the passkey that authorized it.
                    if let Some(credential) = field("passkey") {
                        seen(format!("passkey_assertion decision {pid} {credential}"));
                    }
                    // Since schema version 4: the rule version that approved it.
                    if let Some(rule) = field("rule") {
                        let version = details.get("rule_version").and_then(Value::as_i64);
                        seen(format!("rule_use {pid} {rule} {}", version.unwrap_or(-1)));
                    }
                    true
                }
                None => false,
            },
            "rule_created" | "rule_revised" | "rule_revoked" => {
                let number = |name: &str| details.get(name).and_then(Value::as_i64);
                match (
                    field("rule"),
                    number("version"),
                    field("principal"),
                    field("status"),
                    field("definition_sha256"),
                    (number("max_uses"), number("per_hour")),
                    field("expires_at"),
                ) {
                    (
                        Some(rule),
                        Some(version),
                        Some(principal),
                        Some(status),
                        Some(sha),
                        (Some(max_uses), Some(per_hour)),
                        Some(expires_at),
                    ) => {
                        let line = rule_version_line(
                            &rule,
                            version,
                            &principal,
                            &status,
                            &sha,
                            max_uses,
                            per_hour,
                            &expires_at,
                        );
                        // The kind the row implies must be the event's own.
                        if line.starts_with(&format!("{} ", event.kind)) {
                            seen(line);
                        } else {
                            seen(format!("{} {line}", event.kind));
                        }
                        true
                    }
                    _ => false,
                }
            }
            "passkey_enrolled" => match (
                field("credential_id"),
                field("principal"),
                field("authorized_by"),
                field("public_key_sha256"),
            ) {
                (Some(credential), Some(principal), Some(authority), Some(key)) => {
                    if authority != ENROLMENT_CODE {
                        seen(format!("passkey_assertion enrol {credential} {authority}"));
                    }
                    seen(format!(
                        "passkey_enrolled {credential} {principal} {authority} {key}"
                    ));
                    true
                }
                _ => false,
            },
            "passkey_removed" => match (field("credential_id"), field("authorized_by")) {
                (Some(credential), Some(authority)) => {
                    if authority != SIGNER_ADMIN {
                        seen(format!("passkey_assertion remove {credential} {authority}"));
                    }
                    seen(format!("passkey_removed {credential} {authority}"));
                    true
                }
                _ => false,
            },
            "intent" => match (field("nonce"), field("proof_sha256")) {
                (Some(nonce), Some(proof)) => {
                    seen(format!("consumed {pid} {nonce}"));
                    seen(format!("intent {pid} {nonce} {proof}"));
                    true
                }
                _ => false,
            },
            "effect_applied" => match (field("nonce"), field("effect")) {
                (Some(nonce), Some(effect)) => {
                    seen(format!("applied {nonce} {effect}"));
                    self.applied_in_order.push((nonce, effect));
                    true
                }
                _ => false,
            },
            "completed" | "resolved" => match (field("nonce"), field("status")) {
                (Some(nonce), Some(status)) => {
                    seen(format!("completed {pid} {nonce} {status}"));
                    true
                }
                _ => false,
            },
            // A key set change has no fact row (the signer's key index is
            // the record); the event must name the key.
            "key_rotated" | "key_retired" => field("key_id").is_some(),
            // The witnessing client's records (`crate::witness`): the state
            // row is not a fact (it moves); the event names the witness.
            crate::witness::WITNESS_GAP_EVENT
            | crate::witness::WITNESS_BACK_EVENT
            | crate::witness::WITNESS_ROLLBACK_EVENT => {
                field("witness").is_some() && field("key").is_some()
            }
            // A checkpoint has no fact row; the chain walk checks the heads
            // it names.
            "checkpoint" => crate::chain::checkpoint_heads(&details).is_some(),
            // A re-issue for reconcile has no fact row (the ledger keeps no
            // proof); the event must name the nonce and the proof's hash.
            "proof_reissued" => field("nonce").is_some() && field("proof_sha256").is_some(),
            // Since schema version 18: a handoff signed again by another
            // signer; its row in `resigned_proofs`, with the issued proof
            // it stands beside.
            "proof_resigned" => match (
                field("nonce"),
                field("proof_sha256"),
                field("key_id"),
                field("replaces_proof_sha256"),
                field("replaces_key_id"),
            ) {
                (Some(nonce), Some(proof), Some(key), Some(issued), Some(issued_key)) => {
                    seen(format!(
                        "resigned {pid} {nonce} {proof} {key} {issued} {issued_key}"
                    ));
                    true
                }
                _ => false,
            },
            // A direct approval handed off to the proposing session since:
            // no fact row of its own (the issuance is the approval's); the
            // event must name the proof's hash and the delivery.
            "handed_off" => {
                field("proof_sha256").is_some() && field("delivery").as_deref() == Some("handoff")
            }
            other => {
                self.unreadable = Some(format!("event {} has an unknown kind {other:?}", event.id));
                return;
            }
        };
        if !complete {
            self.unreadable = Some(format!(
                "event {} ({}) lacks the details its kind records",
                event.id, event.kind
            ));
        }
    }

    /// The first disagreement between these events and `rows`, if any.
    pub(crate) fn disagreement(&self, rows: &FactRows) -> Option<String> {
        if let Some(problem) = &self.unreadable {
            return Some(problem.clone());
        }
        if let Some(problem) = unissued_decision_assertion(rows) {
            return Some(problem);
        }
        if let Some(problem) = quorum_disagreement(rows) {
            return Some(problem);
        }
        let tables = table_tally(rows);
        for (fact, &count) in &tables {
            let events = self.tally.get(fact).copied().unwrap_or(0);
            if events != count {
                return Some(format!(
                    "the ledger records `{fact}` {count} time(s) but the event log {events}"
                ));
            }
        }
        if let Some(fact) = self.tally.keys().find(|f| !tables.contains_key(*f)) {
            return Some(format!(
                "the event log records `{fact}` but the ledger has no such row"
            ));
        }
        self.state_disagreement(rows)
    }

    /// Replay the applied builtin effects in chain order over an empty
    /// store and compare with the state store.
    fn state_disagreement(&self, rows: &FactRows) -> Option<String> {
        let intents: HashMap<&str, &IntentRow> =
            rows.intents.iter().map(|i| (i.nonce.as_str(), i)).collect();
        let mut expected: BTreeMap<(String, String), Value> = BTreeMap::new();
        for (nonce, effect) in &self.applied_in_order {
            let Some(intent) = intents.get(nonce.as_str()) else {
                return Some(format!("applied effect {nonce} has no intent"));
            };
            let args: Value = match serde_json::from_str(&intent.arguments_json) {
                Ok(args) => args,
                Err(e) => return Some(format!("intent {nonce} has unreadable arguments: {e}")),
            };
            let Ok(key) = schedule::key_of(effect, &args) else {
                return Some(format!(
                    "applied effect {nonce} ({effect}) names no schedule"
                ));
            };
            let slot = (intent.principal.clone(), key);
            let plan = match schedule::plan(effect, &args, expected.get(&slot)) {
                Ok(plan) => plan,
                Err(e) => {
                    return Some(format!(
                        "applied effect {nonce} ({effect}) cannot be replayed: {e}"
                    ));
                }
            };
            match plan.change {
                Change::Put { value, .. } => expected.insert(slot, value),
                Change::Delete { .. } => expected.remove(&slot),
            };
        }
        let mut stored: BTreeMap<(String, String), Value> = BTreeMap::new();
        for (principal, namespace, key, value) in &rows.state {
            if namespace != schedule::NAMESPACE {
                return Some(format!(
                    "state namespace {namespace:?} has no effect that writes it"
                ));
            }
            let Ok(value) = serde_json::from_str::<Value>(value) else {
                return Some(format!("state {key:?} of {principal} is not JSON"));
            };
            stored.insert((principal.clone(), key.clone()), value);
        }
        for ((principal, key), value) in &stored {
            let slot = (principal.clone(), key.clone());
            if expected.get(&slot) != Some(value) {
                return Some(format!(
                    "state {key:?} of {principal} is not what its applied effects produce"
                ));
            }
        }
        expected
            .keys()
            .find(|slot| !stored.contains_key(*slot))
            .map(|(principal, key)| {
                format!(
                    "state {key:?} of {principal} is missing though its applied effects produce it"
                )
            })
    }
}

/// A decision assertion whose proposal has no issuance (the schema's
/// trigger refuses one; an owner can drop the trigger).
fn unissued_decision_assertion(rows: &FactRows) -> Option<String> {
    let issued: std::collections::HashSet<&str> =
        rows.issuances.iter().map(|(pid, _)| pid.as_str()).collect();
    rows.passkey_assertions
        .iter()
        .find(|(purpose, subject, _)| purpose == "decision" && !issued.contains(subject.as_str()))
        .map(|(_, subject, credential)| {
            format!(
                "the passkey assertion of {credential} approves {subject}, which has no issuance"
            )
        })
}

/// An issuance of a quorum proposal whose provenance does not name exactly
/// the approvers recorded as approving it, in order (or a quorum
/// provenance on a proposal without those approvals).
fn quorum_disagreement(rows: &FactRows) -> Option<String> {
    let mut approvers: HashMap<&str, Vec<&str>> = HashMap::new();
    for (pid, approver, decision) in &rows.quorum_decisions {
        if decision == "approve" {
            approvers
                .entry(pid.as_str())
                .or_default()
                .push(approver.as_str());
        }
    }
    for (pid, provenance) in &rows.provenances {
        let named: Option<Vec<&str>> = provenance
            .strip_prefix("human:quorum:")
            .map(|list| list.split(',').collect());
        let recorded = approvers.get(pid.as_str());
        let agrees = match (&named, recorded) {
            (None, None) => true,
            (Some(named), Some(recorded)) => named == recorded,
            _ => false,
        };
        if !agrees {
            return Some(format!(
                "the issuance of {pid} names {provenance:?} but the quorum decisions record {:?}",
                recorded.map(|r| r.join(",")).unwrap_or_default()
            ));
        }
    }
    None
}

/// The facts the tables state, as the lines [`EventFacts`] makes.
fn table_tally(rows: &FactRows) -> Tally {
    let mut tally = Tally::new();
    let mut seen = |line: String| *tally.entry(line).or_default() += 1;
    for pid in &rows.proposals {
        seen(format!("proposed {pid}"));
    }
    for (pid, decision) in &rows.decisions {
        let kind = match decision.as_str() {
            "approve" => "approved",
            "deny" => "denied",
            "withdraw" => "withdrawn",
            other => other,
        };
        seen(format!("{kind} {pid}"));
    }
    for (pid, proof) in &rows.issuances {
        seen(format!("issued {pid} {proof}"));
    }
    for pid in &rows.revocations {
        seen(format!("revoked {pid}"));
    }
    for (pid, nonce) in &rows.consumed {
        seen(format!("consumed {pid} {nonce}"));
    }
    for i in &rows.intents {
        seen(format!(
            "intent {} {} {}",
            i.proposal_id, i.nonce, i.proof_sha256
        ));
    }
    for (nonce, effect) in &rows.applied {
        seen(format!("applied {nonce} {effect}"));
    }
    for (pid, nonce, status) in &rows.completions {
        seen(format!("completed {pid} {nonce} {status}"));
    }
    for k in &rows.passkeys {
        seen(format!(
            "passkey_enrolled {} {} {} {}",
            k.credential_id,
            k.principal,
            k.authorized_by,
            public_key_sha256(&k.public_key)
        ));
    }
    for (credential, authority) in &rows.passkey_removals {
        seen(format!("passkey_removed {credential} {authority}"));
    }
    for (pid, approver, decision) in &rows.quorum_decisions {
        seen(format!("quorum {decision} {pid} {approver}"));
    }
    for (pid, approver, credential) in &rows.quorum_passkeys {
        seen(format!("quorum_passkey {pid} {approver} {credential}"));
    }
    for (purpose, subject, credential) in &rows.passkey_assertions {
        seen(format!(
            "passkey_assertion {purpose} {subject} {credential}"
        ));
    }
    for line in &rows.rule_versions {
        seen(line.clone());
    }
    for (pid, rule, version) in &rows.rule_uses {
        seen(format!("rule_use {pid} {rule} {version}"));
    }
    for (pid, rule) in &rows.rules_from_proposals {
        seen(format!("rule_from {pid} {rule}"));
    }
    for line in &rows.resigned {
        seen(line.clone());
    }
    tally
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn event(id: i64, kind: &str, pid: &str, details: &str) -> RawEvent {
        RawEvent {
            id,
            chain: "pr_x".into(),
            seq: id,
            at: "2026-01-01T00:00:00Z".into(),
            kind: kind.into(),
            proposal_id: Some(pid.into()),
            actor: "pr_x".into(),
            details: details.into(),
            prev_hash: String::new(),
            hash: String::new(),
        }
    }

    fn facts(events: &[RawEvent]) -> EventFacts {
        let mut facts = EventFacts::default();
        for e in events {
            facts.push(e);
        }
        facts
    }

    #[test]
    fn an_event_without_its_row_is_reported() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            ..FactRows::default()
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(2, "revoked", "p1", r#"{"reason":"x"}"#),
        ];
        assert_eq!(
            facts(&events).disagreement(&rows).as_deref(),
            Some("the event log records `revoked p1` but the ledger has no such row")
        );
    }

    #[test]
    fn a_duplicated_event_is_reported() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            ..FactRows::default()
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(2, "proposed", "p1", "{}"),
        ];
        assert_eq!(
            facts(&events).disagreement(&rows).as_deref(),
            Some("the ledger records `proposed p1` 1 time(s) but the event log 2")
        );
    }

    #[test]
    fn an_event_of_unknown_kind_or_without_its_details_is_reported() {
        let rows = FactRows::default();
        assert_eq!(
            facts(&[event(1, "approved_by_model", "p1", "{}")])
                .disagreement(&rows)
                .as_deref(),
            Some("event 1 has an unknown kind \"approved_by_model\"")
        );
        assert_eq!(
            facts(&[event(1, "intent", "p1", "{}")])
                .disagreement(&rows)
                .as_deref(),
            Some("event 1 (intent) lacks the details its kind records")
        );
    }

    #[test]
    fn an_approval_naming_a_passkey_needs_its_assertion_row() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            decisions: vec![("p1".into(), "approve".into())],
            issuances: vec![("p1".into(), "h".into())],
            ..FactRows::default()
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(
                2,
                "approved",
                "p1",
                r#"{"passkey":"k1","proof_sha256":"h"}"#,
            ),
        ];
        assert_eq!(
            facts(&events).disagreement(&rows).as_deref(),
            Some(
                "the event log records `passkey_assertion decision p1 k1` but the ledger has no such row"
            )
        );
        let rows = FactRows {
            passkey_assertions: vec![("decision".into(), "p1".into(), "k1".into())],
            ..rows
        };
        assert_eq!(facts(&events).disagreement(&rows), None);
    }

    #[test]
    fn an_enrolment_by_a_passkey_needs_its_assertion_and_the_same_key() {
        let key = |k: &str| PasskeyRow {
            credential_id: "k2".into(),
            principal: "pr_x".into(),
            authorized_by: "k1".into(),
            public_key: k.into(),
        };
        let details = format!(
            r#"{{"authorized_by":"k1","credential_id":"k2","principal":"pr_x","public_key_sha256":"{}"}}"#,
            public_key_sha256("pk")
        );
        let events = [event(1, "passkey_enrolled", "", &details)];
        let rows = FactRows {
            passkeys: vec![key("pk")],
            passkey_assertions: vec![("enrol".into(), "k2".into(), "k1".into())],
            ..FactRows::default()
        };
        assert_eq!(facts(&events).disagreement(&rows), None);
        let swapped = FactRows {
            passkeys: vec![key("other")],
            ..rows
        };
        assert!(
            facts(&events)
                .disagreement(&swapped)
                .unwrap()
                .starts_with("the ledger records `passkey_enrolled k2 pr_x k1 ")
        );
    }

    #[test]
    fn a_quorum_approval_needs_its_row_and_the_issuance_names_exactly_its_approvers() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            quorum_decisions: vec![("p1".into(), "pr_x/alice".into(), "approve".into())],
            ..FactRows::default()
        };
        let one = [
            event(1, "proposed", "p1", "{}"),
            event(
                2,
                "quorum_approved",
                "p1",
                r#"{"approver":"pr_x/alice","required":2,"seq":1}"#,
            ),
        ];
        assert_eq!(facts(&one).disagreement(&rows), None);
        assert_eq!(
            facts(&one[..1]).disagreement(&rows).as_deref(),
            Some("the ledger records `quorum approve p1 pr_x/alice` 1 time(s) but the event log 0")
        );
        let issued = FactRows {
            quorum_decisions: vec![
                ("p1".into(), "pr_x/alice".into(), "approve".into()),
                ("p1".into(), "pr_x/bob".into(), "approve".into()),
            ],
            decisions: vec![("p1".into(), "approve".into())],
            issuances: vec![("p1".into(), "h".into())],
            provenances: vec![("p1".into(), "human:quorum:pr_x/alice".into())],
            ..rows
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(2, "quorum_approved", "p1", r#"{"approver":"pr_x/alice"}"#),
            event(3, "quorum_approved", "p1", r#"{"approver":"pr_x/bob"}"#),
            event(4, "approved", "p1", r#"{"proof_sha256":"h"}"#),
        ];
        assert_eq!(
            facts(&events).disagreement(&issued).as_deref(),
            Some(
                "the issuance of p1 names \"human:quorum:pr_x/alice\" but the quorum decisions record \"pr_x/alice,pr_x/bob\""
            )
        );
        let named_both = FactRows {
            provenances: vec![("p1".into(), "human:quorum:pr_x/alice,pr_x/bob".into())],
            ..issued
        };
        assert_eq!(facts(&events).disagreement(&named_both), None);
    }

    #[test]
    fn a_quorum_denial_needs_its_row() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            decisions: vec![("p1".into(), "deny".into())],
            ..FactRows::default()
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(
                2,
                "denied",
                "p1",
                r#"{"approver":"pr_x/bob","reason":"no"}"#,
            ),
        ];
        assert_eq!(
            facts(&events).disagreement(&rows).as_deref(),
            Some("the event log records `quorum deny p1 pr_x/bob` but the ledger has no such row")
        );
        let rows = FactRows {
            quorum_decisions: vec![("p1".into(), "pr_x/bob".into(), "deny".into())],
            ..rows
        };
        assert_eq!(facts(&events).disagreement(&rows), None);
    }

    #[test]
    fn matching_rows_and_events_with_replayed_state_agree() {
        let rows = FactRows {
            proposals: vec!["p1".into()],
            decisions: vec![("p1".into(), "approve".into())],
            issuances: vec![("p1".into(), "h".into())],
            consumed: vec![("p1".into(), "n1".into())],
            intents: vec![IntentRow {
                proposal_id: "p1".into(),
                nonce: "n1".into(),
                principal: "pr_x".into(),
                proof_sha256: "h".into(),
                arguments_json: r#"{"cron":"0 3 * * *","name":"a"}"#.into(),
            }],
            applied: vec![("n1".into(), "schedule.create".into())],
            completions: vec![("p1".into(), "n1".into(), "applied".into())],
            state: vec![(
                "pr_x".into(),
                "schedules".into(),
                "a".into(),
                r#"{"cron":"0 3 * * *","name":"a","state":"created"}"#.into(),
            )],
            ..FactRows::default()
        };
        let events = [
            event(1, "proposed", "p1", "{}"),
            event(2, "approved", "p1", r#"{"proof_sha256":"h"}"#),
            event(3, "intent", "p1", r#"{"nonce":"n1","proof_sha256":"h"}"#),
            event(
                4,
                "effect_applied",
                "p1",
                r#"{"effect":"schedule.create","nonce":"n1"}"#,
            ),
            event(5, "completed", "p1", r#"{"nonce":"n1","status":"applied"}"#),
        ];
        assert_eq!(facts(&events).disagreement(&rows), None);
    }
}
