//! Auto-approval rule definitions: their one strict JSON form, the checks a
//! definition must pass before a person may create it, the scope text a
//! person reads before creating it, and whether a proposal falls inside it.
//!
//! A definition (canonical JSON, RFC 8785):
//!
//! ```json
//! {"constraints":[{"pointer":"/name","equals":"nightly"},
//!                 {"pointer":"/name","one_of":["a","b"]},
//!                 {"pointer":"/count","range":{"min":1,"max":10}},
//!                 {"pointer":"/cron","prefix":"0 3 "},
//!                 {"pointer":"/cmd","argv":{"program":"git",
//!                   "args":["log",{"one_of":["-1","-5"]}],"more_args":false}}],
//!  "expires_at":"2026-12-01T12:00:00Z","max_uses":10,
//!  "operations":["schedule.create"],"per_hour":5,"sessions":["agent-1"]}
//! ```
//!
//! Every key is required but `cedar` (`constraints` may be empty, meaning
//! any arguments, or absent with `cedar`); unknown keys, a constraint with
//! any other test or with two tests, and values of the wrong type are
//! refused. `sessions` is a list of
//! sessions, or exactly `["*"]` for every session of the principal.
//! A constraint holds only when the argument at its JSON pointer exists and
//! passes the test: `equals` (canonical JSON equality), `one_of` (equal to
//! one of them), `range` (a number, `min <= n <= max`, either bound
//! optional, both inclusive), `prefix` (a string starting with it),
//! `argv` (a shell command whose words, as [`argv::split`] reads them,
//! match [`argv::ArgvPattern`]; a command it refuses never matches).
//!
//! A definition may also carry its scope written in Cedar: `cedar`, the
//! text of `permit` (and `forbid`) policies over the request the
//! operator's policy sees (see docs/policy.md). Then `constraints` may be
//! left out, and the rule covers a proposal only when, besides its
//! operations, sessions and constraints, those policies permit it. This
//! crate links no Cedar: [`RuleDefinition::covers`] never covers for such
//! a rule, and the signer evaluates its Cedar part
//! ([`RuleDefinition::covers_besides_cedar`] is the rest).
//!
//! This module decides nothing about uses, rates, revocation or who may
//! create a rule: the ledger counts and checks those inside its
//! transactions, and the signer authorizes the caller.

use std::fmt::Write as _;

use countersign_verifier::canonical;
use countersign_verifier::{Session, timestamp};
use serde_json::Value;
use time::{Duration, OffsetDateTime};

use crate::{Registry, terminal_safe};

pub mod argv;

use argv::ArgvPattern;

/// The built-in operation through which a model may propose a rule: its
/// arguments are a rule definition, and only a person's approval creates
/// the rule. No rule can ever cover it.
pub const RULE_CREATE: &str = "rule.create";
/// The operation a coding agent's shell call is proposed as.
pub const SHELL_OPERATION: &str = "agent.shell";
/// Where a shell call's command is, in [`SHELL_OPERATION`]'s arguments.
pub const SHELL_COMMAND_POINTER: &str = "/tool_input/command";
/// Most operations one rule names.
pub const MAX_RULE_OPERATIONS: usize = 32;
/// Most constraints one rule holds.
pub const MAX_RULE_CONSTRAINTS: usize = 32;
/// Most sessions one rule names.
pub const MAX_RULE_SESSIONS: usize = 32;
/// Most values in one `one_of`.
pub const MAX_ONE_OF: usize = 64;
/// Largest `max_uses`.
pub const MAX_RULE_USES: u64 = 100_000;
/// Largest `per_hour`.
pub const MAX_RULE_PER_HOUR: u64 = 3_600;
/// Longest a rule may live from its creation or revision.
pub const MAX_RULE_LIFETIME: Duration = Duration::days(90);
/// Largest definition text, in bytes.
pub const MAX_RULE_BYTES: usize = 16 * 1024;

/// Why a rule definition is refused. Nothing was created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// Not a rule definition (JSON, keys, types, bounds); the text says
    /// which part.
    #[error("not a valid rule definition: {0}")]
    Malformed(String),
    /// It names an operation the registry does not have.
    #[error("the rule names operation {0:?}, which is not registered")]
    UnknownOperation(String),
    /// It names an operation a rule may never approve: one that requires
    /// a passkey (a rule is not a person's passkey), `rule.create`, or any
    /// while the installation requires a passkey for every approval.
    #[error("a rule may not approve {0:?}: {1}")]
    NotCoverable(String, &'static str),
    /// It names [`SHELL_OPERATION`] without matching its command by
    /// `argv` alone: a string test (`prefix`, `equals`, `one_of`) or no
    /// test at all on [`SHELL_COMMAND_POINTER`]. `git status; rm -rf ~`
    /// starts with `git status`; a shell rule is never a string test.
    #[error("a rule for agent.shell must match /tool_input/command with argv, and argv only: {0}")]
    ShellNeedsArgv(&'static str),
    /// Its scope written in Cedar does not parse, does not validate
    /// against the registry's schema, or may permit a shell command whose
    /// program it does not name; the text says which.
    #[error("the rule's Cedar scope is refused: {0}")]
    Cedar(String),
    /// Its expiry is past or further than [`MAX_RULE_LIFETIME`] away.
    #[error("the rule's expires_at must be in the future and at most 90 days away")]
    Expiry,
}

/// One argument test.
#[derive(Debug, Clone, PartialEq)]
pub enum Test {
    /// Canonical JSON equality.
    Equals(Value),
    /// Equal to one of these.
    OneOf(Vec<Value>),
    /// A number within the bounds (inclusive; absent: unbounded).
    Range {
        /// Lower bound.
        min: Option<f64>,
        /// Upper bound.
        max: Option<f64>,
    },
    /// A string starting with this.
    Prefix(String),
    /// A shell command whose argv matches (never a string prefix).
    Argv(ArgvPattern),
}

/// A test at a JSON pointer into the arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraint {
    /// RFC 6901 pointer, never empty (the arguments themselves).
    pub pointer: String,
    /// What the value there must pass.
    pub test: Test,
}

/// The sessions a rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sessions {
    /// Every session of the principal (`["*"]`).
    Any,
    /// Exactly these.
    Only(Vec<Session>),
}

/// A parsed rule definition with its canonical text and hash.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleDefinition {
    /// The operations it may approve.
    pub operations: Vec<String>,
    /// Every one must hold.
    pub constraints: Vec<Constraint>,
    /// The sessions it covers.
    pub sessions: Sessions,
    /// Its scope written in Cedar, if any: policies that must permit what
    /// it covers (evaluated by the signer, not here).
    pub cedar: Option<String>,
    /// Most uses over the rule's life (all versions).
    pub max_uses: u64,
    /// Most uses in any hour.
    pub per_hour: u64,
    /// When it stops approving (exclusive).
    pub expires_at: OffsetDateTime,
    canonical: String,
    sha256: String,
}

impl RuleDefinition {
    /// Reads a definition strictly (the project's canonical parser first, so
    /// duplicate keys and unrepresentable numbers are refused), without
    /// checking it against a registry or the clock: for stored definitions.
    pub fn parse(text: &[u8]) -> Result<RuleDefinition, RuleError> {
        let value = canonical::parse(text, MAX_RULE_BYTES)
            .map_err(|e| RuleError::Malformed(format!("JSON: {e}")))?;
        RuleDefinition::from_value(value)
    }

    /// Reads a definition from a parsed value (see [`RuleDefinition::parse`]).
    pub fn from_value(value: Value) -> Result<RuleDefinition, RuleError> {
        let canonical = canonical::to_canonical(&value)
            .map_err(|e| RuleError::Malformed(format!("JSON: {e}")))?;
        if canonical.len() > MAX_RULE_BYTES {
            return Err(malformed("the definition is too large"));
        }
        let Value::Object(mut m) = value else {
            return Err(malformed("the definition must be a JSON object"));
        };
        let cedar = match m.remove("cedar") {
            None => None,
            Some(Value::String(text)) if !text.trim().is_empty() => Some(text),
            Some(_) => {
                return Err(malformed(
                    "cedar must be the non-empty text of Cedar policies",
                ));
            }
        };
        let constraints = m.remove("constraints");
        let mut take = |key: &str| {
            m.remove(key)
                .ok_or_else(|| malformed(&format!("{key} is required")))
        };
        let operations = strings(take("operations")?, "operations", MAX_RULE_OPERATIONS)?;
        let constraints = match constraints {
            None if cedar.is_some() => Vec::new(),
            None => return Err(malformed("constraints is required")),
            Some(Value::Array(items)) if items.len() <= MAX_RULE_CONSTRAINTS => items
                .into_iter()
                .map(constraint)
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(malformed(&format!(
                    "constraints must be an array of at most {MAX_RULE_CONSTRAINTS}"
                )));
            }
        };
        let sessions = sessions(take("sessions")?)?;
        let max_uses = bounded(take("max_uses")?, "max_uses", MAX_RULE_USES)?;
        let per_hour = bounded(take("per_hour")?, "per_hour", MAX_RULE_PER_HOUR)?;
        let expires_at = match take("expires_at")? {
            Value::String(text) => timestamp::parse(&text)
                .map_err(|_| malformed("expires_at must be YYYY-MM-DDTHH:MM:SSZ"))?,
            _ => return Err(malformed("expires_at must be a string")),
        };
        if let Some(key) = m.keys().next() {
            return Err(malformed(&format!("unknown key {:?}", terminal_safe(key))));
        }
        let sha256 = canonical::sha256_hex(canonical.as_bytes());
        Ok(RuleDefinition {
            operations,
            constraints,
            sessions,
            cedar,
            max_uses,
            per_hour,
            expires_at,
            canonical,
            sha256,
        })
    }

    /// What a person may create: every operation registered, none that a
    /// rule may never approve (`passkeys_required`: the installation wants
    /// a passkey for every approval), and an expiry after `now` and at most
    /// [`MAX_RULE_LIFETIME`] after it.
    pub fn check_creatable(
        &self,
        registry: &Registry,
        passkeys_required: bool,
        now: OffsetDateTime,
    ) -> Result<(), RuleError> {
        for name in &self.operations {
            let op = registry
                .get(name)
                .ok_or_else(|| RuleError::UnknownOperation(name.clone()))?;
            if let Some(why) = not_coverable(
                name,
                op.requires_passkey(),
                op.quorum.is_some(),
                passkeys_required,
            ) {
                return Err(RuleError::NotCoverable(name.clone(), why));
            }
        }
        if self.operations.iter().any(|o| o == SHELL_OPERATION) {
            shell_constraints_are_argv(&self.constraints, self.cedar.is_some())?;
        }
        if self.expires_at <= now || self.expires_at > now + MAX_RULE_LIFETIME {
            return Err(RuleError::Expiry);
        }
        Ok(())
    }

    /// Whether a proposal of `operation` from `session` with `args` falls
    /// inside this rule (scope only: not expiry, uses, rate or liveness).
    /// Never for a rule with a Cedar scope, which this crate cannot
    /// evaluate: see [`RuleDefinition::covers_besides_cedar`].
    pub fn covers(&self, operation: &str, session: &str, args: &Value) -> bool {
        self.cedar.is_none() && self.covers_besides_cedar(operation, session, args)
    }

    /// [`RuleDefinition::covers`] but for the Cedar scope, if the rule has
    /// one: the caller evaluates that too, and the rule covers the
    /// proposal only when both do.
    ///
    /// A shell call is covered only by a rule that matches its command by
    /// `argv` alone (see [`RuleError::ShellNeedsArgv`]), or whose Cedar
    /// scope names its program, so a rule stored before that check was
    /// made at creation approves no shell call.
    pub fn covers_besides_cedar(&self, operation: &str, session: &str, args: &Value) -> bool {
        self.operations.iter().any(|o| o == operation)
            && (operation != SHELL_OPERATION || self.shell_commands_matched_by_argv())
            && match &self.sessions {
                Sessions::Any => true,
                Sessions::Only(list) => list.iter().any(|s| s.as_str() == session),
            }
            && self
                .constraints
                .iter()
                .all(|c| args.pointer(&c.pointer).is_some_and(|v| c.test.passes(v)))
    }

    /// Whether this rule's scope can cover a shell call at all: its tests
    /// on the command are all `argv`, and there is one, or its Cedar scope
    /// (which the signer checks names the program) stands in for it.
    pub fn shell_commands_matched_by_argv(&self) -> bool {
        shell_constraints_are_argv(&self.constraints, self.cedar.is_some()).is_ok()
    }

    /// The canonical JSON text (what is stored and hashed).
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// Lowercase hex SHA-256 of [`RuleDefinition::canonical`].
    pub fn sha256_hex(&self) -> &str {
        &self.sha256
    }

    /// The exact scope, as a person reads it before creating the rule.
    /// Values are canonical JSON made terminal-safe.
    pub fn scope_text(&self) -> String {
        let mut out = String::new();
        let shown =
            |v: &Value| terminal_safe(&canonical::to_canonical(v).unwrap_or_default()).into_owned();
        let _ = writeln!(
            out,
            "Rule:       approves matching proposals WITHOUT asking a person"
        );
        let ops: Vec<_> = self.operations.iter().map(|o| terminal_safe(o)).collect();
        let _ = writeln!(out, "Operations: {}", ops.join(", "));
        if self.constraints.is_empty() && self.cedar.is_none() {
            let _ = writeln!(out, "Arguments:  ANY arguments (no constraint)");
        }
        for (i, c) in self.constraints.iter().enumerate() {
            let label = if i == 0 { "Arguments: " } else { "           " };
            let pointer = terminal_safe(&c.pointer);
            let test = match &c.test {
                Test::Equals(v) => format!("equals {}", shown(v)),
                Test::OneOf(vs) => {
                    let list: Vec<_> = vs.iter().map(shown).collect();
                    format!("is one of {}", list.join(", "))
                }
                Test::Range { min, max } => match (min, max) {
                    (Some(a), Some(b)) => format!("is a number from {a} to {b} (inclusive)"),
                    (Some(a), None) => format!("is a number of at least {a}"),
                    (None, Some(b)) => format!("is a number of at most {b}"),
                    (None, None) => "is a number".to_owned(),
                },
                Test::Prefix(p) => format!(
                    "is a string starting with {}",
                    shown(&Value::String(p.clone()))
                ),
                Test::Argv(pattern) => pattern.describe(),
            };
            let _ = writeln!(out, "{label} {pointer} {test}");
        }
        let sessions = match &self.sessions {
            Sessions::Any => "ANY session of this principal".to_owned(),
            Sessions::Only(list) => list
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(out, "Sessions:   {sessions}");
        if let Some(cedar) = &self.cedar {
            let _ = writeln!(
                out,
                "Cedar:      only what these policies permit (and no forbid among them):"
            );
            for line in cedar.lines() {
                let _ = writeln!(out, "  | {}", terminal_safe(line));
            }
        }
        let _ = writeln!(
            out,
            "Uses:       at most {} in total, at most {} per hour",
            self.max_uses, self.per_hour
        );
        let expires = timestamp::format(self.expires_at).unwrap_or_default();
        let _ = writeln!(out, "Expires:    {expires}");
        let _ = writeln!(out, "Definition: sha256 {}", self.sha256);
        out
    }
}

/// Why a rule may never approve `name`, if it may not: `rule.create`,
/// `gateway.pin`, an
/// operation that requires a passkey or a quorum of named approvers, or
/// any operation where the installation requires a passkey for every
/// approval.
pub fn not_coverable(
    name: &str,
    requires_passkey: bool,
    requires_quorum: bool,
    passkeys_required: bool,
) -> Option<&'static str> {
    if name == RULE_CREATE {
        Some("a rule never approves the creation of a rule")
    } else if name == crate::gateway::PIN_OPERATION {
        Some("a rule never accepts an upstream tool's definition")
    } else if requires_quorum {
        Some("the operation requires a quorum of named approvers")
    } else if requires_passkey {
        Some("the operation requires a person's passkey")
    } else if passkeys_required {
        Some("this installation requires a passkey for every approval")
    } else {
        None
    }
}

/// A shell rule's command tests: at least one, and every one `argv`. A
/// test on a pointer above the command (`/tool_input`, `/tool_input/`...)
/// could only hold for an exact value (`equals`, `one_of`) or never
/// (`prefix`, `range` on an object), so only the command's own pointer
/// needs the check.
///
/// With a Cedar scope (`in_cedar`), the command may have no test here:
/// the signer refuses a Cedar scope that may permit a shell command
/// without naming its program (`context.argv.w0`).
fn shell_constraints_are_argv(constraints: &[Constraint], in_cedar: bool) -> Result<(), RuleError> {
    let on_command = || {
        constraints
            .iter()
            .filter(|c| c.pointer == SHELL_COMMAND_POINTER)
    };
    if let Some(c) = on_command().find(|c| !matches!(c.test, Test::Argv(_))) {
        return Err(RuleError::ShellNeedsArgv(match c.test {
            Test::Prefix(_) => {
                "prefix is a string test, and a shell command is never matched by a string prefix"
            }
            Test::Equals(_) | Test::OneOf(_) => {
                "equals and one_of compare the command's text, not the words a shell runs"
            }
            Test::Range { .. } => "range is a number test",
            Test::Argv(_) => "argv",
        }));
    }
    if on_command().next().is_none() && !in_cedar {
        return Err(RuleError::ShellNeedsArgv(
            "without an argv test on it, the rule would cover every command",
        ));
    }
    Ok(())
}

impl Test {
    fn passes(&self, value: &Value) -> bool {
        match self {
            Test::Equals(expected) => same(expected, value),
            Test::OneOf(options) => options.iter().any(|o| same(o, value)),
            Test::Range { min, max } => value.as_f64().is_some_and(|n| {
                value.is_number()
                    && min.is_none_or(|min| n >= min)
                    && max.is_none_or(|max| n <= max)
            }),
            Test::Prefix(prefix) => value
                .as_str()
                .is_some_and(|s| s.starts_with(prefix.as_str())),
            Test::Argv(pattern) => value.as_str().is_some_and(|s| pattern.matches_command(s)),
        }
    }
}

/// Canonical JSON equality (`1` and `1.0` are one number; key order never
/// matters).
fn same(a: &Value, b: &Value) -> bool {
    match (canonical::to_canonical(a), canonical::to_canonical(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn malformed(why: &str) -> RuleError {
    RuleError::Malformed(why.to_owned())
}

/// 1..=`limit` distinct non-empty strings.
fn strings(value: Value, key: &str, limit: usize) -> Result<Vec<String>, RuleError> {
    let bad = || {
        malformed(&format!(
            "{key} must be 1 to {limit} distinct non-empty strings"
        ))
    };
    let Value::Array(items) = value else {
        return Err(bad());
    };
    if items.is_empty() || items.len() > limit {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() && !out.contains(&s) => out.push(s),
            _ => return Err(bad()),
        }
    }
    Ok(out)
}

fn sessions(value: Value) -> Result<Sessions, RuleError> {
    let list = strings(value, "sessions", MAX_RULE_SESSIONS)?;
    if list.iter().any(|s| s == "*") {
        return match list.len() {
            1 => Ok(Sessions::Any),
            _ => Err(malformed("sessions: \"*\" stands alone")),
        };
    }
    list.into_iter()
        .map(|s| Session::parse(s).map_err(|e| malformed(&format!("sessions: {e}"))))
        .collect::<Result<Vec<_>, _>>()
        .map(Sessions::Only)
}

fn bounded(value: Value, key: &str, limit: u64) -> Result<u64, RuleError> {
    value
        .as_u64()
        .filter(|n| (1..=limit).contains(n))
        .ok_or_else(|| malformed(&format!("{key} must be an integer from 1 to {limit}")))
}

/// A valid, non-empty RFC 6901 pointer (every `~` escapes `0` or `1`).
fn is_pointer(p: &str) -> bool {
    p.starts_with('/')
        && p.len() <= 256
        && p.split('~')
            .skip(1)
            .all(|rest| rest.starts_with(['0', '1']))
}

fn constraint(value: Value) -> Result<Constraint, RuleError> {
    let Value::Object(mut m) = value else {
        return Err(malformed("each constraint must be an object"));
    };
    let pointer = match m.remove("pointer") {
        Some(Value::String(p)) if is_pointer(&p) => p,
        _ => {
            return Err(malformed(
                "each constraint needs a pointer: a JSON pointer such as \"/name\"",
            ));
        }
    };
    let (kind, argument) = match (m.len(), m.into_iter().next()) {
        (1, Some(entry)) => entry,
        _ => {
            return Err(malformed(
                "each constraint has exactly one test: equals, one_of, range, prefix or argv",
            ));
        }
    };
    let test = match kind.as_str() {
        "equals" => Test::Equals(argument),
        "one_of" => match argument {
            Value::Array(items) if (1..=MAX_ONE_OF).contains(&items.len()) => Test::OneOf(items),
            _ => {
                return Err(malformed(&format!(
                    "one_of must be an array of 1 to {MAX_ONE_OF} values"
                )));
            }
        },
        "range" => range(argument)?,
        "prefix" => match argument {
            Value::String(p) if !p.is_empty() => Test::Prefix(p),
            _ => return Err(malformed("prefix must be a non-empty string")),
        },
        "argv" => Test::Argv(ArgvPattern::from_value(argument)?),
        other => {
            return Err(malformed(&format!(
                "unknown constraint test {:?} (equals, one_of, range, prefix or argv)",
                terminal_safe(other)
            )));
        }
    };
    Ok(Constraint { pointer, test })
}

fn range(value: Value) -> Result<Test, RuleError> {
    let bad = || {
        malformed(
            "range must be an object with a number min, max or both (min <= max), nothing else",
        )
    };
    let Value::Object(mut m) = value else {
        return Err(bad());
    };
    let mut bound = |key: &str| match m.remove(key) {
        None => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|_| v.is_number())
            .map(Some)
            .ok_or_else(bad),
    };
    let (min, max) = (bound("min")?, bound("max")?);
    if !m.is_empty() || (min.is_none() && max.is_none()) {
        return Err(bad());
    }
    if let (Some(a), Some(b)) = (min, max)
        && a > b
    {
        return Err(bad());
    }
    Ok(Test::Range { min, max })
}

#[cfg(test)]
mod tests;
