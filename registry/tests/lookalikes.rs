//! What the person reads is what is signed: the review's lookalike set
//! (four proposals paying "alice@example.com" whose stored arguments
//! differ by U+180B, U+1D173, U+FFF0 or a Cyrillic U+0430 for "a") renders
//! as five different previews: the invisible ones escaped, each lookalike
//! marked with its code points and scripts.
#![allow(clippy::unwrap_used)]

use countersign_registry::Registry;
use countersign_registry::lookalike::{ArgumentWarning, argument_warnings_of_json};

const REGISTRY: &str = include_str!("lookalike_payment.toml");

/// The review's set: the real address and its four lookalikes.
pub const LOOKALIKES: [&str; 5] = [
    "alice@example.com",
    "alice@example.com\u{180B}",
    "alice@example.com\u{1D173}",
    "alice@example.com\u{FFF0}",
    "\u{0430}lice@example.com",
];

fn preview(to: &str) -> String {
    let registry = Registry::from_toml_str(REGISTRY).unwrap();
    let op = registry.get("payment.send").unwrap();
    let json = serde_json::json!({ "to": to }).to_string();
    let args = op.validate_arguments(json.as_bytes()).unwrap();
    let text = op.render_preview(&args, None, "");
    // The header names the contract revision; the rest is what differs.
    text.lines().skip(1).collect::<Vec<_>>().join("\n")
}

#[test]
fn the_reviews_lookalike_payments_render_as_five_different_previews() {
    let previews: Vec<String> = LOOKALIKES.iter().map(|to| preview(to)).collect();
    let expected = [
        "Action:    Pay 10 EUR to \"alice@example.com\"\n\
         Arguments: {\"to\":\"alice@example.com\"}",
        "Action:    Pay 10 EUR to \"alice@example.com\\u{180b}\"\n\
         Arguments: {\"to\":\"alice@example.com\\u{180b}\"}\n\
         Non-ASCII: \"to\" has U+180B (Mongolian), mixing the scripts Latin and Mongolian",
        "Action:    Pay 10 EUR to \"alice@example.com\\u{1d173}\"\n\
         Arguments: {\"to\":\"alice@example.com\\u{1d173}\"}\n\
         Non-ASCII: \"to\" has U+1D173 (Common)",
        "Action:    Pay 10 EUR to \"alice@example.com\\u{fff0}\"\n\
         Arguments: {\"to\":\"alice@example.com\\u{fff0}\"}\n\
         Non-ASCII: \"to\" has U+FFF0 (Unknown), mixing the scripts Latin and Unknown",
        "Action:    Pay 10 EUR to \"\u{0430}lice@example.com\"\n\
         Arguments: {\"to\":\"\u{0430}lice@example.com\"}\n\
         Non-ASCII: \"to\" has U+0430 (Cyrillic), mixing the scripts Cyrillic and Latin",
    ];
    for (preview, expected) in previews.iter().zip(expected) {
        assert_eq!(
            preview,
            &format!("{expected}\n---- Model-supplied, unverified ----\nnote: <none>")
        );
    }
    for (i, a) in previews.iter().enumerate() {
        for b in &previews[i + 1..] {
            assert_ne!(a, b);
        }
    }
}

#[test]
fn marks_each_argument_with_non_ascii_text_at_any_depth_and_only_those() {
    let warnings = argument_warnings_of_json(
        r#"{"amount":10,"memo":{"n\u00e9":["ok","x\u0430y"]},"plain":"ascii only","to":"caf\u00e9"}"#,
    );
    assert_eq!(
        warnings,
        vec![
            ArgumentWarning {
                argument: "memo".into(),
                non_ascii: vec!['é', '\u{430}'],
                mixed_scripts: Some(vec!["Cyrillic".into(), "Latin".into()]),
            },
            ArgumentWarning {
                argument: "to".into(),
                non_ascii: vec!['é'],
                mixed_scripts: None,
            },
        ]
    );
    assert_eq!(
        warnings[0].to_string(),
        "\"memo\" has U+00E9 (Latin), U+0430 (Cyrillic), mixing the scripts Cyrillic and Latin"
    );
    assert!(argument_warnings_of_json(r#"{"to":"alice@example.com"}"#).is_empty());
    assert!(argument_warnings_of_json("not json").is_empty());
}
