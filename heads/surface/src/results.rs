//! The JSON results every head returns, and their JSON Schemas. The CLI's
//! `--json` output, the API's response bodies and MCP's structured tool
//! results are these values, byte for byte (except that MCP, whose
//! structured content must be an object, wraps an array as
//! `{"items": [...]}`: `countersign_mcp::structured`). The results of an
//! execution (an outcome, a recorded disposition) are rendered by the
//! service (`countersign_service::results`), which links the gate and the
//! ledger they come from; their schemas are here.

use countersign_proto::v1::{
    ActionView, Deliveries, PolicyVerdictView, ProposalStatus, ProposalView, QuorumView,
};
use countersign_registry::Operation;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// A proposal.
pub fn proposal(view: &ProposalView) -> Value {
    let arguments: Value = serde_json::from_str(&view.arguments_json).unwrap_or(Value::Null);
    json!({
        "id": view.id,
        "principal": view.principal,
        "session": view.session,
        "operation": view.operation,
        "arguments": arguments,
        "arguments_sha256": view.arguments_sha256,
        "contract_revision": view.contract_revision,
        "policy_revision": view.policy_revision,
        "note": view.note,
        "preview": view.preview,
        "non_ascii": non_ascii(&view.arguments_json),
        "status": view.status().name(),
        "created_at": view.created_at,
        "reason": if view.reason.is_empty() { Value::Null } else { Value::String(view.reason.clone()) },
        "handoff_waiting": view.handoff_waiting,
        "passkey_required": view.passkey_required,
        "quorum": view.quorum.as_ref().map_or(Value::Null, quorum),
        "decide_by": if view.decide_by.is_empty() { Value::Null } else { Value::String(view.decide_by.clone()) },
        "seconds_left": seconds_left(view, OffsetDateTime::now_utc()).map_or(Value::Null, Value::from),
        "action": view.action.as_ref().map_or(Value::Null, action),
        "risk": if view.risk.is_empty() { Value::Null } else { Value::String(view.risk.clone()) },
        "approval_runs": approval_runs(view),
        "policy": view.policy_verdict.as_ref().map_or(Value::Null, policy_verdict),
    })
}

/// What the operator's Cedar policy said of `view` when it was proposed,
/// as people read it (the policies' ids escaped like the preview); `None`
/// without a binding policy then.
pub fn policy_text(view: &ProposalView) -> Option<String> {
    let verdict = view.policy_verdict.as_ref()?;
    let ids = if verdict.policies.is_empty() {
        String::new()
    } else {
        let ids: Vec<_> = verdict
            .policies
            .iter()
            .map(|id| countersign_registry::terminal_safe(id).into_owned())
            .collect();
        format!(" ({})", ids.join(", "))
    };
    Some(match verdict.verdict.as_str() {
        "forbid" => format!("the operator's policy forbids it{ids}: nobody can approve it"),
        "require_approval" => format!("the operator's policy requires a person's approval{ids}"),
        "permit" => {
            format!("the operator's policy permits it{ids}: a person or a rule may approve it")
        }
        "person" => "the operator's policy says nothing of it: a person decides".to_owned(),
        other => format!(
            "the operator's policy: {}{ids}",
            countersign_registry::terminal_safe(other)
        ),
    })
}

/// What the operator's Cedar policy said of a proposal.
fn policy_verdict(verdict: &PolicyVerdictView) -> Value {
    json!({
        "verdict": verdict.verdict,
        "policies": verdict.policies,
        "set_sha256": verdict.set_sha256,
    })
}

/// The action of a proposal: its one-line summary (terminal-safe, like the
/// preview) and its parts, raw.
fn action(action: &ActionView) -> Value {
    json!({
        "summary": countersign_registry::terminal_safe(&action.summary),
        "parts": action.parts.iter().map(|p| json!({
            "label": p.label,
            "text": p.text,
            "syntax": p.syntax,
            "model_supplied": p.model_supplied,
        })).collect::<Vec<_>>(),
    })
}

/// Who carries out a person's approval of `view`: `here_or_handoff` (the
/// deciding interface, or a head claiming it), `proposing_session` (the
/// gateway or the agent's hook of the proposing session), `creates_rule`,
/// or null when the signer no longer knows its operation.
fn approval_runs(view: &ProposalView) -> Value {
    match view.deliveries() {
        Deliveries::AnyHead => "here_or_handoff".into(),
        Deliveries::HandoffOnly | Deliveries::ProposingSession => "proposing_session".into(),
        Deliveries::NoProof => "creates_rule".into(),
        Deliveries::Unspecified => Value::Null,
    }
}

/// While `view` waits for a decision: when its window closes and the time
/// left at `now`, as people read it (`decide by 2026-12-04T22:00:00Z, 59
/// min left`); else `None`.
pub fn time_left_text(view: &ProposalView, now: OffsetDateTime) -> Option<String> {
    let left = seconds_left(view, now)?;
    let left = match left {
        0..60 => format!("{left} s"),
        60..3600 => format!("{} min", left / 60),
        _ => format!("{} h {} min", left / 3600, left % 3600 / 60),
    };
    Some(format!("decide by {}, {left} left", view.decide_by))
}

/// While `view` waits for a decision: the whole seconds left in its
/// decision window at `now` (0 in its last second); else `None`.
pub fn seconds_left(view: &ProposalView, now: OffsetDateTime) -> Option<i64> {
    if view.status() != ProposalStatus::Pending {
        return None;
    }
    let closes = OffsetDateTime::parse(&view.decide_by, &Rfc3339).ok()?;
    Some((closes - now).whole_seconds().max(0))
}

/// A proposal's quorum: how many approvals of which approvers it needs,
/// and every decision so far, in order.
pub fn quorum(q: &QuorumView) -> Value {
    let decisions: Vec<Value> = q
        .decisions
        .iter()
        .map(|d| {
            json!({
                "approver": d.approver,
                "decision": d.decision().name(),
                "decided_at": d.decided_at,
                "reason": if d.reason.is_empty() { Value::Null } else { Value::String(d.reason.clone()) },
            })
        })
        .collect();
    json!({
        "required": q.required,
        "approvers": q.approvers,
        "decisions": decisions,
    })
}

/// A list of proposals.
pub fn proposals(views: &[ProposalView]) -> Value {
    Value::Array(views.iter().map(proposal).collect())
}

/// One registry operation, as listed to callers.
pub fn operation(op: &Operation) -> Value {
    json!({
        "name": op.name,
        "description": op.description,
        "class": op.risk().as_str(),
        "replay_safe": op.replay_safe,
        "require_passkey": op.requires_passkey(),
        "contract_revision": op.contract_revision(),
        "schema": op.schema,
    })
}

/// One sentence per argument whose value holds non-ASCII text (the
/// preview's `Non-ASCII:` lines, computed from the canonical arguments, so
/// they are there for proposals stored before the preview carried them).
fn non_ascii(arguments_json: &str) -> Vec<String> {
    countersign_registry::lookalike::argument_warnings_of_json(arguments_json)
        .iter()
        .map(|w| countersign_registry::terminal_safe(&w.to_string()).into_owned())
        .collect()
}

/// The JSON Schema of [`proposal`].
pub fn proposal_schema() -> Value {
    json!({
        "type": "object",
        "required": ["id", "principal", "session", "operation", "arguments", "arguments_sha256",
                     "contract_revision", "policy_revision", "note", "preview", "non_ascii", "status",
                     "created_at", "reason", "handoff_waiting", "passkey_required", "quorum",
                     "decide_by", "seconds_left", "action", "risk", "approval_runs", "policy"],
        "properties": {
            "id": {"type": "string"},
            "principal": {"type": "string"},
            "session": {"type": "string"},
            "operation": {"type": "string"},
            "arguments": {"type": "object"},
            "arguments_sha256": {"type": "string"},
            "contract_revision": {"type": "string"},
            "policy_revision": {"type": "string"},
            "note": {"type": "string"},
            "preview": {"type": "string"},
            "non_ascii": {
                "description": "One sentence per argument whose value holds any non-ASCII character: its code points with their scripts, and whether it mixes scripts (UTS 39). A letter of another script can look exactly like the one expected; show these to the person.",
                "type": "array",
                "items": {"type": "string"}
            },
            "status": {"enum": ["pending", "denied", "withdrawn", "approved", "revoked", "expired",
                                "applied", "failed", "uncertain"]},
            "created_at": {"type": "string"},
            "reason": {"type": ["string", "null"]},
            "handoff_waiting": {"type": "boolean"},
            "passkey_required": {"type": "boolean"},
            "quorum": quorum_schema(),
            "decide_by": {
                "description": "When the proposal's decision window closes (RFC 3339, UTC): undecided by then, it is `expired` and no one can decide it. Null for a proposal recorded before decision windows existed.",
                "type": ["string", "null"]
            },
            "seconds_left": {
                "description": "While pending: the whole seconds left to decide it, when this result was made. Null otherwise.",
                "type": ["integer", "null"],
                "minimum": 0
            },
            "action": action_schema(),
            "risk": {
                "description": "What approving it risks: read, write, delete, exec (runs a program) or network. Null when `action` is.",
                "type": ["string", "null"],
                "enum": ["read", "write", "delete", "exec", "network", null]
            },
            "approval_runs": {
                "description": "Who carries out a person's approval: `here_or_handoff` (the approver's interface now, or a head that claims it), `proposing_session` (only the proposing session's head: the gateway, or the agent's hook; approving hands it off there), `creates_rule`; null when `action` is.",
                "type": ["string", "null"],
                "enum": ["here_or_handoff", "proposing_session", "creates_rule", null]
            },
            "policy": {
                "description": "What the operator's binding Cedar policy said of it when it was proposed: `forbid` (recorded denied), `require_approval` (a person's approval, with the quorum it names), `permit` (a rule may approve it) or `person` (nothing satisfied: a person decides); `policies` are the determining policies' ids, `set_sha256` the policy set's digest. Null when no binding policy was configured then.",
                "type": ["object", "null"],
                "required": ["verdict", "policies", "set_sha256"],
                "properties": {
                    "verdict": {"enum": ["forbid", "require_approval", "permit", "person"]},
                    "policies": {"type": "array", "items": {"type": "string"}},
                    "set_sha256": {"type": "string"}
                }
            }
        }
    })
}

/// The JSON Schema of [`action`], or null for a proposal whose operation is
/// no longer registered at its contract.
fn action_schema() -> Value {
    json!({
        "description": "What approving it does, from its effect kind: `summary` is one line (the command, the tool and its path, the request), escaped like the preview; `parts` are labelled raw values in the order a person reads them, `model_supplied` marking descriptions the model wrote that nothing checks. Null when its operation is no longer registered at its contract.",
        "type": ["object", "null"],
        "required": ["summary", "parts"],
        "properties": {
            "summary": {"type": "string"},
            "parts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["label", "text", "syntax", "model_supplied"],
                    "properties": {
                        "label": {"type": "string"},
                        "text": {"type": "string"},
                        "syntax": {"enum": ["text", "shell", "diff", "json", "url"]},
                        "model_supplied": {"type": "boolean"}
                    }
                }
            }
        }
    })
}

/// The JSON Schema of [`quorum`], or null for a proposal without one.
fn quorum_schema() -> Value {
    json!({
        "description": "When the operation requires a quorum: the signer issues the proof only once `required` distinct approvers of `approvers` approved; any approver's denial ends the proposal. Null otherwise.",
        "type": ["object", "null"],
        "required": ["required", "approvers", "decisions"],
        "properties": {
            "required": {"type": "integer", "minimum": 1},
            "approvers": {"type": "array", "items": {"type": "string"}},
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["approver", "decision", "decided_at", "reason"],
                    "properties": {
                        "approver": {"type": "string"},
                        "decision": {"enum": ["approve", "deny"]},
                        "decided_at": {"type": "string"},
                        "reason": {"type": ["string", "null"]}
                    }
                }
            }
        }
    })
}

/// The JSON Schema of [`proposals`].
pub fn proposals_schema() -> Value {
    json!({"type": "array", "items": proposal_schema()})
}

/// The JSON Schema of a list of [`operation`]s.
pub fn operations_schema() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": ["name", "description", "class", "replay_safe", "require_passkey", "contract_revision", "schema"],
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "class": {"enum": ["read", "write", "delete", "exec", "network"]},
                "replay_safe": {"type": "boolean"},
                "require_passkey": {
                    "type": "boolean",
                    "description": "An approval must be made with a passkey (user verified); a proof without that assurance is refused as passkey_required and nothing is consumed."
                },
                "contract_revision": {"type": "string"},
                "schema": {"type": "object"}
            }
        }
    })
}

/// The JSON Schema of a recorded disposition.
pub fn disposition_schema() -> Value {
    json!({
        "type": "object",
        "required": ["proposal_id", "status", "result", "error", "completed_at"],
        "properties": {
            "proposal_id": {"type": "string"},
            "status": {"enum": ["applied", "failed", "uncertain"]},
            "result": {},
            "error": {"type": ["string", "null"]},
            "completed_at": {"type": ["string", "null"]}
        }
    })
}

/// The JSON Schema of an execution outcome.
pub fn outcome_schema() -> Value {
    json!({
        "type": "object",
        "required": ["proposal_id", "ok", "applied", "status", "message"],
        "properties": {
            "proposal_id": {"type": "string"},
            "ok": {"type": "boolean"},
            "applied": {"type": "boolean"},
            "status": {"enum": ["applied", "failed", "uncertain", "already_used", "refused"]},
            "reason": {"type": "string"},
            "recorded_status": {"enum": ["applied", "failed", "uncertain"]},
            "message": {"type": "string"},
            "result": {},
            "console_url": {
                "type": "string",
                "description": "The web console's page of the proposal, where a person can approve it: given by the MCP head when nothing is approved yet, the proposal is pending and a console is configured."
            }
        }
    })
}

/// A refusal of any operation other than an execution (whose outcome
/// already says `ok: false` with a `reason`): nothing was applied.
pub fn refusal(reason: &str, message: &str) -> Value {
    json!({"ok": false, "applied": false, "reason": reason, "message": message})
}

/// The JSON Schema of [`refusal`].
pub fn refusal_schema() -> Value {
    json!({
        "type": "object",
        "required": ["ok", "applied", "reason", "message"],
        "properties": {
            "ok": {"const": false},
            "applied": {"const": false},
            "reason": {"type": "string"},
            "message": {"type": "string"}
        }
    })
}
