//! The body of the `hook_input` fuzz target under `fuzz/` (run with
//! cargo-fuzz), as a plain function, so that the committed seed corpus
//! `fuzz/seeds/hook_input/` is replayed by this crate's unit tests on every
//! run without a fuzzing toolchain. It panics when a property it states
//! does not hold; it must not panic on any other input.

use serde_json::Value;

use countersign_verifier::canonical;

use crate::{Agent, Answer, Rendered, ToolClass, parse, refusal, render};

/// Hook input, read as each agent's: parsing never panics; a refused input
/// is answered with a deny the agent honours; an accepted one is a call of
/// one of the agent's events, whose arguments (edits aside: their diff
/// reads the file the input names) are canonical JSON the signer accepts,
/// and every answer to it is well formed.
#[allow(clippy::unwrap_used)] // a broken property must panic: that is the finding
pub fn hook_input(data: &[u8]) {
    for agent in Agent::ALL {
        match parse(agent, data) {
            Ok(call) => {
                assert_eq!(call.agent(), agent);
                assert!(agent.answers(call.event()), "{agent}: {}", call.event());
                if call.class() != &ToolClass::Edit {
                    canonical::to_canonical(&call.arguments()).unwrap();
                }
                for answer in [Answer::allow("a"), Answer::deny(""), Answer::ask("c")] {
                    well_formed(&render(agent, Some(call.event()), &answer));
                }
            }
            Err(error) => {
                let rendered = refusal(agent, &error);
                well_formed(&rendered);
                assert!(is_deny(&rendered), "{agent}: {rendered:?}");
            }
        }
    }
}

/// Nothing, one JSON object line with exit 0, or a reason with exit 2.
#[allow(clippy::unwrap_used)]
fn well_formed(rendered: &Rendered) {
    match rendered.exit_code {
        0 if rendered.stdout.is_empty() => {}
        0 => {
            let line = rendered.stdout.strip_suffix('\n').unwrap();
            assert!(!line.contains('\n'));
            assert!(serde_json::from_str::<Value>(line).unwrap().is_object());
        }
        2 => assert!(rendered.stdout.is_empty() && !rendered.stderr.trim().is_empty()),
        code => panic!("exit code {code}"),
    }
}

/// Whether a rendering denies, in any agent's form.
fn is_deny(rendered: &Rendered) -> bool {
    if rendered.exit_code == 2 {
        return true;
    }
    let Ok(value) = serde_json::from_str::<Value>(&rendered.stdout) else {
        return false;
    };
    let specific = &value["hookSpecificOutput"];
    specific["permissionDecision"] == "deny"
        || specific["decision"]["behavior"] == "deny"
        || value["decision"] == "deny"
        || value["permission"] == "deny"
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::hook_input;

    #[test]
    fn every_committed_seed_passes_the_target() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/hook_input");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        assert!(files.len() >= 8, "seeds in {}", dir.display());
        for file in files {
            hook_input(&std::fs::read(&file).unwrap());
        }
    }
}
