//! A person's auto-approval rule whose scope is written in Cedar (a rule
//! definition's `cedar`): the checks it must pass before a person may
//! create it, and whether it permits a proposal.
//!
//! The scope is a set of `permit` and `forbid` policies over the same
//! request the operator's policy sees (`request.rs`); it covers a proposal
//! when a permit is satisfied and no forbid is (an error in a forbid is a
//! forbid, as in the operator's policy). The rule's operations, sessions,
//! constraints, budgets and windows still hold besides it.
//!
//! This module must not accept a scope that could approve more than the
//! person reads: it must validate strictly against the registry's schema;
//! it must not carry `@require_approval` (a rule approves without a
//! person, so its scope can only permit or forbid); and each permit that
//! can apply to a shell call must name the command's program
//! (`context.argv.w0 == "<program>"` as one of its `when` clause's
//! top-level conjuncts), as the rule language requires an `argv` test: a
//! shell rule never covers every command, nor one the lexer refuses (then
//! `argv` is absent and the conjunct cannot hold).

use cedar_policy::{ActionConstraint, Effect};
use countersign_registry::rule::SHELL_OPERATION;
use serde_json::Value;

use crate::argv::{ARGV_ATTRIBUTE, word};
use crate::{GeneratedSchema, PolicyRequest, PolicySet, RequestError, Verdict, schema_mismatch};

/// Why a rule's Cedar scope was refused: one line a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScopeRefused(pub String);

/// A rule's scope written in Cedar, checked.
#[derive(Debug)]
pub struct CedarScope {
    set: PolicySet,
}

impl CedarScope {
    /// Parses and checks `text`, the scope of a rule for `operations`,
    /// against `schema` (see the module documentation for what is
    /// refused).
    pub fn parse(
        text: &str,
        operations: &[String],
        schema: &GeneratedSchema,
    ) -> Result<CedarScope, ScopeRefused> {
        let set = PolicySet::parse(text).map_err(|e| ScopeRefused(e.to_string()))?;
        set.validate(schema)
            .map_err(|issues| ScopeRefused(format!("it {}", schema_mismatch(&issues))))?;
        if let Some((id, _)) = set.policies.iter().find(|(_, m)| m.approval.is_some()) {
            return Err(ScopeRefused(format!(
                "policy `{id}` requires approval: a rule approves without asking a person, so its scope only permits or forbids"
            )));
        }
        if !set.policies.values().any(|m| m.effect == Effect::Permit) {
            return Err(ScopeRefused(
                "it holds no permit, so the rule would never approve anything".into(),
            ));
        }
        if operations.iter().any(|o| o == SHELL_OPERATION) {
            for policy in set.cedar.policies() {
                let id = policy.id().to_string();
                if policy.effect() == Effect::Permit
                    && may_apply_to_shell(policy)
                    && !names_the_program(policy)
                {
                    return Err(ScopeRefused(format!(
                        "policy `{id}` may permit a shell command without naming its program: its when clause needs `context has {ARGV_ATTRIBUTE} && context.{ARGV_ATTRIBUTE} has {w0} && context.{ARGV_ATTRIBUTE}.{w0} == \"<program>\"` among its conditions joined by &&",
                        w0 = word(0)
                    )));
                }
            }
        }
        Ok(CedarScope { set })
    }

    /// Whether the scope permits `request`: a permit satisfied and no
    /// forbid satisfied or in error.
    pub fn permits(
        &self,
        schema: &GeneratedSchema,
        request: &PolicyRequest<'_>,
    ) -> Result<bool, RequestError> {
        Ok(matches!(
            self.set.evaluate(schema, request)?,
            Verdict::Permit { .. }
        ))
    }
}

/// Whether `policy`'s scope lets it apply to a shell call.
fn may_apply_to_shell(policy: &cedar_policy::Policy) -> bool {
    let is_shell = |uid: &cedar_policy::EntityUid| {
        uid.type_name().to_string() != "Action" || uid.id().unescaped() == SHELL_OPERATION
    };
    match policy.action_constraint() {
        ActionConstraint::Any => true,
        ActionConstraint::Eq(uid) => is_shell(&uid),
        ActionConstraint::In(uids) => uids.iter().any(is_shell),
    }
}

/// Whether one of `policy`'s `when` clauses has `context.argv.w0 ==
/// "<string>"` (either way round) among its top-level `&&` conjuncts.
fn names_the_program(policy: &cedar_policy::Policy) -> bool {
    let Ok(json) = policy.to_json() else {
        return false;
    };
    let Some(conditions) = json.get("conditions").and_then(Value::as_array) else {
        return false;
    };
    conditions
        .iter()
        .filter(|c| c.get("kind").and_then(Value::as_str) == Some("when"))
        .filter_map(|c| c.get("body"))
        .any(|body| conjuncts(body).into_iter().any(is_program_test))
}

/// The top-level conjuncts of a condition in Cedar's JSON form.
fn conjuncts(expr: &Value) -> Vec<&Value> {
    match expr.get("&&") {
        Some(and) => match (and.get("left"), and.get("right")) {
            (Some(left), Some(right)) => {
                let mut out = conjuncts(left);
                out.extend(conjuncts(right));
                out
            }
            _ => vec![expr],
        },
        None => vec![expr],
    }
}

/// `context.argv.w0 == "<string>"`, either way round.
fn is_program_test(expr: &Value) -> bool {
    let Some(eq) = expr.get("==") else {
        return false;
    };
    let (Some(left), Some(right)) = (eq.get("left"), eq.get("right")) else {
        return false;
    };
    let is_string = |e: &Value| e.get("Value").is_some_and(Value::is_string);
    (is_program(left) && is_string(right)) || (is_program(right) && is_string(left))
}

/// `context.argv.w0` (or `context["argv"]["w0"]`, the same in JSON form).
fn is_program(expr: &Value) -> bool {
    let attr = |e: &Value, name: &str| -> Option<Value> {
        let access = e.get(".")?;
        (access.get("attr")?.as_str()? == name).then(|| access.get("left").cloned())?
    };
    attr(expr, &word(0))
        .and_then(|argv| attr(&argv, ARGV_ATTRIBUTE))
        .is_some_and(|context| context.get("Var").and_then(Value::as_str) == Some("context"))
}
