//! What the person reads is what is signed, at the terminal and in every
//! head's JSON: the review's four proposals paying "alice@example.com"
//! whose stored arguments differ by U+180B, U+1D173, U+FFF0 or a Cyrillic
//! U+0430 for "a" show as five different previews in `countersign show`,
//! each lookalike escaped or marked, and the JSON result (the same bytes
//! on the CLI, the API and MCP) names its non-ASCII text in `non_ascii`.
#![allow(clippy::unwrap_used)]

mod support;

use serde_json::json;
use support::Harness;

/// The registry test's operation (one file for both).
const REGISTRY: &str = include_str!("../../../registry/tests/lookalike_payment.toml");

/// The real address, then the review's four lookalikes, each with what
/// the terminal must show for it and the `Non-ASCII:` line, if any.
const CASES: [(&str, &str, Option<&str>); 5] = [
    ("alice@example.com", "alice@example.com", None),
    (
        "alice@example.com\u{180B}",
        "alice@example.com\\u{180b}",
        Some("\"to\" has U+180B (Mongolian), mixing the scripts Latin and Mongolian"),
    ),
    (
        "alice@example.com\u{1D173}",
        "alice@example.com\\u{1d173}",
        Some("\"to\" has U+1D173 (Common)"),
    ),
    (
        "alice@example.com\u{FFF0}",
        "alice@example.com\\u{fff0}",
        Some("\"to\" has U+FFF0 (Unknown), mixing the scripts Latin and Unknown"),
    ),
    (
        "\u{0430}lice@example.com",
        "\u{0430}lice@example.com",
        Some("\"to\" has U+0430 (Cyrillic), mixing the scripts Cyrillic and Latin"),
    ),
];

#[tokio::test]
async fn the_reviews_lookalike_payments_show_differently_at_the_terminal_and_in_json() {
    let h = Harness::start_with_registry(REGISTRY).await;
    let mut previews = Vec::new();
    for (to, shown, mark) in CASES {
        let id = h
            .propose("payment.send", &json!({ "to": to }).to_string())
            .await;
        let run = h.cli(&["show", &id]).await;
        assert_eq!(run.result, Ok(()), "{}", run.stderr);
        // The preview, without what leads it (the status line, which names
        // the id, the action, the decision window's line) and its
        // operation line.
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert!(lines[1].starts_with("ACTION (risk: "), "{}", run.stdout);
        assert!(lines.iter().any(|l| l.starts_with("decide by ")));
        let operation = lines.iter().position(|l| l.starts_with("Operation: "));
        let preview: Vec<&str> = lines[operation.unwrap() + 1..].to_vec();
        let mut expected = vec![
            format!("Action:    Pay 10 EUR to \"{shown}\""),
            format!("Arguments: {{\"to\":\"{shown}\"}}"),
        ];
        expected.extend(mark.map(|m| format!("Non-ASCII: {m}")));
        expected.push("---- Model-supplied, unverified ----".into());
        expected.push("note: <none>".into());
        assert_eq!(preview, expected, "{}", run.stdout);
        previews.push(preview.join("\n"));

        let result = h.cli(&["--json", "show", &id]).await.json();
        assert_eq!(
            result["non_ascii"],
            json!(mark.map_or_else(Vec::new, |m| vec![m])),
            "{result}"
        );
    }
    for (i, a) in previews.iter().enumerate() {
        for b in &previews[i + 1..] {
            assert_ne!(a, b);
        }
    }
}
