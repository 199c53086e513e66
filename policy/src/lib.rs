//! The operator's policy as Cedar (issue 51), the pure core: a Cedar
//! schema generated from the operation registry, a proposal as a Cedar
//! request, and a policy set's verdict with countersign's precedence.
//!
//! - principal: the proposal's session, `Session::"<id>"`, a member of its
//!   `Principal::"<id>"` and, for a coding agent's hook, its
//!   `Agent::"<name>"`;
//! - action: the operation, one per registry operation, named exactly
//!   (`Action::"schedule.create"`, `Action::"agent.shell"`,
//!   `Action::"mcp:files/write_file"`);
//! - resource: `Target::"<value>"` (attribute `value`) when the registry
//!   names a target for the operation and the arguments hold a string
//!   there, else `Operation::"<name>"`;
//! - context: `arguments` (the typed view of the canonical arguments, see
//!   [`schema`]), `time` (unix seconds), `head` ([`Head`]), `class`, and
//!   for `agent.shell` `argv`, the command's words as a shell would run
//!   them (absent when the rule language's lexer refuses the command).
//!
//! Precedence: a satisfied (or erroring) forbid is [`Verdict::Forbid`];
//! else a satisfied `@require_approval` permit is
//! [`Verdict::RequireApproval`] (with the quorum its annotations name);
//! else a satisfied permit is [`Verdict::Permit`]; else
//! [`Verdict::PersonDecides`], as without a policy.
//!
//! Cedar decides, but the proof keeps binding the canonical JSON: Cedar's
//! view of arguments is lossy (arrays become sets, `number` has no exact
//! Cedar type), so a part it cannot type is left out of its view, and a
//! value it types but cannot hold exactly is refused
//! ([`RequestError::NotRepresentable`]), never approximated.
//!
//! A policy set marked [`Mode::LogOnly`] is evaluated beside the binding
//! one; [`shadow_difference`] says when its outcome would have differed.
//! [`table::run`] runs a table of requests for a policy repository's CI.
//! [`rule_scope`] writes a person's auto-approval rule's scope as Cedar;
//! [`CedarScope`] checks and evaluates one a person wrote in Cedar.
//!
//! Pure: no I/O, no clock, no async runtime. Reading policy files, the
//! time and recording shadow differences are the callers'.
#![forbid(unsafe_code)]

mod annotations;
mod argv;
mod cedar_scope;
mod head;
mod policy_set;
mod request;
mod rule_scope;
mod schema;
pub mod table;
mod value;
mod verdict;
mod view;

pub use annotations::{APPROVERS, ApprovalQuorum, ID, QUORUM, REQUIRE_APPROVAL};
pub use argv::{ARGV_ATTRIBUTE, ARGV_WORDS};
pub use cedar_scope::{CedarScope, ScopeRefused};
pub use head::Head;
pub use policy_set::{
    MAX_POLICY_BYTES, ParseError, PolicySet, SyntaxError, ValidationIssue, schema_mismatch,
};
pub use request::{CedarRequest, PolicyRequest, RequestError};
pub use rule_scope::{Untranslatable, rule_scope};
pub use schema::{
    AGENT_TYPE, GeneratedSchema, OPERATION_TYPE, PRINCIPAL_TYPE, SESSION_TYPE, SchemaError,
    TARGET_TYPE, schema,
};
pub use verdict::{Difference, Mode, Verdict, VerdictKind, shadow_difference};
