//! Unit tests for [`parse_canonical`]: canonical text is accepted with the
//! value [`parse`] reads, and every other spelling of that value refused.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::fuzzing::canonical_parse;

const BIG: usize = 1 << 20;

/// Canonical texts: each is what the writer writes for its value.
const CANONICAL: &[&str] = &[
    r#"{}"#,
    r#"[]"#,
    r#""""#,
    r#"0"#,
    r#"-1"#,
    r#"9007199254740991"#,
    r#"0.5"#,
    r#"1.5e-7"#,
    r#"1e+21"#,
    r#"[null,true,false,"x",{"a":[]}]"#,
    r#"{"":0,"a":1,"aa":2,"b":{"c":"d"}}"#,
    // Escapes exactly as the writer writes them.
    r#""\"\\\b\f\n\r\t\u0000\u001f""#,
    "\"/\u{7f}\u{e9}\u{20ac}\u{1f600}\"",
    // UTF-16 order: U+FB33 (one unit, 0xFB33) after U+1F600 (0xD83D ...),
    // although its UTF-8 bytes sort first.
    "{\"\u{1f600}\":1,\"\u{fb33}\":2}",
];

/// Texts that parse, each with a value whose canonical text is otherwise.
const NOT_CANONICAL: &[&str] = &[
    " {}",
    "{} ",
    "{\"a\": 1}",
    "[1, 2]",
    "{\"a\":1,\n\"b\":2}",
    // Key order and repetition.
    r#"{"b":1,"a":2}"#,
    r#"{"a":1,"a":2}"#,
    r#"{"a":{},"b":1,"a":2}"#,
    "{\"\u{fb33}\":2,\"\u{1f600}\":1}",
    // Escapes the writer does not write.
    r#""\/""#,
    r#""\u0041""#,
    r#""\u001F""#,
    r#""\u000a""#,
    r#""\u0022""#,
    r#""\u005c""#,
    r#""\u00e9""#,
    r#""\u007f""#,
    r#""\ud83d\ude00""#,
    // Numbers the writer writes otherwise.
    "-0",
    "1.0",
    "-0.0",
    "1e2",
    "1E+21",
    "0.50",
    "5e-1",
    "1.5E-7",
];

#[test]
fn canonical_text_is_read_as_parse_reads_it() {
    for text in CANONICAL {
        let value = parse(text.as_bytes(), BIG).unwrap();
        assert_eq!(
            to_canonical(&value).unwrap(),
            *text,
            "not canonical: {text}"
        );
        assert_eq!(parse_canonical(text.as_bytes(), BIG), Ok(value), "{text}");
        canonical_parse(text.as_bytes());
    }
}

#[test]
fn refuses_every_other_spelling_of_a_value() {
    for text in NOT_CANONICAL {
        let value = parse(text.as_bytes(), BIG);
        if let Ok(value) = &value {
            assert_ne!(to_canonical(value).unwrap(), *text, "canonical: {text}");
            assert!(!is_canonical_text(value, text.as_bytes()).unwrap());
        }
        let refused = parse_canonical(text.as_bytes(), BIG).unwrap_err();
        match value {
            Ok(_) => assert_eq!(refused, CanonicalError::NotCanonical, "{text}"),
            // A duplicate key is the one parse itself refuses: here the
            // key out of order comes first.
            Err(e) => assert_eq!(e, CanonicalError::DuplicateKey("a".into()), "{text}"),
        }
        canonical_parse(text.as_bytes());
    }
}

#[test]
fn refuses_what_parse_refuses() {
    for (text, refusal) in [
        (&b"{\"a\":1,}"[..], CanonicalError::Syntax { offset: 7 }),
        (b"\"\\ud800\"", CanonicalError::LoneSurrogate),
        (b"9007199254740992", CanonicalError::OutOfRange),
        (b"1e400", CanonicalError::NonFinite),
        (b"{}{}", CanonicalError::Trailing),
        (b"\"\xff\"", CanonicalError::InvalidUtf8),
        (b"\"\n\"", CanonicalError::Syntax { offset: 1 }),
    ] {
        assert_eq!(parse(text, BIG), Err(refusal.clone()));
        assert_eq!(parse_canonical(text, BIG), Err(refusal));
        canonical_parse(text);
    }
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert_eq!(
        parse_canonical(deep.as_bytes(), BIG),
        Err(CanonicalError::TooDeep)
    );
    assert_eq!(
        parse_canonical(b"[1,2]", 4),
        Err(CanonicalError::TooLarge { limit: 4 })
    );
}

#[test]
fn a_member_of_canonical_text_is_found_where_it_stands() {
    let text = r#"{"a":[1,{"args":2}],"args":{"b":"\n","c":[]},"z":"args"}"#;
    let (value, args) = parse_canonical_member(text.as_bytes(), BIG, "args").unwrap();
    assert_eq!(args, Some(&br#"{"b":"\n","c":[]}"#[..]));
    assert_eq!(args, Some(to_canonical(&value["args"]).unwrap().as_bytes()));
    // Only a member of the top-level object, and none that is absent.
    let (_, absent) = parse_canonical_member(text.as_bytes(), BIG, "b").unwrap();
    assert_eq!(absent, None);
    let (_, last) = parse_canonical_member(text.as_bytes(), BIG, "z").unwrap();
    assert_eq!(last, Some(&br#""args""#[..]));
    assert_eq!(
        parse_canonical_member(b"{\"args\": 1}", BIG, "args"),
        Err(CanonicalError::NotCanonical)
    );
}
