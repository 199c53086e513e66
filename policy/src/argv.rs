//! A shell call's command as the words a shell would run: `context.argv`
//! of `agent.shell`, so that a policy (or a rule's scope written in
//! Cedar) can match a command word by word, as the rule language's `argv`
//! test does, never by its text.
//!
//! This module owns that attribute: its Cedar type and its value. The
//! words are those of the rule language's own lexer
//! (`countersign_registry::rule::argv::split`), which either returns
//! exactly the argv `/bin/sh -c` would run or refuses the command. It must
//! not guess: when the lexer refuses the command (operators, expansions,
//! globs, ...) or the call holds no command string, `argv` is absent, and
//! a policy that reads it does not match.
//!
//! Shape: `{ count: Long, w0?: String, ..., w32?: String }`, where `count`
//! is how many words the command has and `wN` is word N (`w0` the
//! program), present for the first [`ARGV_WORDS`] words. A rule's `argv`
//! pattern names a program and at most `MAX_ARGV_ARGS` arguments, so those
//! words and the count say everything a pattern can ask.

use std::collections::BTreeMap;

use countersign_registry::rule::argv::{MAX_ARGV_ARGS, split};
use countersign_registry::rule::{SHELL_COMMAND_POINTER, SHELL_OPERATION};
use serde_json::{Map, Value, json};

use crate::value::CedarValue;

/// The context attribute that holds a shell call's words.
pub const ARGV_ATTRIBUTE: &str = "argv";
/// How many words `argv` holds one by one (`w0` to `w32`): the program and
/// as many arguments as a rule's pattern may list.
pub const ARGV_WORDS: usize = MAX_ARGV_ARGS + 1;

/// Whether `operation`'s context has `argv`.
pub(crate) fn applies_to(operation: &str) -> bool {
    operation == SHELL_OPERATION
}

/// The attribute name of word `n`.
pub(crate) fn word(n: usize) -> String {
    format!("w{n}")
}

/// `argv`'s type in Cedar's JSON schema format (optional: absent when the
/// command does not split).
pub(crate) fn cedar_type() -> Value {
    let mut attributes = Map::new();
    attributes.insert("count".into(), json!({ "type": "Long" }));
    for n in 0..ARGV_WORDS {
        attributes.insert(word(n), json!({ "type": "String", "required": false }));
    }
    json!({ "type": "Record", "required": false, "attributes": attributes })
}

/// `argv`'s value for a call of `operation` with `arguments`: `None` when
/// the operation has none, or its command is absent, not a string, or
/// refused by the lexer.
pub(crate) fn value(operation: &str, arguments: &Value) -> Option<CedarValue> {
    if !applies_to(operation) {
        return None;
    }
    let command = arguments.pointer(SHELL_COMMAND_POINTER)?.as_str()?;
    let words = split(command).ok()?;
    let count = i64::try_from(words.len()).ok()?;
    let mut fields = BTreeMap::from([("count".to_owned(), CedarValue::Long(count))]);
    for (n, w) in words.into_iter().take(ARGV_WORDS).enumerate() {
        fields.insert(word(n), CedarValue::String(w));
    }
    Some(CedarValue::Record(fields))
}
