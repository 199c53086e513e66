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
}

impl PolicyArgs {
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
