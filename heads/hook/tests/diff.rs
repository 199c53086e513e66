//! The diff an edit proposal carries: computed from the file on disk and
//! the tool's input, bounded, and a clear sentence when it cannot be.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use countersign_hook::diff::{MAX_DIFF_BYTES, bounded};
use countersign_hook::{Agent, ToolCall, parse};
use serde_json::{Value, json};

/// A Claude Code `PreToolUse` call of `tool_name` with `tool_input`, in `cwd`.
fn claude(cwd: &Path, tool_name: &str, tool_input: Value) -> ToolCall {
    let input = json!({
        "session_id": "s-1",
        "transcript_path": "/t.jsonl",
        "cwd": cwd,
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": "toolu_1",
    });
    parse(Agent::ClaudeCode, input.to_string().as_bytes()).unwrap()
}

/// The call's diff, which every edit has.
fn diff_of(call: &ToolCall) -> String {
    let diff = call.diff().expect("an edit carries a diff");
    assert_eq!(call.arguments()["diff"], Value::from(diff.clone()));
    diff
}

fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn a_write_of_a_new_file_diffs_against_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.txt").display().to_string();
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": path, "content": "one\ntwo\n"}),
    );
    assert_eq!(
        diff_of(&call),
        format!("--- /dev/null\n+++ {path}\n@@ -0,0 +1,2 @@\n+one\n+two\n")
    );
}

#[test]
fn a_write_over_a_file_diffs_against_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "one\ntwo\nthree\n");
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": path, "content": "one\n2\nthree\n"}),
    );
    assert_eq!(
        diff_of(&call),
        format!("--- {path}\n+++ {path}\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
    );
}

#[test]
fn an_edit_replaces_its_one_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "lib.rs", "fn a() {}\nfn b() {}\n");
    let call = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "fn b() {}", "new_string": "fn c() {}"}),
    );
    assert_eq!(
        diff_of(&call),
        format!(
            "--- {path}\n+++ {path}\n@@ -1,2 +1,2 @@\n fn a() {{}}\n-fn b() {{}}\n+fn c() {{}}\n"
        )
    );
}

#[test]
fn an_edit_with_replace_all_replaces_every_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "x = 1\ny = 2\nx = 3\n");
    let call = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "x", "new_string": "z", "replace_all": true}),
    );
    assert_eq!(
        diff_of(&call),
        format!(
            "--- {path}\n+++ {path}\n@@ -1,3 +1,3 @@\n-x = 1\n+z = 1\n y = 2\n-x = 3\n+z = 3\n"
        )
    );
}

#[test]
fn an_edit_of_a_repeated_string_without_replace_all_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "x\nx\n");
    let call = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "x", "new_string": "y"}),
    );
    assert_eq!(
        diff_of(&call),
        format!(
            "countersign could not compute the diff: old_string occurs 2 times in the file and replace_all is not set ({path})"
        )
    );
}

#[test]
fn an_edit_whose_old_string_is_not_found_says_so_in_place_of_the_diff() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "hello\n");
    let call = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "goodbye", "new_string": "farewell"}),
    );
    assert_eq!(
        diff_of(&call),
        format!(
            "countersign could not compute the diff: old_string was not found in the file ({path})"
        )
    );
}

#[test]
fn an_edit_of_a_missing_file_has_an_empty_old_side() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.txt").display().to_string();
    let creates = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "", "new_string": "first\n"}),
    );
    assert_eq!(
        diff_of(&creates),
        format!("--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+first\n")
    );
    let changes = claude(
        dir.path(),
        "Edit",
        json!({"file_path": path, "old_string": "first", "new_string": "second"}),
    );
    assert_eq!(
        diff_of(&changes),
        format!(
            "countersign could not compute the diff: old_string was not found in the file ({path})"
        )
    );
}

#[test]
fn a_multi_edit_applies_its_edits_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "alpha\nbeta\n");
    let call = claude(
        dir.path(),
        "MultiEdit",
        json!({"file_path": path, "edits": [
            {"old_string": "alpha", "new_string": "gamma"},
            {"old_string": "gamma\nbeta", "new_string": "gamma\ndelta"},
        ]}),
    );
    assert_eq!(
        diff_of(&call),
        format!("--- {path}\n+++ {path}\n@@ -1,2 +1,2 @@\n-alpha\n-beta\n+gamma\n+delta\n")
    );
}

#[test]
fn a_multi_edit_names_the_edit_that_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "alpha\n");
    let call = claude(
        dir.path(),
        "MultiEdit",
        json!({"file_path": path, "edits": [
            {"old_string": "alpha", "new_string": "beta"},
            {"old_string": "alpha", "new_string": "gamma"},
        ]}),
    );
    assert_eq!(
        diff_of(&call),
        format!(
            "countersign could not compute the diff: edit 2 of 2: old_string was not found in the file ({path})"
        )
    );
}

#[test]
fn an_edit_that_changes_nothing_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = file(dir.path(), "a.txt", "same\n");
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": path, "content": "same\n"}),
    );
    assert_eq!(diff_of(&call), format!("(no changes to {path})"));
}

#[test]
fn an_edit_input_without_its_fields_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let call = claude(
        dir.path(),
        "Edit",
        json!({"old_string": "a", "new_string": "b"}),
    );
    assert_eq!(
        diff_of(&call),
        "countersign could not compute the diff: tool_input has no field file_path"
    );
    let call = claude(
        dir.path(),
        "MultiEdit",
        json!({"file_path": "/x", "edits": [{"old_string": "a", "new_string": 2}]}),
    );
    assert_eq!(
        diff_of(&call),
        "countersign could not compute the diff: edit 1: tool_input field new_string is not a string"
    );
}

#[test]
fn a_directory_or_a_binary_file_has_no_diff_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": shown, "content": "x"}),
    );
    assert_eq!(
        diff_of(&call),
        format!("countersign could not compute the diff: {shown} is a directory")
    );
    let path = dir.path().join("blob.bin");
    fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    let shown = path.display().to_string();
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": shown, "content": "x"}),
    );
    assert_eq!(
        diff_of(&call),
        format!("countersign could not compute the diff: {shown} is not UTF-8 text")
    );
}

#[test]
fn a_relative_path_is_taken_from_the_calls_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("conf.toml"), "a = 1\na = 1\n").unwrap();
    let input = json!({
        "session_id": "g-1",
        "transcript_path": "/t.json",
        "cwd": dir.path(),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-04T10:00:00.000Z",
        "tool_name": "replace",
        "tool_input": {"file_path": "conf.toml", "old_string": "a = 1", "new_string": "a = 2", "allow_multiple": true},
    });
    let call = parse(Agent::Gemini, input.to_string().as_bytes()).unwrap();
    assert_eq!(
        diff_of(&call),
        "--- conf.toml\n+++ conf.toml\n@@ -1,2 +1,2 @@\n-a = 1\n-a = 1\n+a = 2\n+a = 2\n"
    );
}

#[test]
fn an_oversize_diff_is_cut_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt").display().to_string();
    let content = "0123456789abcdef\n".repeat(6000); // 102 000 bytes
    let call = claude(
        dir.path(),
        "Write",
        json!({"file_path": path, "content": content}),
    );
    let diff = diff_of(&call);
    assert!(diff.len() <= MAX_DIFF_BYTES, "{}", diff.len());
    assert!(diff.starts_with(&format!(
        "--- /dev/null\n+++ {path}\n@@ -0,0 +1,6000 @@\n+0123456789abcdef\n"
    )));
    let full = 14 + 5 + path.len() + 19 + 6000 * 18; // headers, hunk line, lines
    let note = diff.lines().last().unwrap();
    let kept = diff.len() - note.len() - 1;
    assert_eq!(
        note,
        format!("[countersign: diff cut to its first {kept} of {full} bytes]")
    );
    // Cut at a line end: every kept line is whole.
    assert!(
        diff[..kept]
            .lines()
            .skip(3)
            .all(|line| line == "+0123456789abcdef")
    );
}

#[test]
fn bounding_keeps_a_short_text_and_cuts_a_long_one_on_a_character_boundary() {
    assert_eq!(bounded("short\n".into()), "short\n");
    let long = "é".repeat(MAX_DIFF_BYTES); // no line ends, two bytes each
    let cut = bounded(long);
    assert!(cut.len() <= MAX_DIFF_BYTES);
    assert!(cut.ends_with(&format!(" of {} bytes]\n", 2 * MAX_DIFF_BYTES)));
}

#[test]
fn a_codex_patch_is_its_own_diff_and_is_bounded_too() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n";
    let input = |patch: &str| {
        json!({
            "session_id": "c-1", "turn_id": "1", "transcript_path": null, "cwd": "/w",
            "hook_event_name": "PreToolUse", "model": "m", "permission_mode": "default",
            "tool_name": "apply_patch", "tool_input": {"command": patch}, "tool_use_id": "call_1",
        })
        .to_string()
    };
    let call = parse(Agent::Codex, input(patch).as_bytes()).unwrap();
    assert_eq!(diff_of(&call), patch);
    let long = format!(
        "*** Begin Patch\n{}*** End Patch\n",
        "+line\n".repeat(10_000)
    );
    let call = parse(Agent::Codex, input(&long).as_bytes()).unwrap();
    let diff = diff_of(&call);
    assert!(diff.len() <= MAX_DIFF_BYTES);
    assert!(diff.ends_with(&format!(" of {} bytes]\n", long.len())));
}

#[test]
fn a_notebook_edit_carries_a_note_instead_of_a_diff() {
    let call = claude(
        Path::new("/w"),
        "NotebookEdit",
        json!({"notebook_path": "/w/a.ipynb", "new_source": "print(1)"}),
    );
    assert_eq!(
        diff_of(&call),
        "(no diff: countersign does not preview NotebookEdit edits; see tool_input)"
    );
}

#[test]
fn only_edits_carry_a_diff() {
    let call = claude(Path::new("/w"), "Bash", json!({"command": "ls"}));
    assert_eq!(call.diff(), None);
    assert!(call.arguments().get("diff").is_none());
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_device_is_not_read_and_cannot_hold_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    for path in [fifo.display().to_string(), "/dev/null".to_string()] {
        let call = claude(
            dir.path(),
            "Edit",
            json!({"file_path": path, "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(
            diff_of(&call),
            format!("countersign could not compute the diff: {path} is not a regular file")
        );
    }
}
