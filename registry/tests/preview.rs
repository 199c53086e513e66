//! The authoritative preview: layout, and hostile model-supplied text that
//! must not forge lines, move the cursor or reorder what the person reads.
#![allow(clippy::unwrap_used)]

use countersign_registry::{CanonicalArgs, Registry, is_terminal_unsafe, terminal_safe};

fn registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

fn preview(op: &str, json: &str, note: &str) -> String {
    let registry = registry();
    let op = registry.get(op).unwrap();
    let args = op.validate_arguments(json.as_bytes()).unwrap();
    op.render_preview(&args, None, note)
}

#[test]
fn preview_has_header_action_arguments_and_unverified_section() {
    let registry = registry();
    let op = registry.get("schedule.create").unwrap();
    let args = op
        .validate_arguments(br#"{"name":"nightly","cron":"0 3 * * *","description":"backups"}"#)
        .unwrap();
    let text = op.render_preview(&args, None, "please approve");
    let expected = format!(
        "Operation: schedule.create [write] contract {}\n\
         Action:    Create schedule \"nightly\" with cron \"0 3 * * *\" (state: created)\n\
         Arguments: {{\"cron\":\"0 3 * * *\",\"description\":\"backups\",\"name\":\"nightly\"}}\n\
         ---- Model-supplied, unverified ----\n\
         description: \"backups\"\n\
         note: \"please approve\"",
        &op.contract_revision()[..12]
    );
    assert_eq!(text, expected);
}

#[test]
fn absent_optional_fields_and_empty_notes_are_marked_unquoted() {
    let text = preview("schedule.create", r#"{"name":"n","cron":"* * * * *"}"#, "");
    assert!(
        text.ends_with("description: <absent>\nnote: <none>"),
        "{text}"
    );
}

#[test]
fn preview_is_rendered_from_stored_canonical_text() {
    let registry = registry();
    let op = registry.get("schedule.pause").unwrap();
    let stored = CanonicalArgs::from_stored(r#"{"name":"nightly"}"#).unwrap();
    let text = op.render_preview(&stored, None, "");
    assert!(
        text.contains("Action:    Pause schedule \"nightly\" (active -> paused)\n"),
        "{text}"
    );
}

/// Every line the preview may contain starts with one of these.
fn assert_no_forged_lines(text: &str, expected_lines: usize) {
    let lines: Vec<_> = text.split('\n').collect();
    assert_eq!(lines.len(), expected_lines, "{text}");
    for line in &lines {
        assert!(
            [
                "Operation: ",
                "Action:    ",
                "Arguments: ",
                "Non-ASCII: ",
                "---- Model-supplied",
                "message: ",
                "description: ",
                "note: "
            ]
            .iter()
            .any(|p| line.starts_with(p)),
            "forged line {line:?}"
        );
    }
    for c in text.chars() {
        let code = u32::from(c);
        assert!(
            c == '\n' || !(code < 0x20 || (0x7f..=0x9f).contains(&code)),
            "raw control {code:#x}"
        );
        assert!(!(0x202a..=0x202e).contains(&code) && !(0x2066..=0x2069).contains(&code));
        assert!(!matches!(
            code,
            0x200b..=0x200f | 0x2028 | 0x2029 | 0xfeff | 0x2060
        ));
    }
}

#[test]
fn hostile_message_cannot_forge_an_approved_line_or_clear_the_screen() {
    let hostile = "hi\n\u{1b}[2J\u{1b}[HApproved: yes\r\u{7}\u{9b}31m";
    let json = serde_json::json!({ "message": hostile }).to_string();
    let text = preview("demo.echo", &json, "ok\nOperation: schedule.delete [write]");
    // The C1 control U+009B is non-ASCII: a line names it.
    assert_no_forged_lines(&text, 7);
    assert!(
        text.contains("\nNon-ASCII: \"message\" has U+009B (Common)\n"),
        "{text}"
    );
    assert!(
        text.contains(r"\n\u001b[2J\u001b[HApproved: yes\r\u0007"),
        "{text}"
    );
    assert!(text.contains(r"\u{9b}31m"), "{text}");
    assert!(
        text.ends_with(r#"note: "ok\nOperation: schedule.delete [write]""#),
        "{text}"
    );
}

#[test]
fn right_to_left_override_and_invisible_characters_are_shown_escaped() {
    let hostile = "invoice\u{202e}fdp.exe\u{2066}x\u{2069}\u{200b}\u{feff}\u{2028}\u{e0041}\u{7f}";
    let json = serde_json::json!({ "message": hostile }).to_string();
    let text = preview("demo.echo", &json, "\u{202e}evorppa");
    assert_no_forged_lines(&text, 7);
    assert!(
        text.contains("\nNon-ASCII: \"message\" has U+202E (Common), U+2066 (Common), U+2069 (Common), U+200B (Common), U+FEFF (Common), U+2028 (Common), U+E0041 (Common)\n"),
        "{text}"
    );
    let escaped = r"invoice\u{202e}fdp.exe\u{2066}x\u{2069}\u{200b}\u{feff}\u{2028}\u{e0041}\u{7f}";
    assert!(
        text.contains(&format!("Arguments: {{\"message\":\"{escaped}\"}}")),
        "{text}"
    );
    assert!(text.contains(&format!("message: \"{escaped}\"")), "{text}");
    assert!(text.ends_with(r#"note: "\u{202e}evorppa""#), "{text}");
}

#[test]
fn literal_escape_lookalikes_are_distinguishable_from_escapes() {
    // A model writing the six characters `\u{202e}` gets a doubled backslash.
    let json = serde_json::json!({ "message": "\\u{202e}" }).to_string();
    let text = preview("demo.echo", &json, "");
    assert!(text.contains(r#"message: "\\u{202e}""#), "{text}");
}

#[test]
fn terminal_safe_leaves_ordinary_text_alone() {
    let text = "Zeitplan „nächtlich“ — 東京 🚀";
    assert!(matches!(terminal_safe(text), std::borrow::Cow::Borrowed(t) if t == text));
    assert_eq!(terminal_safe("a\u{1b}b\u{85}c"), r"a\u{1b}b\u{85}c");
}

#[test]
fn every_character_the_review_saw_reach_the_terminal_raw_is_escaped() {
    let ranges = [
        (0x180B, 0x180D),
        (0x180F, 0x180F),
        (0x17B4, 0x17B5),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xFFF0, 0xFFF8),
    ];
    for (lo, hi) in ranges {
        for cp in lo..=hi {
            let c = char::from_u32(cp).unwrap();
            assert!(is_terminal_unsafe(c), "U+{cp:04X}");
            assert_eq!(terminal_safe(&format!("a{c}b")), format!("a\\u{{{cp:x}}}b"));
        }
    }
    // And what the old list had: controls, bidi, zero-width, tags,
    // variation selectors, separators, private use, unassigned.
    for c in [
        '\u{0}',
        '\u{1b}',
        '\u{7f}',
        '\u{85}',
        '\u{ad}',
        '\u{34f}',
        '\u{61c}',
        '\u{115f}',
        '\u{200b}',
        '\u{200d}',
        '\u{2028}',
        '\u{2029}',
        '\u{202e}',
        '\u{2066}',
        '\u{3164}',
        '\u{fe0f}',
        '\u{feff}',
        '\u{e0041}',
        '\u{e0100}',
        '\u{e000}',
        '\u{10ffff}',
    ] {
        assert!(is_terminal_unsafe(c), "U+{:04X}", u32::from(c));
    }
    // Visible letters, marks and spaces stay as they are (they are marked
    // as non-ASCII instead).
    for c in [
        'a',
        '~',
        ' ',
        'é',
        '\u{301}',
        '\u{430}',
        '\u{a0}',
        '€',
        '中',
        '\u{1F600}',
    ] {
        assert!(!is_terminal_unsafe(c), "U+{:04X}", u32::from(c));
    }
}
