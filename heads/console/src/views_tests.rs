//! The card and the pending list against the review's lookalike set.

use super::*;

/// The review's lookalike set: the real address and four others.
const LOOKALIKES: [&str; 5] = [
    "alice@example.com",
    "alice@example.com\u{180B}",
    "alice@example.com\u{1D173}",
    "alice@example.com\u{FFF0}",
    "\u{0430}lice@example.com",
];

fn card_of(to: &str) -> String {
    let arguments_json = serde_json::json!({ "to": to }).to_string();
    let view = ProposalView {
        id: "prop_1".into(),
        operation: "payment.send".into(),
        status: ProposalStatus::Pending.into(),
        // What the signer stored: the escapes and the mark are its own.
        preview: format!(
            "Action:    Pay to {}\nArguments: {}",
            countersign_registry::terminal_safe(&arguments_json),
            countersign_registry::terminal_safe(&arguments_json)
        ),
        arguments_json,
        ..Default::default()
    };
    let ctx = CardContext {
        lifetime_secs: None,
        unverified_fields: &[],
        not_approvable: None,
    };
    card(&view, &ctx).into_string()
}

#[test]
fn the_reviews_lookalike_payments_render_as_five_different_cards() {
    let cards: Vec<String> = LOOKALIKES.iter().map(|to| card_of(to)).collect();
    for (i, a) in cards.iter().enumerate() {
        for b in &cards[i + 1..] {
            assert_ne!(a, b);
        }
    }
    assert!(!cards[0].contains("non-ASCII"), "{}", cards[0]);
    for (card, escape) in cards[1..4]
        .iter()
        .zip(["\\u{180b}", "\\u{1d173}", "\\u{fff0}"])
    {
        assert!(
            card.contains(&format!("alice@example.com{escape}")),
            "{card}"
        );
        assert!(card.contains("non-ASCII text"), "{card}");
    }
    assert!(
        cards[4].contains(
            "&quot;to&quot; has U+0430 (Cyrillic), mixing the scripts Cyrillic and Latin"
        ),
        "{}",
        cards[4]
    );
    // The pending list marks it too.
    let views: Vec<ProposalView> = LOOKALIKES
        .iter()
        .map(|to| ProposalView {
            arguments_json: serde_json::json!({ "to": to }).to_string(),
            ..Default::default()
        })
        .collect();
    let list = pending_list(&views).into_string();
    assert_eq!(
        list.matches("Non-ASCII text in the arguments").count(),
        4,
        "{list}"
    );
}
