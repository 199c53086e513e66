//! Shared by the contract tests: the fixture files and a call's summary.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

use countersign_hook::{ToolCall, ToolClass};
use serde_json::{Value, json};

/// One fixture: its name, the input bytes, and the expected summary.
pub struct Fixture {
    pub name: String,
    pub input: Vec<u8>,
    pub expected: Value,
}

/// `tests/fixtures/<dir>`.
pub fn fixture_dir(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
}

/// Every `*.input.json` of `dir` with its `*.expected.json`, by name.
pub fn fixtures(dir: &str) -> Vec<Fixture> {
    let mut names: Vec<String> = fs::read_dir(fixture_dir(dir))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter_map(|name| name.strip_suffix(".input.json").map(str::to_string))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let base = fixture_dir(dir);
            let input = fs::read(base.join(format!("{name}.input.json"))).unwrap();
            let expected = fs::read(base.join(format!("{name}.expected.json"))).unwrap();
            Fixture {
                expected: serde_json::from_slice(&expected).unwrap(),
                name,
                input,
            }
        })
        .collect()
}

/// One fixture's input bytes.
pub fn input(dir: &str, name: &str) -> Vec<u8> {
    fs::read(fixture_dir(dir).join(format!("{name}.input.json"))).unwrap()
}

/// One fixture's input as a JSON value.
pub fn input_value(dir: &str, name: &str) -> Value {
    serde_json::from_slice(&input(dir, name)).unwrap()
}

/// The class as the expected files write it.
pub fn class_label(class: &ToolClass) -> String {
    match class {
        ToolClass::Shell => "shell".into(),
        ToolClass::Edit => "edit".into(),
        ToolClass::Read => "read".into(),
        ToolClass::Web => "web".into(),
        ToolClass::Mcp => "mcp".into(),
        ToolClass::Other(name) => format!("other:{name}"),
    }
}

/// Everything a test checks of a parsed call, as the expected files hold it.
pub fn summary(call: &ToolCall) -> Value {
    json!({
        "event": call.event().wire_name(),
        "session_id": call.session_id(),
        "tool_use_id": call.tool_use_id(),
        "tool_name": call.tool_name(),
        "class": class_label(call.class()),
        "operation": call.operation(),
        "cwd": call.cwd(),
        "arguments": call.arguments(),
    })
}
