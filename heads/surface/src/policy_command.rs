//! The `policy` command line (`validate`, `test`, `schema`), declared
//! once for both binaries that have it: `countersign-signer policy` parses
//! and runs it (the Cedar engine is linked there only), and `countersign
//! policy` parses it too, for its help and the parity gate, then hands it
//! to the signer's binary as [`PolicyArgs::to_args`] writes it, so the two
//! command lines cannot drift apart. This module declares; it must not
//! read a file or run anything.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `policy [--registry PATH] <command>`
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct PolicyArgs {
    /// The registry file to generate the schema from, with the gateway
    /// files beside it (default: the one the home's configuration names;
    /// with this, no home is read).
    #[arg(long, global = true, value_name = "PATH")]
    pub registry: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// The policy commands.
#[derive(Debug, Clone, PartialEq, Eq, Subcommand)]
pub enum PolicyCommand {
    /// Parse a Cedar policy set and validate it against the registry's schema
    ///
    /// Prints `FILE: valid: N policies, digest SHA256` (exit 0), or each
    /// issue on its own line and `FILE: invalid (K issues)` (exit 1).
    Validate {
        /// The policy set (Cedar text).
        file: PathBuf,
    },
    /// Run a test table of requests against a policy set
    ///
    /// One `ok` or `FAIL` line per case, then `N cases, M failed`; exit 1
    /// if a case failed or the policy set does not validate (then no case
    /// is run).
    Test {
        /// The test table (TOML, `[[case]]` entries).
        table: PathBuf,
        /// The policy set the cases run against.
        #[arg(long, value_name = "FILE")]
        policies: PathBuf,
    },
    /// Print the Cedar schema generated from the registry (.cedarschema form)
    Schema,
    /// Write an auto-approval rule's scope as Cedar policies
    ///
    /// One `permit` per operation of the rule definition (the JSON that
    /// `rules create` takes), each `@id("<ID>/<operation>")`, validated
    /// against the registry's schema; a permit is what a person's rule may
    /// approve under the operator's policy. A test Cedar cannot express
    /// exactly (`argv`, `equals` on an array) is refused with its reason
    /// (exit 1).
    RuleScope {
        /// The rule definition (JSON).
        file: PathBuf,
        /// The id the policies are named after.
        #[arg(long, default_value = "rule")]
        id: String,
    },
    /// List the proposals on which the log-only policy set would have
    /// decided otherwise, newest first
    ///
    /// Read from the audit trail (each proposal's `proposed` event): the
    /// binding verdict acted on and the log-only one, each with its
    /// determining policies. Run by `countersign` itself (it reads the
    /// ledger, not a policy file).
    Diff {
        /// At most this many (1..=10000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
    },
}

impl PolicyArgs {
    /// Whether this is `diff`, which `countersign` runs itself over the
    /// ledger (the others check files, in the signer's binary).
    pub fn reads_the_ledger(&self) -> bool {
        matches!(self.command, PolicyCommand::Diff { .. })
    }

    /// These arguments as a command line after `policy` (without a
    /// global flag such as `--home`) that parses back into them, even
    /// for a path that starts with `-`: flags as `--flag=VALUE`, the
    /// positional path after `--`.
    pub fn to_args(&self) -> Vec<OsString> {
        let flag = |name: &str, value: &PathBuf| {
            let mut arg = OsString::from(format!("--{name}="));
            arg.push(value);
            arg
        };
        let mut out: Vec<OsString> = Vec::new();
        if let Some(registry) = &self.registry {
            out.push(flag("registry", registry));
        }
        match &self.command {
            PolicyCommand::Validate { file } => {
                out.extend(["validate".into(), "--".into(), file.into()]);
            }
            PolicyCommand::Test { table, policies } => out.extend([
                "test".into(),
                flag("policies", policies),
                "--".into(),
                table.into(),
            ]),
            PolicyCommand::Schema => out.push("schema".into()),
            PolicyCommand::RuleScope { file, id } => {
                let mut flag_id = OsString::from("--id=");
                flag_id.push(id);
                out.extend(["rule-scope".into(), flag_id, "--".into(), file.into()]);
            }
            PolicyCommand::Diff { limit } => {
                out.extend(["diff".into(), format!("--limit={limit}").into()]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Line {
        #[command(flatten)]
        policy: PolicyArgs,
    }

    fn parsed(args: &[&str]) -> PolicyArgs {
        Line::try_parse_from(std::iter::once("policy").chain(args.iter().copied()))
            .unwrap()
            .policy
    }

    #[test]
    fn every_command_line_parses_back_from_what_to_args_writes() {
        for args in [
            &["validate", "a file.cedar"][..],
            &["validate", "p.cedar", "--registry", "/r/operations.toml"],
            &[
                "--registry",
                "r.toml",
                "test",
                "t.toml",
                "--policies",
                "p.cedar",
            ],
            &[
                "test",
                "--policies=-p.cedar",
                "--registry=-r",
                "--",
                "-t.toml",
            ],
            &["validate", "--", "--registry"],
            &["schema"],
            &["schema", "--registry", "r.toml"],
            &["diff", "--limit", "7"],
            &["rule-scope", "r.json", "--id", "nightly"],
            &["rule-scope", "--", "-r.json"],
        ] {
            let first = parsed(args);
            let written = first.to_args();
            let again = Line::try_parse_from(
                std::iter::once(OsString::from("policy")).chain(written.iter().cloned()),
            )
            .unwrap()
            .policy;
            assert_eq!(again, first, "{args:?} -> {written:?}");
        }
    }
}
