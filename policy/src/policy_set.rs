//! An operator's policy set: parsed from Cedar text, its policies named by
//! their `@id` annotations, its countersign annotations checked, validated
//! strictly against a generated schema, and its digest.
//!
//! This module owns parsing and validation. It must not accept a set
//! whose names are ambiguous (two policies with one id), whose annotations
//! are malformed, or that holds templates (nothing here links them).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use cedar_policy::{ActionConstraint, Authorizer, Effect, PolicyId, ValidationMode};
use countersign_verifier::canonical;
use miette::Diagnostic;

use crate::annotations::{self, Approval};
use crate::schema::GeneratedSchema;

/// Largest policy set text accepted, in bytes.
pub const MAX_POLICY_BYTES: usize = 1024 * 1024;

/// Where a syntax error is, and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based line of the error's first labelled position (1 if Cedar
    /// gave none).
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// Cedar's message.
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// Why a policy set's text was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The text is larger than [`MAX_POLICY_BYTES`].
    #[error("the policy set is larger than {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The text is not Cedar.
    #[error("the policy set is not valid Cedar: {}", join(.0))]
    Syntax(Vec<SyntaxError>),
    /// The set holds a template (a policy with a `?principal` or
    /// `?resource` slot).
    #[error("policy `{0}` is a template: templates are not supported")]
    Template(String),
    /// Two policies have the same id (an `@id` given twice, or one equal
    /// to another policy's generated id).
    #[error("policy id `{0}` is used by more than one policy")]
    DuplicateId(String),
    /// A policy's countersign annotations are malformed.
    #[error("policy `{policy}`: {reason}")]
    Annotation {
        /// The policy's id.
        policy: String,
        /// What is wrong.
        reason: String,
    },
}

fn join(errors: &[SyntaxError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One reason a policy set does not validate against a schema.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ValidationIssue {
    /// The id of the policy at fault.
    pub policy: String,
    /// Cedar's message.
    pub message: String,
}

impl fmt::Display for ValidationIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "policy `{}`: {}", self.policy, self.message)
    }
}

/// `issues` as one line: `does not validate against the registry's
/// schema: ISSUE; ISSUE`.
pub fn schema_mismatch(issues: &[ValidationIssue]) -> String {
    let issues: Vec<String> = issues.iter().map(ToString::to_string).collect();
    format!(
        "does not validate against the registry's schema: {}",
        issues.join("; ")
    )
}

/// What evaluation needs of one policy.
#[derive(Debug, Clone)]
pub(crate) struct PolicyMeta {
    pub(crate) effect: Effect,
    /// `Some` for a `@require_approval` permit.
    pub(crate) approval: Option<Approval>,
}

/// A parsed policy set.
#[derive(Debug)]
pub struct PolicySet {
    text: String,
    digest: String,
    pub(crate) cedar: cedar_policy::PolicySet,
    /// The policies that can apply to each action a policy names in its
    /// scope (`action == A`, `action in [A, B]`), with those that name no
    /// action: what a request of that action is evaluated against.
    by_action: HashMap<String, cedar_policy::PolicySet>,
    /// The policies that name no action (`action` alone, or an entity
    /// that is not an `Action::"<operation>"`): what a request of any
    /// other action is evaluated against.
    any_action: cedar_policy::PolicySet,
    pub(crate) policies: BTreeMap<String, PolicyMeta>,
    pub(crate) authorizer: Authorizer,
}

/// `offset` (bytes into `text`) as a 1-based line and column (characters).
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

impl PolicySet {
    /// Parses Cedar policy text. Each policy is named by its `@id("...")`
    /// annotation, else by Cedar's generated id (`policy0`, `policy1`, ...
    /// in the order written); ids must be distinct.
    pub fn parse(text: &str) -> Result<PolicySet, ParseError> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(ParseError::TooLarge {
                limit: MAX_POLICY_BYTES,
            });
        }
        let parsed: cedar_policy::PolicySet =
            text.parse().map_err(|e: cedar_policy::ParseErrors| {
                ParseError::Syntax(
                    e.iter()
                        .map(|error| {
                            let offset = error
                                .labels()
                                .and_then(|mut labels| labels.next())
                                .map(|label| label.offset());
                            let (line, column) = offset.map_or((1, 1), |o| line_column(text, o));
                            SyntaxError {
                                line,
                                column,
                                message: error.to_string(),
                            }
                        })
                        .collect(),
                )
            })?;
        if let Some(template) = parsed.templates().next() {
            return Err(ParseError::Template(template.id().to_string()));
        }
        let mut cedar = cedar_policy::PolicySet::new();
        let mut policies = BTreeMap::new();
        for policy in parsed.policies() {
            let id = policy
                .annotation(annotations::ID)
                .map_or_else(|| policy.id().to_string(), str::to_owned);
            if id.is_empty() {
                return Err(ParseError::Annotation {
                    policy: policy.id().to_string(),
                    reason: "@id is empty".into(),
                });
            }
            if policies.contains_key(&id) {
                return Err(ParseError::DuplicateId(id));
            }
            let approval =
                annotations::approval(policy).map_err(|reason| ParseError::Annotation {
                    policy: id.clone(),
                    reason,
                })?;
            cedar
                .add(policy.new_id(PolicyId::new(&id)))
                .map_err(|_| ParseError::DuplicateId(id.clone()))?;
            policies.insert(
                id,
                PolicyMeta {
                    effect: policy.effect(),
                    approval,
                },
            );
        }
        let (by_action, any_action) = index_by_action(&cedar)?;
        Ok(PolicySet {
            digest: canonical::sha256_hex(text.as_bytes()),
            text: text.to_owned(),
            cedar,
            by_action,
            any_action,
            policies,
            authorizer: Authorizer::new(),
        })
    }

    /// The policies a request of `operation` can be satisfied by: those
    /// whose scope names it, and those that name no action. Evaluating
    /// only these gives the same decision, determining policies and
    /// errors as the whole set, since a policy whose scope names other
    /// actions only is not applicable (the generated schema puts no
    /// action in another, so `action in [A]` is `action == A`).
    pub(crate) fn for_action(&self, operation: &str) -> &cedar_policy::PolicySet {
        self.by_action.get(operation).unwrap_or(&self.any_action)
    }

    /// Validates every policy against `schema` in Cedar's strict mode: an
    /// unknown action or entity type, a misspelt attribute, an optional
    /// attribute read without `has`, a type error are each an issue, sorted
    /// by policy id. Warnings (such as a string that mixes scripts) are not.
    pub fn validate(&self, schema: &GeneratedSchema) -> Result<(), Vec<ValidationIssue>> {
        let result = schema
            .validator()
            .validate(&self.cedar, ValidationMode::Strict);
        let mut issues: Vec<ValidationIssue> = result
            .validation_errors()
            .map(|e| ValidationIssue {
                policy: e.policy_id().to_string(),
                message: e.to_string(),
            })
            .collect();
        if issues.is_empty() {
            return Ok(());
        }
        issues.sort();
        issues.dedup();
        Err(issues)
    }

    /// SHA-256 hex of the exact text parsed.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The exact text parsed.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The policies' ids, sorted.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.policies.keys().map(String::as_str)
    }

    /// How many policies the set holds.
    pub fn len(&self) -> usize {
        self.policies.len()
    }

    /// Whether the set holds no policy (every request: a person decides).
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
}

/// The policies of `set` indexed by the actions their scopes name (each
/// entry with the policies that name none), and those that name none.
fn index_by_action(
    set: &cedar_policy::PolicySet,
) -> Result<
    (
        HashMap<String, cedar_policy::PolicySet>,
        cedar_policy::PolicySet,
    ),
    ParseError,
> {
    let named = |policy: &cedar_policy::Policy| -> Option<Vec<String>> {
        let uids = match policy.action_constraint() {
            ActionConstraint::Any => return None,
            ActionConstraint::Eq(uid) => vec![uid],
            ActionConstraint::In(uids) => uids,
        };
        // Only `Action::"<operation>"`: anything else may apply anywhere.
        uids.iter()
            .map(|uid| {
                (uid.type_name().to_string() == "Action").then(|| uid.id().unescaped().to_owned())
            })
            .collect()
    };
    let duplicate =
        |policy: &cedar_policy::Policy| ParseError::DuplicateId(policy.id().to_string());
    let mut any_action = cedar_policy::PolicySet::new();
    let mut scoped: Vec<(Vec<String>, &cedar_policy::Policy)> = Vec::new();
    for policy in set.policies() {
        match named(policy) {
            None => any_action
                .add(policy.clone())
                .map_err(|_| duplicate(policy))?,
            Some(actions) => scoped.push((actions, policy)),
        }
    }
    let mut by_action: HashMap<String, cedar_policy::PolicySet> = HashMap::new();
    for (actions, policy) in scoped {
        for action in actions {
            let entry = by_action
                .entry(action)
                .or_insert_with(|| any_action.clone());
            // `action in [A, A]` names A twice: once is enough.
            if entry.policy(policy.id()).is_none() {
                entry.add(policy.clone()).map_err(|_| duplicate(policy))?;
            }
        }
    }
    Ok((by_action, any_action))
}
