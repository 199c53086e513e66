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
use countersign_registry::{Effect, WebhookUrl};

use crate::command::CommandSpec;
use crate::webhook::WebhookSpec;

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
    /// An HTTP POST sent between the intent and the completion transactions.
    Webhook(WebhookSpec),
}

impl Plan {
    /// How long the intent of an effect outside the ledger stays leased to
    /// this head: the effect's timeout plus [`INTENT_LEASE_MARGIN`].
    pub(crate) fn lease(&self) -> time::Duration {
        match self {
            Plan::Builtin { .. } => INTENT_LEASE_MARGIN,
            Plan::Command(CommandSpec { timeout, .. })
            | Plan::Webhook(WebhookSpec { timeout, .. }) => {
                let secs = i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX);
                time::Duration::seconds(secs).saturating_add(INTENT_LEASE_MARGIN)
            }
        }
    }
}

/// The plan for `effect`, or the kind's name if this head cannot run it
/// (reported as `unsupported_effect`; nothing is consumed).
pub(crate) fn plan(effect: &Effect) -> Result<Plan, &'static str> {
    match effect {
        Effect::Builtin(builtin) => Ok(Plan::Builtin {
            name: builtin.name.clone(),
        }),
        Effect::Command(command) => Ok(Plan::Command(CommandSpec {
            program: command.program.clone(),
            args: command.args.clone(),
            timeout: std::time::Duration::from_secs(command.timeout_secs),
        })),
        Effect::Webhook(webhook) => {
            // The registry refused every URL that does not parse, so this
            // refusal (which burns nothing) only guards a registry built
            // some other way.
            let url = WebhookUrl::parse(&webhook.url).map_err(|_| "webhook")?;
            Ok(Plan::Webhook(WebhookSpec {
                url,
                timeout: std::time::Duration::from_secs(webhook.timeout_secs),
                accept_status: webhook.accept_status.clone(),
                trust_roots: webhook.trust_roots.clone(),
            }))
        }
        // A person's approval of rule.create creates the rule in the
        // signer; no proof exists for a head to apply.
        Effect::Rule => Err("rule"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_registry::effect;

    /// One effect of every kind the registry defines. The match below makes
    /// this list fail to compile when a kind is added without a sample.
    fn one_of_every_kind() -> Vec<Effect> {
        let samples = vec![
            Effect::Builtin(effect::Builtin {
                name: "schedule.create".into(),
            }),
            Effect::Command(effect::Command {
                program: "/bin/true".into(),
                args: vec![],
                timeout_secs: 5,
            }),
            Effect::Webhook(effect::Webhook {
                url: "https://localhost:8443/hook".into(),
                timeout_secs: 5,
                accept_status: vec![200],
                trust_roots: Some("/etc/ca.pem".into()),
                allow_plain_http_loopback: false,
            }),
            Effect::Rule,
        ];
        for effect in &samples {
            match effect {
                Effect::Builtin(_) | Effect::Command(_) | Effect::Webhook(_) | Effect::Rule => {}
            }
        }
        samples
    }

    #[test]
    fn every_effect_kind_is_either_planned_or_refused_before_consumption() {
        for effect in one_of_every_kind() {
            match plan(&effect) {
                Ok(Plan::Builtin { name }) => {
                    assert!(matches!(&effect, Effect::Builtin(b) if b.name == name));
                }
                Ok(Plan::Command(spec)) => {
                    assert!(matches!(&effect, Effect::Command(c) if c.program == spec.program));
                }
                Ok(Plan::Webhook(spec)) => {
                    assert!(
                        matches!(&effect, Effect::Webhook(w) if w.url.starts_with("https://localhost:8443"))
                    );
                    assert_eq!(spec.url.path_and_query(), "/hook");
                }
                Err(kind) => assert!(!kind.is_empty(), "a refusal names the kind"),
            }
        }
    }

    #[test]
    fn a_command_intent_is_leased_for_its_timeout_and_the_margin() {
        let Ok(plan) = plan(&Effect::Command(effect::Command {
            program: "/bin/true".into(),
            args: vec![],
            timeout_secs: 7,
        })) else {
            panic!("a command is runnable");
        };
        assert_eq!(
            plan.lease(),
            time::Duration::seconds(7) + INTENT_LEASE_MARGIN
        );
    }

    #[test]
    fn a_webhook_intent_is_leased_for_its_timeout_and_the_margin() {
        let Ok(plan) = plan(&Effect::Webhook(effect::Webhook {
            url: "http://127.0.0.1:9/hook".into(),
            timeout_secs: 9,
            accept_status: vec![204],
            trust_roots: None,
            allow_plain_http_loopback: true,
        })) else {
            panic!("a webhook is runnable");
        };
        assert_eq!(
            plan.lease(),
            time::Duration::seconds(9) + INTENT_LEASE_MARGIN
        );
    }
}
