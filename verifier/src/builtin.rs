//! The builtin effects: the closed set of transitions the ledger applies
//! over its state store (namespace `schedules`), named once here so that
//! the registry (which lets an operation name one) and the ledger (which
//! implements each) cannot disagree.
//!
//! This module owns the names and their parsing only; it must not know how
//! an effect changes state (the ledger's `schedule` module does).

use std::fmt;
use std::str::FromStr;

/// One builtin effect. Matched exhaustively where it is applied: a new
/// variant does not compile until the ledger implements it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BuiltinEffect {
    /// `schedule.create`: a new schedule in state `created`.
    ScheduleCreate,
    /// `schedule.activate`: created → active.
    ScheduleActivate,
    /// `schedule.pause`: active → paused.
    SchedulePause,
    /// `schedule.resume`: paused → active.
    ScheduleResume,
    /// `schedule.delete`: removes a schedule in any state.
    ScheduleDelete,
}

/// A name that is not one of [`BuiltinEffect::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a builtin effect")]
pub struct UnknownBuiltinEffect(pub String);

impl BuiltinEffect {
    /// Every builtin effect, in the order they are documented.
    pub const ALL: [BuiltinEffect; 5] = [
        BuiltinEffect::ScheduleCreate,
        BuiltinEffect::ScheduleActivate,
        BuiltinEffect::SchedulePause,
        BuiltinEffect::ScheduleResume,
        BuiltinEffect::ScheduleDelete,
    ];

    /// The effect's name as written in a registry file and recorded in the
    /// ledger (`schedule.create`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinEffect::ScheduleCreate => "schedule.create",
            BuiltinEffect::ScheduleActivate => "schedule.activate",
            BuiltinEffect::SchedulePause => "schedule.pause",
            BuiltinEffect::ScheduleResume => "schedule.resume",
            BuiltinEffect::ScheduleDelete => "schedule.delete",
        }
    }

    /// Every name, comma-separated, for messages that list the choices.
    pub fn known() -> String {
        BuiltinEffect::ALL.map(BuiltinEffect::as_str).join(", ")
    }
}

impl FromStr for BuiltinEffect {
    type Err = UnknownBuiltinEffect;

    /// Exactly one of the names [`BuiltinEffect::as_str`] returns; no case
    /// folding, no surrounding space.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        BuiltinEffect::ALL
            .into_iter()
            .find(|effect| effect.as_str() == name)
            .ok_or_else(|| UnknownBuiltinEffect(name.to_owned()))
    }
}

impl fmt::Display for BuiltinEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_effect_round_trips_through_its_name() {
        for effect in BuiltinEffect::ALL {
            assert_eq!(effect.as_str().parse::<BuiltinEffect>(), Ok(effect));
            assert_eq!(effect.to_string(), effect.as_str());
        }
    }

    #[test]
    fn the_names_are_the_five_schedule_transitions() {
        assert_eq!(
            BuiltinEffect::known(),
            "schedule.create, schedule.activate, schedule.pause, schedule.resume, schedule.delete"
        );
    }

    #[test]
    fn refuses_names_that_are_not_exactly_a_builtin() {
        for bad in [
            "",
            "schedule",
            "Schedule.create",
            " schedule.create",
            "schedule.explode",
        ] {
            assert_eq!(
                bad.parse::<BuiltinEffect>(),
                Err(UnknownBuiltinEffect(bad.to_owned())),
                "{bad:?}"
            );
        }
    }
}
