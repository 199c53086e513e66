//! The OCSF mapping of ledger events, for `countersign audit export
//! --format ocsf` and the notify process's `[notify.ocsf]` stream: each
//! event becomes
//! one OCSF 1.8.0 API Activity event (class 6003, category 6) with the
//! Security Control profile. Pure: this crate reads no ledger and writes
//! nothing; its callers build an [`Event`] from a ledger row or from the
//! signer's `AuditEvents` answer.
//!
//! | ledger kind | activity | disposition | action | status |
//! |---|---|---|---|---|
//! | `proposed` | Create (1) | Delayed (14): held for a decision | Modified (4) | Success |
//! | `approved`, `quorum_approved` | Update (3) | Approved (8) | Allowed (1) | Success |
//! | `proof_reissued`, `proof_resigned` | Update (3) | Approved (8) | Allowed (1) | Success |
//! | `handed_off` | Read (2): the session fetches its proof | Approved (8) | Allowed (1) | Success |
//! | `intent`, `effect_applied` (the proof consumed) | Update (3) | Approved (8) | Allowed (1) | Success |
//! | `completed`, `resolved` | Update (3) | Approved (8) | Allowed (1) | Success if `applied`, else Failure |
//! | `denied`, `revoked` | Update (3) | Rejected (25) | Denied (2) | Failure |
//! | `withdrawn` (by the agent) | Delete (4) | Logged (17) | Observed (3) | Success |
//! | `rule_created` / `rule_revised` / `rule_revoked` | Create (1) / Update (3) / Delete (4) | Logged (17) | Observed (3) | Success |
//! | `passkey_enrolled` / `passkey_removed` | Create (1) / Delete (4) | Logged (17) | Observed (3) | Success |
//! | `key_rotated` / `key_retired` | Create (1) / Delete (4) | Logged (17) | Observed (3) | Success |
//! | `checkpoint`, any other kind | Other (99) | Logged (17) | Observed (3) | Success |
//!
//! Severity is Informational (1), Low (2) for a rejection and Medium (3)
//! for an effect that did not apply. `api.operation` is the proposal's
//! registry operation (from its `proposed` event), else the ledger kind;
//! `metadata.event_code` is always the ledger kind and `metadata.uid` the
//! event's hash. `unmapped.countersign` carries the event's chain,
//! position, hashes, details and transparency-log leaf index (`null` until
//! the signer has sequenced it).

#![forbid(unsafe_code)]

use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// One ledger event, as the mapping reads it (the fields of the ledger's
/// event rows).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The row's identity.
    pub id: i64,
    /// Its chain: a principal's, or the global chain (`""`).
    pub chain: String,
    /// Its position in its chain, from 1.
    pub seq: i64,
    /// When it happened (RFC 3339, `YYYY-MM-DDTHH:MM:SSZ`).
    pub at: String,
    /// The ledger kind (`proposed`, `approved`, ...).
    pub kind: String,
    /// The proposal concerned, if any.
    pub proposal_id: Option<String>,
    /// Who acted.
    pub actor: String,
    /// Kind-specific details (no proofs, no argument values).
    pub details: Value,
    /// The previous row's hash.
    pub prev_hash: String,
    /// The row's hash.
    pub hash: String,
}

/// The OCSF schema version the events follow.
pub const OCSF_VERSION: &str = "1.8.0";
/// API Activity.
const CLASS_UID: u32 = 6003;
/// Application Activity.
const CATEGORY_UID: u32 = 6;

/// `activity_id` of API Activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Something was created (a proposal, a rule, a passkey, a key).
    Create = 1,
    /// Something was read (a handed-off proof fetched by its session).
    Read = 2,
    /// Something changed state (a decision, a consumption, a completion).
    Update = 3,
    /// Something was removed or withdrawn.
    Delete = 4,
    /// Anything else (a checkpoint).
    Other = 99,
}

impl Activity {
    fn caption(self) -> &'static str {
        match self {
            Activity::Create => "Create",
            Activity::Read => "Read",
            Activity::Update => "Update",
            Activity::Delete => "Delete",
            Activity::Other => "Other",
        }
    }
}

/// `disposition_id` of the Security Control profile (the outcome), with
/// the `action_id` that conforms to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A person, a rule or a quorum approved; the effect may run.
    Approved = 8,
    /// Held for a person's decision (a pending proposal).
    Delayed = 14,
    /// Recorded only (rules, passkeys, keys, checkpoints, withdrawals).
    Logged = 17,
    /// Denied or revoked.
    Rejected = 25,
}

impl Disposition {
    fn caption(self) -> &'static str {
        match self {
            Disposition::Approved => "Approved",
            Disposition::Delayed => "Delayed",
            Disposition::Logged => "Logged",
            Disposition::Rejected => "Rejected",
        }
    }

    /// `action_id` and `action`: Allowed (1), Denied (2), Observed (3) or
    /// Modified (4), as the profile pairs them with each disposition.
    fn action(self) -> (u8, &'static str) {
        match self {
            Disposition::Approved => (1, "Allowed"),
            Disposition::Rejected => (2, "Denied"),
            Disposition::Logged => (3, "Observed"),
            Disposition::Delayed => (4, "Modified"),
        }
    }
}

/// How one ledger kind maps (the table in the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// The API Activity's `activity_id`.
    pub activity: Activity,
    /// The Security Control profile's `disposition_id`.
    pub disposition: Disposition,
}

/// The mapping of a ledger event kind.
pub fn mapping(kind: &str) -> Mapping {
    use Activity::{Create, Delete, Other, Read, Update};
    use Disposition::{Approved, Delayed, Logged, Rejected};
    let (activity, disposition) = match kind {
        "proposed" => (Create, Delayed),
        "approved" | "quorum_approved" | "proof_reissued" | "proof_resigned" | "intent"
        | "effect_applied" | "completed" | "resolved" => (Update, Approved),
        "handed_off" => (Read, Approved),
        "denied" | "revoked" => (Update, Rejected),
        "withdrawn" | "rule_revoked" | "passkey_removed" | "key_retired" => (Delete, Logged),
        "rule_created" | "passkey_enrolled" | "key_rotated" => (Create, Logged),
        "rule_revised" => (Update, Logged),
        _ => (Other, Logged),
    };
    Mapping {
        activity,
        disposition,
    }
}

/// What the mapping needs beyond the event itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The proposal's registry operation, from its `proposed` event.
    pub operation: Option<&'a str>,
    /// The event's transparency-log leaf index, once sequenced.
    pub leaf_index: Option<u64>,
}

/// An event that cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExportError {
    /// Its recorded time is not an RFC 3339 time.
    UnreadableTime {
        /// The event's row id.
        event: i64,
        /// Its recorded time, as stored.
        at: String,
    },
}

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExportError::UnreadableTime { event, at } => {
                write!(f, "event {event} has an unreadable time {at:?}")
            }
        }
    }
}

/// The event's recorded time.
pub fn event_time(event: &Event) -> Result<OffsetDateTime, ExportError> {
    OffsetDateTime::parse(&event.at, &Rfc3339).map_err(|_| ExportError::UnreadableTime {
        event: event.id,
        at: event.at.clone(),
    })
}

/// One ledger event as an OCSF API Activity event.
pub fn to_ocsf(event: &Event, context: Context<'_>) -> Result<Value, ExportError> {
    let Mapping {
        activity,
        disposition,
    } = mapping(&event.kind);
    let millis = event_time(event)?.unix_timestamp_nanos() / 1_000_000;
    let detail = |name: &str| event.details.get(name).and_then(Value::as_str);
    let failed = matches!(event.kind.as_str(), "completed" | "resolved")
        && detail("status") != Some("applied");
    let (status_id, status) = if disposition == Disposition::Rejected || failed {
        (2, "Failure")
    } else {
        (1, "Success")
    };
    let (severity_id, severity) = if failed {
        (3, "Medium")
    } else if disposition == Disposition::Rejected {
        (2, "Low")
    } else {
        (1, "Informational")
    };
    let (action_id, action) = disposition.action();
    let activity_id = activity as u32;

    let mut api = Map::new();
    api.insert(
        "operation".into(),
        json!(context.operation.unwrap_or(&event.kind)),
    );
    api.insert("service".into(), json!({"name": "countersign"}));
    if let Some(pid) = &event.proposal_id {
        api.insert("request".into(), json!({"uid": pid}));
    }

    let mut ocsf = json!({
        "class_uid": CLASS_UID,
        "class_name": "API Activity",
        "category_uid": CATEGORY_UID,
        "category_name": "Application Activity",
        "activity_id": activity_id,
        "activity_name": activity.caption(),
        "type_uid": CLASS_UID * 100 + activity_id,
        "type_name": format!("API Activity: {}", activity.caption()),
        "time": millis,
        "severity_id": severity_id,
        "severity": severity,
        "status_id": status_id,
        "status": status,
        "disposition_id": disposition as u32,
        "disposition": disposition.caption(),
        "action_id": action_id,
        "action": action,
        "message": message(event),
        "metadata": {
            "version": OCSF_VERSION,
            "profiles": ["security_control"],
            "product": {
                "name": "countersign",
                "vendor_name": "countersign",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "event_code": event.kind,
            "uid": event.hash,
            "log_name": "ledger",
        },
        "actor": actor(event),
        "api": api,
        "src_endpoint": src_endpoint(event),
        "unmapped": {
            "countersign": {
                "event_id": event.id,
                "chain": event.chain,
                "seq": event.seq,
                "hash": event.hash,
                "prev_hash": event.prev_hash,
                "leaf_index": context.leaf_index,
                "details": event.details,
            }
        },
    });
    if let (Some(fields), Some(policy)) = (ocsf.as_object_mut(), policy(event)) {
        fields.insert("policy".into(), policy);
    }
    if let (Some(fields), true, Some(error)) = (ocsf.as_object_mut(), failed, detail("error")) {
        fields.insert("status_detail".into(), json!(error));
    }
    Ok(ocsf)
}

/// `message`: what happened, in a line.
fn message(event: &Event) -> String {
    match &event.proposal_id {
        Some(pid) => format!("{} {pid} by {}", event.kind, event.actor),
        None => format!("{} by {}", event.kind, event.actor),
    }
}

/// `actor`: who acted as the ledger records it (a principal, a person or
/// a quorum approver), with the agent's session when the event names one.
fn actor(event: &Event) -> Value {
    let detail = |name: &str| event.details.get(name).and_then(Value::as_str);
    let name = detail("approver").unwrap_or(&event.actor);
    let mut actor = Map::new();
    actor.insert("user".into(), json!({"name": name, "uid": name}));
    if let Some(session) = detail("session") {
        actor.insert("session".into(), json!({"uid": session}));
    }
    if let Some(rule) = detail("rule") {
        // A standing rule decided, not a person at that moment.
        actor.insert("app_name".into(), json!("countersign rules"));
        actor.insert("app_uid".into(), json!(rule));
    }
    Value::Object(actor)
}

/// `src_endpoint` (required by the class): the agent session the request
/// came from when the event names one, else countersign itself (a person's
/// decision, a rule, a key rotation: nothing recorded says from where).
fn src_endpoint(event: &Event) -> Value {
    match event.details.get("session").and_then(Value::as_str) {
        Some(session) => json!({"uid": session, "svc_name": "countersign"}),
        None => json!({"svc_name": "countersign"}),
    }
}

/// `policy`: the standing rule that approved (with its version), else the
/// policy revision the proposal was made under.
fn policy(event: &Event) -> Option<Value> {
    let details = &event.details;
    if let Some(rule) = details.get("rule").and_then(Value::as_str) {
        let mut policy = json!({"type": "rule", "uid": rule});
        if let (Some(fields), Some(version)) = (policy.as_object_mut(), details.get("rule_version"))
        {
            fields.insert("version".into(), json!(version.to_string()));
        }
        return Some(policy);
    }
    details
        .get("policy_revision")
        .and_then(Value::as_str)
        .map(|revision| json!({"type": "policy revision", "uid": revision, "version": revision}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn event(kind: &str, details: Value) -> Event {
        Event {
            id: 7,
            chain: "pr_test".into(),
            seq: 3,
            at: "2026-12-06T09:30:00Z".into(),
            kind: kind.into(),
            proposal_id: Some("0123abcd".into()),
            actor: "pr_test".into(),
            details,
            prev_hash: "0".repeat(64),
            hash: "ab".repeat(32),
        }
    }

    fn mapped(kind: &str) -> (u64, u64, u64, u64) {
        let ocsf = to_ocsf(&event(kind, json!({})), Context::default()).unwrap();
        let n = |k: &str| ocsf[k].as_u64().unwrap();
        (
            n("class_uid"),
            n("activity_id"),
            n("type_uid"),
            n("disposition_id"),
        )
    }

    #[test]
    fn maps_each_ledger_kind_to_its_activity_and_disposition() {
        let table = [
            ("proposed", 1, 14),
            ("approved", 3, 8),
            ("quorum_approved", 3, 8),
            ("proof_reissued", 3, 8),
            ("proof_resigned", 3, 8),
            ("handed_off", 2, 8),
            ("intent", 3, 8),
            ("effect_applied", 3, 8),
            ("completed", 3, 8),
            ("resolved", 3, 8),
            ("denied", 3, 25),
            ("revoked", 3, 25),
            ("withdrawn", 4, 17),
            ("rule_created", 1, 17),
            ("rule_revised", 3, 17),
            ("rule_revoked", 4, 17),
            ("passkey_enrolled", 1, 17),
            ("passkey_removed", 4, 17),
            ("key_rotated", 1, 17),
            ("key_retired", 4, 17),
            ("checkpoint", 99, 17),
            ("a_kind_from_a_newer_ledger", 99, 17),
        ];
        for (kind, activity, disposition) in table {
            assert_eq!(
                mapped(kind),
                (6003, activity, 6003 * 100 + activity, disposition),
                "{kind}"
            );
        }
    }

    #[test]
    fn carries_the_security_control_profile_and_product() {
        let ocsf = to_ocsf(&event("approved", json!({})), Context::default()).unwrap();
        assert_eq!(ocsf["category_uid"], 6);
        assert_eq!(ocsf["metadata"]["version"], "1.8.0");
        assert_eq!(ocsf["metadata"]["profiles"], json!(["security_control"]));
        assert_eq!(ocsf["metadata"]["product"]["name"], "countersign");
        assert_eq!(
            ocsf["metadata"]["product"]["version"],
            env!("CARGO_PKG_VERSION")
        );
        assert_eq!(ocsf["disposition"], "Approved");
        assert_eq!(ocsf["action_id"], 1);
        assert_eq!(ocsf["time"], 1_796_549_400_000_i64);
        assert_eq!(ocsf["api"]["request"]["uid"], "0123abcd");
    }

    #[test]
    fn carries_the_hash_and_leaf_index_or_null_before_sequencing() {
        let e = event("proposed", json!({"operation": "notes.append"}));
        let sequenced = Context {
            operation: Some("notes.append"),
            leaf_index: Some(41),
        };
        let ocsf = to_ocsf(&e, sequenced).unwrap();
        let ledger = &ocsf["unmapped"]["countersign"];
        assert_eq!(ledger["leaf_index"], 41);
        assert_eq!(ledger["hash"], e.hash);
        assert_eq!(
            (&ledger["chain"], &ledger["seq"]),
            (&json!("pr_test"), &json!(3))
        );
        assert_eq!(ocsf["api"]["operation"], "notes.append");
        let pending = to_ocsf(&e, Context::default()).unwrap();
        assert_eq!(
            pending["unmapped"]["countersign"]["leaf_index"],
            Value::Null
        );
        assert_eq!(pending["api"]["operation"], "proposed");
    }

    #[test]
    fn reports_an_effect_that_did_not_apply_as_a_failure() {
        let e = event(
            "completed",
            json!({"status": "failed", "error": "disk full"}),
        );
        let ocsf = to_ocsf(&e, Context::default()).unwrap();
        assert_eq!(
            (&ocsf["status_id"], &ocsf["severity_id"]),
            (&json!(2), &json!(3))
        );
        assert_eq!(ocsf["status_detail"], "disk full");
        let e = event("completed", json!({"status": "applied", "error": null}));
        assert_eq!(to_ocsf(&e, Context::default()).unwrap()["status_id"], 1);
    }

    #[test]
    fn names_the_rule_that_approved_as_actor_and_policy() {
        let e = event("approved", json!({"rule": "ru_1", "rule_version": 2}));
        let ocsf = to_ocsf(&e, Context::default()).unwrap();
        assert_eq!(ocsf["actor"]["app_uid"], "ru_1");
        assert_eq!(
            ocsf["policy"],
            json!({"type": "rule", "uid": "ru_1", "version": "2"})
        );
    }

    #[test]
    fn refuses_an_event_with_an_unreadable_time() {
        let mut e = event("approved", json!({}));
        e.at = "yesterday".into();
        assert_eq!(
            to_ocsf(&e, Context::default()),
            Err(ExportError::UnreadableTime {
                event: 7,
                at: "yesterday".into()
            })
        );
    }
}
