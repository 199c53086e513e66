//! The `hook` effect kind: the operations a coding agent's pre-tool-call
//! hook proposes (`agent.shell`, `agent.edit`, ...). A person's approval
//! (or a rule's) lets the hook answer "allow" to the agent once: the hook
//! head consumes the proof, records the answer as the completion, and only
//! then tells the agent, whose own runtime runs the call. Nothing else
//! applies it. This module checks the definition and writes the lines a
//! preview adds; it must not run or answer anything.

use super::{EffectKind, invalid};
use crate::RegistryError;

/// The operations a hook proposes, one per class of tool call: exactly
/// these are backed by the `hook` kind, and the `hook` kind backs nothing
/// else.
pub const AGENT_OPERATIONS: [&str; 6] = [
    "agent.shell",
    "agent.edit",
    "agent.read",
    "agent.web",
    "agent.mcp",
    "agent.other",
];

/// The `hook` effect: it has no fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookAnswer;

/// The refusal of a `hook` effect on another operation than the agent
/// operations, or of another kind on one of them.
pub(super) fn backs_only_agent_operations(operation: &str) -> RegistryError {
    invalid(
        operation,
        "kind",
        format!(
            "the effect kind \"hook\" backs exactly the operations {}",
            AGENT_OPERATIONS.join(", ")
        ),
    )
}

impl EffectKind for HookAnswer {
    fn name(&self) -> &'static str {
        "hook"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        if !AGENT_OPERATIONS.contains(&operation) {
            return Err(backs_only_agent_operations(operation));
        }
        Ok(())
    }

    /// The answer is recorded inside the ledger's one transaction that
    /// consumes the proof: no intent is left running.
    fn timeout(&self) -> Option<std::time::Duration> {
        None
    }

    fn proof_reissuable(&self) -> bool {
        false
    }

    /// Only the hook that asked, waiting in the proposing session, answers the agent.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::ProposingSession
    }
}

/// The lines a preview of an agent operation adds under its arguments, so
/// a person reads the call as the agent's user would: the command of a
/// shell call on one line, and an edit's unified diff line by line, each
/// line marked `| ` so that no line of a diff passes for the preview's
/// own. Each line is escaped by the caller like every preview line.
pub(crate) fn preview_lines(arguments: &serde_json::Value) -> Vec<String> {
    let mut lines = Vec::new();
    // An edit's diff already shows its input (Codex's `apply_patch` carries
    // the patch as `command`): the command line is for shell calls only.
    if let Some(command) = arguments
        .pointer("/tool_input/command")
        .and_then(serde_json::Value::as_str)
        .filter(|_| arguments.get("diff").is_none())
    {
        lines.push(format!("Command: {command}"));
    }
    if let Some(diff) = arguments.get("diff").and_then(serde_json::Value::as_str) {
        lines.push("Diff:".to_owned());
        lines.extend(diff.lines().map(|line| format!("| {line}")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_shell_call_shows_its_command_and_an_edit_its_diff_line_by_line() {
        let shell = json!({"tool_input": {"command": "git status; rm -rf x"}});
        assert_eq!(preview_lines(&shell), ["Command: git status; rm -rf x"]);
        let edit = json!({"tool_input": {"file_path": "a"}, "diff": "--- a\n+++ a\n@@ -1 +1 @@\n-x\n+y\n"});
        assert_eq!(
            preview_lines(&edit),
            [
                "Diff:",
                "| --- a",
                "| +++ a",
                "| @@ -1 +1 @@",
                "| -x",
                "| +y"
            ]
        );
        // Codex's `apply_patch` carries its patch as `command`: shown once,
        // as the diff.
        let patch =
            json!({"tool_input": {"command": "*** Begin Patch"}, "diff": "*** Begin Patch\n"});
        assert_eq!(preview_lines(&patch), ["Diff:", "| *** Begin Patch"]);
        // A command that is not one string (an argv array) is in the
        // arguments line only.
        assert!(preview_lines(&json!({"tool_input": {"command": ["ls"]}})).is_empty());
    }
}
