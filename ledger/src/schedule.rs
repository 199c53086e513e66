//! The builtin schedule effects as pure transitions over the `schedules`
//! namespace of the state store. Backends load the current value, call
//! [`plan`], and write the resulting [`Change`] in one transaction.
//!
//! State machine (key = schedule name):
//! `create {name, cron, description?}` → `created` (fails if it exists);
//! `activate`: created → active; `pause`: active → paused;
//! `resume`: paused → active; `delete`: removes it (any state).
//! A refused transition is an [`EffectFailure`] and changes nothing.

use countersign_verifier::BuiltinEffect;
use serde_json::{Map, Value, json};

use crate::error::EffectFailure;

/// The state namespace the schedule effects own.
pub const NAMESPACE: &str = "schedules";

/// What to write to the state store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    /// Insert or replace `key` with `value`.
    Put { key: String, value: Value },
    /// Remove `key`.
    Delete { key: String },
}

/// A planned transition: the change and the result to record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) change: Change,
    pub(crate) result: Value,
}

/// The schedule name an effect's arguments address (the state key).
pub(crate) fn key_of(effect: &str, args: &Value) -> Result<String, EffectFailure> {
    parse(effect)?;
    let name = string_field(object(args)?, "name")?;
    if name.is_empty() {
        return Err(EffectFailure::InvalidArguments("\"name\" is empty".into()));
    }
    Ok(name.to_string())
}

/// The builtin `effect` names, or [`EffectFailure::UnknownEffect`].
fn parse(effect: &str) -> Result<BuiltinEffect, EffectFailure> {
    effect
        .parse()
        .map_err(|_| EffectFailure::UnknownEffect(effect.to_string()))
}

/// Plan `effect` with `args` given the current value of the schedule.
pub(crate) fn plan(
    effect: &str,
    args: &Value,
    current: Option<&Value>,
) -> Result<Plan, EffectFailure> {
    let builtin = parse(effect)?;
    let key = key_of(effect, args)?;
    let fields = object(args)?;
    let current_state = match current {
        Some(v) => Some(
            v.get("state")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    EffectFailure::Database(format!("stored schedule {key:?} has no state"))
                })?
                .to_string(),
        ),
        None => None,
    };
    let moved = |from: &str, to: &str| -> Result<Plan, EffectFailure> {
        match (&current_state, current) {
            (None, _) | (_, None) => Err(missing(&key)),
            (Some(s), Some(value)) if s == from => {
                let mut value = value.clone();
                if let Some(obj) = value.as_object_mut() {
                    obj.insert("state".into(), Value::String(to.into()));
                }
                Ok(Plan {
                    change: Change::Put {
                        key: key.clone(),
                        value,
                    },
                    result: json!({"name": key, "state": to}),
                })
            }
            (Some(s), Some(_)) => Err(EffectFailure::Transition(format!(
                "schedule {key:?} is {s}; {effect} needs it {from}"
            ))),
        }
    };
    match builtin {
        BuiltinEffect::ScheduleCreate => {
            if current.is_some() {
                return Err(EffectFailure::Transition(format!(
                    "schedule {key:?} already exists"
                )));
            }
            let cron = string_field(fields, "cron")?;
            let mut value = Map::new();
            value.insert("name".into(), Value::String(key.clone()));
            value.insert("cron".into(), Value::String(cron.to_string()));
            match fields.get("description") {
                None | Some(Value::Null) => {}
                Some(Value::String(d)) => {
                    value.insert("description".into(), Value::String(d.clone()));
                }
                Some(_) => {
                    return Err(EffectFailure::InvalidArguments(
                        "\"description\" must be a string".into(),
                    ));
                }
            }
            value.insert("state".into(), Value::String("created".into()));
            Ok(Plan {
                change: Change::Put {
                    key: key.clone(),
                    value: Value::Object(value),
                },
                result: json!({"name": key, "state": "created"}),
            })
        }
        BuiltinEffect::ScheduleActivate => moved("created", "active"),
        BuiltinEffect::SchedulePause => moved("active", "paused"),
        BuiltinEffect::ScheduleResume => moved("paused", "active"),
        BuiltinEffect::ScheduleDelete => match current {
            None => Err(missing(&key)),
            Some(_) => Ok(Plan {
                change: Change::Delete { key: key.clone() },
                result: json!({"name": key, "deleted": true}),
            }),
        },
    }
}

fn missing(key: &str) -> EffectFailure {
    EffectFailure::Transition(format!("no schedule named {key:?}"))
}

fn object(args: &Value) -> Result<&Map<String, Value>, EffectFailure> {
    args.as_object()
        .ok_or_else(|| EffectFailure::InvalidArguments("arguments must be an object".into()))
}

fn string_field<'a>(fields: &'a Map<String, Value>, name: &str) -> Result<&'a str, EffectFailure> {
    fields
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| EffectFailure::InvalidArguments(format!("{name:?} must be a string")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn apply(effect: &str, args: Value, current: Option<Value>) -> Result<Plan, EffectFailure> {
        plan(effect, &args, current.as_ref())
    }

    #[test]
    fn walks_the_state_machine() {
        let p = apply(
            "schedule.create",
            json!({"name": "n", "cron": "* * * * *"}),
            None,
        )
        .unwrap();
        let Change::Put { value, .. } = p.change else {
            panic!("expected put")
        };
        assert_eq!(
            value,
            json!({"name": "n", "cron": "* * * * *", "state": "created"})
        );
        let p = apply("schedule.activate", json!({"name": "n"}), Some(value)).unwrap();
        let Change::Put { value, .. } = p.change else {
            panic!("expected put")
        };
        assert_eq!(value["state"], "active");
        let p = apply("schedule.pause", json!({"name": "n"}), Some(value)).unwrap();
        let Change::Put { value, .. } = p.change else {
            panic!("expected put")
        };
        assert_eq!(value["state"], "paused");
        let p = apply("schedule.resume", json!({"name": "n"}), Some(value.clone())).unwrap();
        assert_eq!(p.result, json!({"name": "n", "state": "active"}));
        let p = apply("schedule.delete", json!({"name": "n"}), Some(value)).unwrap();
        assert_eq!(p.change, Change::Delete { key: "n".into() });
    }

    #[test]
    fn refuses_wrong_transitions_with_a_clear_message() {
        let created = json!({"name": "n", "cron": "c", "state": "created"});
        assert_eq!(
            apply(
                "schedule.pause",
                json!({"name": "n"}),
                Some(created.clone())
            ),
            Err(EffectFailure::Transition(
                "schedule \"n\" is created; schedule.pause needs it active".into()
            ))
        );
        assert_eq!(
            apply(
                "schedule.create",
                json!({"name": "n", "cron": "c"}),
                Some(created)
            ),
            Err(EffectFailure::Transition(
                "schedule \"n\" already exists".into()
            ))
        );
        assert_eq!(
            apply("schedule.activate", json!({"name": "x"}), None),
            Err(EffectFailure::Transition("no schedule named \"x\"".into()))
        );
        assert_eq!(
            apply("schedule.explode", json!({"name": "x"}), None),
            Err(EffectFailure::UnknownEffect("schedule.explode".into()))
        );
        assert!(matches!(
            apply("schedule.create", json!({"name": "x"}), None),
            Err(EffectFailure::InvalidArguments(_))
        ));
    }
}
