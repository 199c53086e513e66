//! What an edit tool's input says it will do to a file.
//!
//! Owns: reading an edit tool's input into a plan (write a whole file,
//! replace strings in order, or show an agent's own patch) and applying a
//! plan's replacements to a file's text the way the agents do (a string
//! that is not found, or found more than once without `replace_all`, is an
//! edit the tool itself would refuse).
//! Must not: read files or format diffs ([`crate::diff`] does).

use serde_json::Value;

use crate::input::Object;

/// What an edit tool will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EditPlan {
    /// Replace the whole file with `content` (Claude Code `Write`, Gemini
    /// CLI `write_file`).
    Write {
        /// The file, as the input names it.
        path: String,
        /// Its new content.
        content: String,
    },
    /// Replace strings, in order (Claude Code `Edit` and `MultiEdit`,
    /// Gemini CLI `replace`).
    Replace {
        /// The file, as the input names it.
        path: String,
        /// The replacements, applied one after another.
        edits: Vec<Replacement>,
    },
    /// The agent's own patch, shown as it is (Codex `apply_patch`, whose
    /// input is the patch).
    Patch {
        /// The patch text.
        text: String,
    },
    /// The input lacks what an edit of this tool needs (the reason).
    Malformed(String),
}

/// One string replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replacement {
    /// The text to find (empty: create a file that does not exist yet).
    pub(crate) old: String,
    /// The text to put in its place.
    pub(crate) new: String,
    /// Replace every occurrence rather than exactly one.
    pub(crate) all: bool,
}

impl EditPlan {
    /// A whole-file write: `path_field` and `content_field` of `input`.
    pub(crate) fn write(input: &Object, path_field: &str, content_field: &str) -> Self {
        match (string(input, path_field), string(input, content_field)) {
            (Ok(path), Ok(content)) => EditPlan::Write { path, content },
            (Err(reason), _) | (_, Err(reason)) => EditPlan::Malformed(reason),
        }
    }

    /// One replacement: `path_field`, `old_string`, `new_string`, and the
    /// optional boolean `all_field` (replace every occurrence).
    pub(crate) fn replace(input: &Object, path_field: &str, all_field: &str) -> Self {
        let plan = string(input, path_field).and_then(|path| {
            let edit = replacement(input, all_field)?;
            Ok(EditPlan::Replace {
                path,
                edits: vec![edit],
            })
        });
        plan.unwrap_or_else(EditPlan::Malformed)
    }

    /// Claude Code's `MultiEdit`: `file_path` and `edits`, an array of
    /// `{old_string, new_string, replace_all?}` applied in order.
    pub(crate) fn multi(input: &Object) -> Self {
        let plan = string(input, "file_path").and_then(|path| {
            let Some(Value::Array(items)) = input.get("edits") else {
                return Err("tool_input has no array edits".to_string());
            };
            let mut edits = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                let Value::Object(item) = item else {
                    return Err(format!("edit {} is not a JSON object", index + 1));
                };
                let edit = replacement(item, "replace_all")
                    .map_err(|reason| format!("edit {}: {reason}", index + 1))?;
                edits.push(edit);
            }
            Ok(EditPlan::Replace { path, edits })
        });
        plan.unwrap_or_else(EditPlan::Malformed)
    }

    /// Codex's `apply_patch`: the patch is the input's `command`.
    pub(crate) fn patch(input: &Object) -> Self {
        match string(input, "command") {
            Ok(text) => EditPlan::Patch { text },
            Err(reason) => EditPlan::Malformed(reason),
        }
    }
}

/// Applies `edits` in order to `text`, or says why the tool would refuse.
pub(crate) fn apply(text: &str, edits: &[Replacement]) -> Result<String, String> {
    let mut current = text.to_string();
    let many = edits.len() > 1;
    for (index, edit) in edits.iter().enumerate() {
        current = apply_one(&current, edit).map_err(|reason| {
            if many {
                format!("edit {} of {}: {reason}", index + 1, edits.len())
            } else {
                reason
            }
        })?;
    }
    Ok(current)
}

/// One replacement.
fn apply_one(text: &str, edit: &Replacement) -> Result<String, String> {
    if edit.old.is_empty() {
        // An empty old_string creates a file; on a file with content the
        // tool refuses it.
        return if text.is_empty() {
            Ok(edit.new.clone())
        } else {
            Err("old_string is empty but the file is not".to_string())
        };
    }
    match text.matches(edit.old.as_str()).count() {
        0 => Err("old_string was not found in the file".to_string()),
        1 => Ok(text.replacen(edit.old.as_str(), &edit.new, 1)),
        _ if edit.all => Ok(text.replace(edit.old.as_str(), &edit.new)),
        count => Err(format!(
            "old_string occurs {count} times in the file and replace_all is not set"
        )),
    }
}

/// A replacement from `old_string`, `new_string` and the optional boolean
/// `all_field`.
fn replacement(input: &Object, all_field: &str) -> Result<Replacement, String> {
    let old = string(input, "old_string")?;
    let new = string(input, "new_string")?;
    let all = match input.get(all_field) {
        None | Some(Value::Null) => false,
        Some(Value::Bool(all)) => *all,
        Some(_) => return Err(format!("{all_field} is not a boolean")),
    };
    Ok(Replacement { old, new, all })
}

/// A string field of a tool input.
fn string(input: &Object, field: &str) -> Result<String, String> {
    match input.get(field) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("tool_input field {field} is not a string")),
        None => Err(format!("tool_input has no field {field}")),
    }
}
