//! The operations of the proposals this service made lately, by id. An
//! execution of one of them knows its operation before it reads the
//! proposal, so the gate asks an upstream for the tool's definition at
//! once, beside that read ([`countersign_gate::Gate::execute_handoff_of`]).
//! A hint, never an authority: the execution still reads the record, and
//! uses the early listing only for an approved proposal of that very
//! operation and effect.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

/// How many proposals are remembered; the oldest is forgotten first.
const KEPT: usize = 256;

/// The operation of each of the last [`KEPT`] proposals made, by id.
#[derive(Default)]
pub(crate) struct Recent {
    made: Mutex<Made>,
}

#[derive(Default)]
struct Made {
    operations: HashMap<String, String>,
    order: VecDeque<String>,
}

impl Recent {
    /// Remember that proposal `id` is of `operation`.
    pub(crate) fn remember(&self, id: &str, operation: &str) {
        let mut made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        if made
            .operations
            .insert(id.to_owned(), operation.to_owned())
            .is_none()
        {
            made.order.push_back(id.to_owned());
        }
        while made.order.len() > KEPT {
            if let Some(oldest) = made.order.pop_front() {
                made.operations.remove(&oldest);
            }
        }
    }

    /// The operation of proposal `id`, if this service made it lately.
    pub(crate) fn operation_of(&self, id: &str) -> Option<String> {
        let made = self.made.lock().unwrap_or_else(PoisonError::into_inner);
        made.operations.get(id).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_proposals_are_remembered_and_the_oldest_forgotten() {
        let recent = Recent::default();
        for i in 0..=KEPT {
            recent.remember(&format!("prop_{i}"), &format!("op.{i}"));
        }
        assert_eq!(recent.operation_of("prop_0"), None);
        assert_eq!(recent.operation_of("prop_1").as_deref(), Some("op.1"));
        assert_eq!(
            recent.operation_of(&format!("prop_{KEPT}")).as_deref(),
            Some(format!("op.{KEPT}").as_str())
        );
        // The same id again is one entry, not two: nothing else is pushed out.
        recent.remember("prop_1", "op.1");
        assert_eq!(recent.operation_of("prop_2").as_deref(), Some("op.2"));
        assert_eq!(recent.operation_of("unknown"), None);
    }
}
