//! `countersign-signer policy validate|test|schema` (which `countersign
//! policy` runs): the operator's Cedar policy checked against the schema
//! generated from the registry, for the operator and for a policy
//! repository's CI. Cedar is linked into this binary, never into the
//! `countersign` CLI.
//!
//! This module owns the commands' arguments, reading their files (each
//! bounded), loading the registry the home's configuration names (or the
//! one `--registry` names), and their text output and exit codes. It
//! decides nothing: parsing, validation and evaluation are
//! `countersign-policy`'s, and nothing here touches a key or the ledger.
//!
//! Exit codes: 0 the policy set is valid (every case passed); 1 it is
//! not (a case failed, or a table is malformed); 2 a file, the home or
//! the registry could not be read, so nothing was checked.

use std::fmt::Write as _;
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use countersign_identity::{Config, Home};
use countersign_policy::table::{self, CaseOutcome};
use countersign_policy::{GeneratedSchema, MAX_POLICY_BYTES, ParseError, PolicySet, rule_scope};
use countersign_registry::rule::RuleDefinition;
use countersign_registry::{Registry, RegistryError};
pub use countersign_surface::policy_command::{PolicyArgs, PolicyCommand};

/// Largest test table accepted, in bytes (as large as a policy set).
pub const MAX_TABLE_BYTES: usize = MAX_POLICY_BYTES;

/// The exit code when every check passed.
pub const EXIT_OK: u8 = 0;
/// The exit code when a check failed: the policy set is invalid, a case
/// failed, or the table is malformed.
pub const EXIT_FAILED: u8 = 1;
/// The exit code when nothing could be checked: a file, the home or the
/// registry could not be read.
pub const EXIT_CANNOT_CHECK: u8 = 2;

/// Why nothing could be checked (exit code 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CannotCheck {
    /// A file could not be read, or is not UTF-8 text.
    #[error("cannot read {path}: {reason}")]
    Read {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// A file is larger than its limit.
    #[error("cannot read {path}: it is larger than {limit} bytes")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The limit in bytes.
        limit: usize,
    },
    /// The home or its configuration could not be loaded.
    #[error("{0}; or name a registry file with --registry")]
    Home(String),
    /// The registry could not be loaded.
    #[error("{0}")]
    Registry(String),
    /// No Cedar schema could be generated from the registry.
    #[error("registry {path}: {reason}")]
    Schema {
        /// The registry file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Runs `args` (with `home`, the `--home` given, if any), writing the
/// result to stdout and a failure to read anything to stderr.
pub fn main(args: PolicyArgs, home: Option<PathBuf>) -> ExitCode {
    let mut out = String::new();
    let code = match run(&args, home.as_deref(), &mut out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("countersign-signer: {e}");
            EXIT_CANNOT_CHECK
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
    {
        eprintln!("countersign-signer: cannot write the output: {e}");
        return ExitCode::from(EXIT_CANNOT_CHECK);
    }
    ExitCode::from(code)
}

/// Runs `args`, appending its output to `out`: the exit code, or why
/// nothing could be checked.
pub fn run(args: &PolicyArgs, home: Option<&Path>, out: &mut String) -> Result<u8, CannotCheck> {
    match &args.command {
        PolicyCommand::Validate { file } => {
            let text = read_bounded(file, MAX_POLICY_BYTES)?;
            let (schema, _) = schema_of(args.registry.as_deref(), home)?;
            Ok(match checked(file, &text, &schema, out) {
                Some(set) => {
                    let _ = writeln!(
                        out,
                        "{}: valid: {}, digest {}",
                        file.display(),
                        counted(set.len(), "policy", "policies"),
                        set.digest()
                    );
                    EXIT_OK
                }
                None => EXIT_FAILED,
            })
        }
        PolicyCommand::Test { table, policies } => {
            let text = read_bounded(policies, MAX_POLICY_BYTES)?;
            let cases = read_bounded(table, MAX_TABLE_BYTES)?;
            let (schema, _) = schema_of(args.registry.as_deref(), home)?;
            let Some(set) = checked(policies, &text, &schema, out) else {
                let _ = writeln!(out, "no case was run: the policy set does not validate");
                return Ok(EXIT_FAILED);
            };
            Ok(match table::run(&set, &schema, &cases) {
                Ok(outcomes) => report(&outcomes, out),
                Err(e) => {
                    let _ = writeln!(out, "{}: {e}", table.display());
                    EXIT_FAILED
                }
            })
        }
        PolicyCommand::Schema => {
            let (schema, path) = schema_of(args.registry.as_deref(), home)?;
            let text = schema.to_cedarschema().map_err(|e| CannotCheck::Schema {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            out.push_str(&text);
            if !text.ends_with('\n') {
                out.push('\n');
            }
            Ok(EXIT_OK)
        }
        PolicyCommand::RuleScope { file, id } => {
            let text = read_bounded(file, MAX_POLICY_BYTES)?;
            let (schema, _) = schema_of(args.registry.as_deref(), home)?;
            let rule = match RuleDefinition::parse(text.as_bytes()) {
                Ok(rule) => rule,
                Err(e) => {
                    let _ = writeln!(out, "{}: {e}", file.display());
                    return Ok(EXIT_FAILED);
                }
            };
            let policies = match rule_scope(id, &rule, &schema) {
                Ok(policies) => policies,
                Err(e) => {
                    let _ = writeln!(out, "{}: {e}", file.display());
                    return Ok(EXIT_FAILED);
                }
            };
            // What it wrote must be a set the signer would accept.
            Ok(match checked(file, &policies, &schema, out) {
                Some(_) => {
                    out.push_str(&policies);
                    EXIT_OK
                }
                None => {
                    let _ = writeln!(
                        out,
                        "{}: the translation does not validate against the registry's schema",
                        file.display()
                    );
                    EXIT_FAILED
                }
            })
        }
        // It reads the audit trail, not a policy: `countersign` runs it.
        PolicyCommand::Diff { .. } => Err(CannotCheck::Read {
            path: "the ledger".into(),
            reason: "`policy diff` reads the audit trail: run it as `countersign policy diff`"
                .into(),
        }),
    }
}

/// `n` with the singular or plural noun.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The policy set in `text` (from `file`) if it parses and validates
/// against `schema`; else `None`, each issue written to `out` with the
/// closing `FILE: invalid (K issues)` line.
fn checked(
    file: &Path,
    text: &str,
    schema: &GeneratedSchema,
    out: &mut String,
) -> Option<PolicySet> {
    let name = file.display();
    let issues: Vec<String> = match PolicySet::parse(text) {
        Ok(set) => match set.validate(schema) {
            Ok(()) => return Some(set),
            // Cedar's message names the policy (`for policy `id`, ...`):
            // named again only when it does not.
            Err(issues) => issues
                .iter()
                .map(|issue| {
                    if issue.message.contains(&format!("`{}`", issue.policy)) {
                        format!("{name}: {}", issue.message)
                    } else {
                        format!("{name}: {issue}")
                    }
                })
                .collect(),
        },
        Err(ParseError::Syntax(errors)) => errors
            .iter()
            .map(|e| format!("{name}:{}:{}: {}", e.line, e.column, e.message))
            .collect(),
        Err(other) => vec![format!("{name}: {other}")],
    };
    for issue in &issues {
        let _ = writeln!(out, "{issue}");
    }
    let _ = writeln!(
        out,
        "{name}: invalid ({})",
        counted(issues.len(), "issue", "issues")
    );
    None
}

/// One line per case, then the summary; the exit code.
fn report(outcomes: &[CaseOutcome], out: &mut String) -> u8 {
    let listed = |policies: &[String]| format!("[{}]", policies.join(", "));
    let mut failed = 0;
    for case in outcomes {
        let got = format!(
            "{} {}",
            case.verdict.kind().as_str(),
            listed(case.policies())
        );
        if case.passed {
            let _ = writeln!(out, "ok   {}: {got}", case.name);
        } else {
            failed += 1;
            let expected = match &case.expected_policies {
                Some(policies) => format!("{} {}", case.expected.as_str(), listed(policies)),
                None => case.expected.as_str().to_owned(),
            };
            let _ = writeln!(out, "FAIL {}: expected {expected}, got {got}", case.name);
        }
    }
    let _ = writeln!(
        out,
        "{}, {failed} failed",
        counted(outcomes.len(), "case", "cases")
    );
    if failed == 0 { EXIT_OK } else { EXIT_FAILED }
}

/// The registry file: `--registry`, else the one the home's
/// configuration names.
fn registry_path(registry: Option<&Path>, home: Option<&Path>) -> Result<PathBuf, CannotCheck> {
    if let Some(path) = registry {
        return Ok(path.to_path_buf());
    }
    let home = match home {
        Some(path) => Home::at(path),
        None => Home::resolve(),
    }
    .map_err(|e| CannotCheck::Home(e.to_string()))?;
    let config = Config::load(&home).map_err(|e| CannotCheck::Home(e.to_string()))?;
    Ok(config.registry)
}

/// The Cedar schema of the registry, loaded as the signer loads it
/// (`CurrentRegistry::open`: the file and the gateway files beside it,
/// every argument schema compiled), and the registry file's path.
fn schema_of(
    registry: Option<&Path>,
    home: Option<&Path>,
) -> Result<(GeneratedSchema, PathBuf), CannotCheck> {
    let path = registry_path(registry, home)?;
    let loaded = Registry::load(&path).map_err(|e| match e {
        // Names the path already.
        RegistryError::Io { .. } => CannotCheck::Registry(e.to_string()),
        other => CannotCheck::Registry(format!("registry {}: {other}", path.display())),
    })?;
    let schema = countersign_policy::schema(&loaded).map_err(|e| CannotCheck::Schema {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok((schema, path))
}

/// The UTF-8 text of `path`, refused past `limit` bytes.
fn read_bounded(path: &Path, limit: usize) -> Result<String, CannotCheck> {
    let name = || path.display().to_string();
    let read = |e: std::io::Error| CannotCheck::Read {
        path: name(),
        reason: e.to_string(),
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(read)?
        .take(u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() > limit {
        return Err(CannotCheck::TooLarge {
            path: name(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| CannotCheck::Read {
        path: name(),
        reason: "not UTF-8 text".into(),
    })
}
