//! Text that looks like what it is not: an argument value holding
//! non-ASCII characters (a Cyrillic `а` for a Latin `a`, an invisible
//! character), and one that mixes scripts (UTS 39's single-script test, as
//! rustc's lints use it through the `unicode-security` crate).
//!
//! This module owns the [`ArgumentWarning`] every approver interface shows
//! beside a value: the preview's `Non-ASCII:` lines, the console card's
//! warning, and through the preview the terminal, MCP and API results. It
//! only reads canonical argument values; it must not decide anything (a
//! warning never refuses a proposal, it makes the person look).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;
use unicode_script::{Script, UnicodeScript as _};
use unicode_security::MixedScript as _;

/// At most this many distinct non-ASCII characters are named per argument
/// (the rest are counted).
const MAX_NAMED: usize = 8;

/// What a person must know about one argument's text beyond how it looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentWarning {
    /// The top-level argument's name.
    pub argument: String,
    /// Its distinct non-ASCII characters, in order of first appearance
    /// (in string values and object keys at any depth).
    pub non_ascii: Vec<char>,
    /// The scripts of its text (Common and Inherited left out; Unknown, for
    /// an unassigned code point, kept), when some string of it is not
    /// single-script under UTS 39.
    pub mixed_scripts: Option<Vec<String>>,
}

impl fmt::Display for ArgumentWarning {
    /// `"to" has U+0430 (Cyrillic), mixing the scripts Cyrillic and Latin`:
    /// the argument as a JSON string, each character as its code point and
    /// script.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_json::to_string(&self.argument).map_err(|_| fmt::Error)?;
        write!(f, "{name} has ")?;
        for (i, c) in self.non_ascii.iter().take(MAX_NAMED).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "U+{:04X} ({})", u32::from(*c), c.script().full_name())?;
        }
        if self.non_ascii.len() > MAX_NAMED {
            write!(f, " and {} more", self.non_ascii.len() - MAX_NAMED)?;
        }
        if let Some(scripts) = &self.mixed_scripts {
            write!(f, ", mixing the scripts {}", and_list(scripts))?;
        }
        Ok(())
    }
}

/// `A`, `A and B`, `A, B and C`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// One warning per top-level argument of `args` (an object, in key order)
/// whose value holds any non-ASCII character; none for anything else.
pub fn argument_warnings(args: &Value) -> Vec<ArgumentWarning> {
    let Value::Object(map) = args else {
        return Vec::new();
    };
    map.iter()
        .filter_map(|(name, value)| {
            let mut texts = Vec::new();
            strings_of(value, &mut texts);
            warning_for(name, &texts)
        })
        .collect()
}

/// [`argument_warnings`] of canonical arguments given as JSON text; none
/// when the text is not JSON.
pub fn argument_warnings_of_json(arguments_json: &str) -> Vec<ArgumentWarning> {
    serde_json::from_str::<Value>(arguments_json)
        .map(|v| argument_warnings(&v))
        .unwrap_or_default()
}

fn warning_for(name: &str, texts: &[&str]) -> Option<ArgumentWarning> {
    let mut non_ascii = Vec::new();
    for c in texts.iter().flat_map(|t| t.chars()) {
        if !c.is_ascii() && !non_ascii.contains(&c) {
            non_ascii.push(c);
        }
    }
    if non_ascii.is_empty() {
        return None;
    }
    let mixed = texts.iter().any(|t| !t.is_single_script());
    let mixed_scripts = mixed.then(|| {
        let scripts: BTreeSet<&'static str> = texts
            .iter()
            .flat_map(|t| t.chars())
            .map(|c| c.script())
            .filter(|s| !matches!(s, Script::Common | Script::Inherited))
            .map(|s| s.full_name())
            .collect();
        scripts.into_iter().map(str::to_owned).collect()
    });
    Some(ArgumentWarning {
        argument: name.to_owned(),
        non_ascii,
        mixed_scripts,
    })
}

/// Every string in `value`: string values and object keys, at any depth.
fn strings_of<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => {
            for (key, v) in map {
                out.push(key);
                strings_of(v, out);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}
