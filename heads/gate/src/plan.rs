//! How this head runs an operation's effect, decided from the registry's
//! definition BEFORE anything is consumed.
//!
//! The match over [`Effect`] is exhaustive: a new effect kind in the
//! registry does not compile here until someone decides whether this head
//! runs it or refuses it with `unsupported_effect`, which burns nothing
//! because no proof has been consumed when the plan is made. After
//! consumption there is no fallback arm that could strand a spent proof.
//! This module must not run anything itself.

use countersign_ledger::INTENT_LEASE_MARGIN;
use countersign_registry::Effect;

use crate::command::CommandSpec;

/// What this head does to apply an effect it can run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Plan {
    /// A builtin effect, applied inside the ledger's one transaction.
    Builtin {
        /// The builtin effect's name.
        name: String,
    },
    /// A program run between the intent and the completion transactions.
    Command(CommandSpec),
}

impl Plan {
    /// How long the intent of an effect outside the ledger stays leased to
    /// this head: the effect's timeout plus [`INTENT_LEASE_MARGIN`].
    pub(crate) fn lease(&self) -> time::Duration {
        match self {
            Plan::Builtin { .. } => INTENT_LEASE_MARGIN,
            Plan::Command(spec) => {
                let secs = i64::try_from(spec.timeout.as_secs()).unwrap_or(i64::MAX);
                time::Duration::seconds(secs).saturating_add(INTENT_LEASE_MARGIN)
            }
        }
    }
}

/// The plan for `effect`, or the kind's name if this head cannot run it
/// (reported as `unsupported_effect`; nothing is consumed).
pub(crate) fn plan(effect: &Effect) -> Result<Plan, &'static str> {
    match effect {
        Effect::Builtin { name } => Ok(Plan::Builtin { name: name.clone() }),
        Effect::Command {
            program,
            args,
            timeout_secs,
        } => Ok(Plan::Command(CommandSpec {
            program: program.clone(),
            args: args.clone(),
            timeout: std::time::Duration::from_secs(*timeout_secs),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One effect of every kind the registry defines. The match below makes
    /// this list fail to compile when a kind is added without a sample.
    fn one_of_every_kind() -> Vec<Effect> {
        let samples = vec![
            Effect::Builtin {
                name: "schedule.create".into(),
            },
            Effect::Command {
                program: "/bin/true".into(),
                args: vec![],
                timeout_secs: 5,
            },
        ];
        for effect in &samples {
            match effect {
                Effect::Builtin { .. } | Effect::Command { .. } => {}
            }
        }
        samples
    }

    #[test]
    fn every_effect_kind_is_either_planned_or_refused_before_consumption() {
        for effect in one_of_every_kind() {
            match plan(&effect) {
                Ok(Plan::Builtin { name }) => {
                    assert!(matches!(&effect, Effect::Builtin { name: n } if *n == name));
                }
                Ok(Plan::Command(spec)) => {
                    assert!(
                        matches!(&effect, Effect::Command { program, .. } if *program == spec.program)
                    );
                }
                Err(kind) => assert!(!kind.is_empty(), "a refusal names the kind"),
            }
        }
    }

    #[test]
    fn a_command_intent_is_leased_for_its_timeout_and_the_margin() {
        let Ok(plan) = plan(&Effect::Command {
            program: "/bin/true".into(),
            args: vec![],
            timeout_secs: 7,
        }) else {
            panic!("a command is runnable");
        };
        assert_eq!(
            plan.lease(),
            time::Duration::seconds(7) + INTENT_LEASE_MARGIN
        );
    }
}
