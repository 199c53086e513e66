//! Unit tests for the strict parser and the RFC 8785 serializer.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::*;

const BIG: usize = 1 << 20;

fn canon(text: &str) -> String {
    to_canonical(&parse(text.as_bytes(), BIG).unwrap()).unwrap()
}

fn refusal(text: &[u8]) -> CanonicalError {
    parse(text, BIG).unwrap_err()
}

#[test]
fn refuses_duplicate_keys() {
    assert_eq!(
        refusal(br#"{"a":1,"a":2}"#),
        CanonicalError::DuplicateKey("a".into())
    );
    assert_eq!(
        refusal(br#"{"x":{"b":1,"b":1}}"#),
        CanonicalError::DuplicateKey("b".into())
    );
    // The same key spelled with an escape is still the same key.
    assert_eq!(
        refusal(br#"{"a":1,"\u0061":2}"#),
        CanonicalError::DuplicateKey("a".into())
    );
}

#[test]
fn refuses_non_finite_numbers() {
    assert_eq!(refusal(b"1e400"), CanonicalError::NonFinite);
    assert_eq!(refusal(b"[-1e400]"), CanonicalError::NonFinite);
    assert_eq!(refusal(b"NaN"), CanonicalError::Syntax { offset: 0 });
    assert_eq!(refusal(b"Infinity"), CanonicalError::Syntax { offset: 0 });
}

#[test]
fn refuses_integers_outside_the_safe_range() {
    assert_eq!(refusal(b"9007199254740992"), CanonicalError::OutOfRange);
    assert_eq!(refusal(b"-9007199254740992"), CanonicalError::OutOfRange);
    assert_eq!(refusal(b"9007199254740993"), CanonicalError::OutOfRange);
    assert_eq!(
        refusal(b"100000000000000000000000"),
        CanonicalError::OutOfRange
    );
    // Written with a fraction it would still print as a bare integer: refused too.
    assert_eq!(refusal(b"9007199254740993.0"), CanonicalError::OutOfRange);
    assert_eq!(canon("9007199254740991"), "9007199254740991");
    assert_eq!(canon("-9007199254740991"), "-9007199254740991");
}

#[test]
fn refuses_lone_surrogates() {
    assert_eq!(refusal(br#""\ud800""#), CanonicalError::LoneSurrogate);
    assert_eq!(refusal(br#""\udc00""#), CanonicalError::LoneSurrogate);
    assert_eq!(refusal(br#""\ud800\u0041""#), CanonicalError::LoneSurrogate);
    assert_eq!(refusal(br#""\ud800x""#), CanonicalError::LoneSurrogate);
    assert_eq!(canon(r#""\ud83d\ude00""#), "\"\u{1F600}\"");
}

#[test]
fn refuses_nesting_deeper_than_32() {
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(ok.as_bytes(), BIG).is_ok());
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert_eq!(refusal(deep.as_bytes()), CanonicalError::TooDeep);
    let objects = format!(
        "{}1{}",
        r#"{"a":"#.repeat(MAX_DEPTH + 1),
        "}".repeat(MAX_DEPTH + 1)
    );
    assert_eq!(refusal(objects.as_bytes()), CanonicalError::TooDeep);
}

#[test]
fn refuses_oversized_input() {
    let doc = format!("\"{}\"", "a".repeat(MAX_ARGS_BYTES));
    assert_eq!(
        parse(doc.as_bytes(), MAX_ARGS_BYTES).unwrap_err(),
        CanonicalError::TooLarge {
            limit: MAX_ARGS_BYTES
        }
    );
    let exact = format!("\"{}\"", "a".repeat(MAX_ARGS_BYTES - 2));
    assert!(parse(exact.as_bytes(), MAX_ARGS_BYTES).is_ok());
}

#[test]
fn refuses_invalid_utf8() {
    assert_eq!(refusal(b"\"\xff\""), CanonicalError::InvalidUtf8);
    // An encoded surrogate (CESU-8) is not UTF-8 either.
    assert_eq!(refusal(b"\"\xed\xa0\x80\""), CanonicalError::InvalidUtf8);
}

#[test]
fn refuses_trailing_data() {
    assert_eq!(refusal(b"{} {}"), CanonicalError::Trailing);
    assert_eq!(refusal(b"1 2"), CanonicalError::Trailing);
    assert_eq!(refusal(b"nullx"), CanonicalError::Trailing);
    assert!(parse(b" {} \n", BIG).is_ok());
}

#[test]
fn refuses_syntax_errors_with_offsets() {
    for (text, offset) in [
        (&b""[..], 0),
        (b"{", 1),
        (b"{\"a\" 1}", 5),
        (b"[1,]", 3),
        (b"{\"a\":1,}", 7),
        (b"01", 1),
        (b"1.", 2),
        (b"1e", 2),
        (b"-", 1),
        (b"+1", 0),
        (b".5", 0),
        (b"\"a\nb\"", 2),
        (b"\"\\x\"", 2),
        (b"\"\\u12g4\"", 5),
        (b"tru", 0),
        (b"'a'", 0),
        (b"\xef\xbb\xbf{}", 0),
    ] {
        assert_eq!(
            refusal(text),
            CanonicalError::Syntax { offset },
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
}

#[test]
fn sorts_keys_by_utf16_code_units() {
    // RFC 8785 section 3.2.3: U+1F600 (surrogates D83D..) sorts before U+FB33 in UTF-16.
    let input = "{\"\u{20ac}\":\"Euro Sign\",\"\\r\":\"Carriage Return\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\",\"1\":\"One\",\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\"}";
    let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
    assert_eq!(canon(input), expected);
}

#[test]
fn formats_numbers_in_ecmascript_form() {
    for (input, expected) in [
        ("1e21", "1e+21"),
        ("1E-7", "1e-7"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0.0", "0"),
        ("1.0", "1"),
        ("1E2", "100"),
        ("123456789012345680000", "123456789012345680000"),
        ("0.000001", "0.000001"),
        ("1e-7", "1e-7"),
        ("4.50", "4.5"),
        ("2e-3", "0.002"),
        ("1e20", "100000000000000000000"),
        ("333333333.33333329", "333333333.3333333"),
        ("-1.7976931348623157e308", "-1.7976931348623157e+308"),
        ("5e-324", "5e-324"),
    ] {
        match input {
            // Bare integers beyond 2^53-1 are refused (see refuses_integers_outside_the_safe_range).
            "123456789012345680000" | "1e20" => {
                assert_eq!(
                    refusal(input.as_bytes()),
                    CanonicalError::OutOfRange,
                    "{input}"
                )
            }
            _ => assert_eq!(canon(input), expected, "{input}"),
        }
    }
}

#[test]
fn rfc8785_example_structures() {
    let input = r#"{
        "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
        "literals": [null, true, false]
    }"#;
    let expected = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
    assert_eq!(canon(input), expected);
}

#[test]
fn escapes_only_what_jcs_escapes() {
    let v = json!("\u{8}\u{c}\n\r\t\u{1f}\u{7f}\u{2028}/<>&é\"\\");
    assert_eq!(
        to_canonical(&v).unwrap(),
        "\"\\b\\f\\n\\r\\t\\u001f\u{7f}\u{2028}/<>&é\\\"\\\\\""
    );
}

#[test]
fn serializer_refuses_what_the_parser_refuses() {
    assert_eq!(
        to_canonical(&json!(9_007_199_254_740_992u64)),
        Err(CanonicalError::OutOfRange)
    );
    assert_eq!(
        to_canonical(&json!(-9_007_199_254_740_992i64)),
        Err(CanonicalError::OutOfRange)
    );
    assert_eq!(
        to_canonical(&json!(9_007_199_254_740_992.0f64)),
        Err(CanonicalError::OutOfRange)
    );
    let mut deep = json!(1);
    for _ in 0..=MAX_DEPTH {
        deep = Value::Array(vec![deep]);
    }
    assert_eq!(to_canonical(&deep), Err(CanonicalError::TooDeep));
}

#[test]
fn canonical_text_round_trips() {
    for text in [
        r#"{"a":[1,-2,0.5,1e+21,"x",null,true,{}],"b":{"c":[]}}"#,
        r#""\u0000""#,
        "-9007199254740991",
    ] {
        let v = parse(text.as_bytes(), BIG).unwrap();
        let c = to_canonical(&v).unwrap();
        assert_eq!(c, text);
        assert_eq!(parse(c.as_bytes(), BIG).unwrap(), v);
    }
}

#[test]
fn comparing_and_hashing_as_written_agree_with_the_text() {
    let value = parse(
        "{\"z\":\"\\n\u{20ac}\",\"a\":[1,0.5,null],\"\u{1f600}\":{},\"\u{fb33}\":true}".as_bytes(),
        BIG,
    )
    .unwrap();
    let text = to_canonical(&value).unwrap();
    assert!(is_canonical_text(&value, text.as_bytes()).unwrap());
    assert_eq!(
        canonical_sha256_hex(&value).unwrap(),
        sha256_hex(text.as_bytes())
    );
    let bytes = text.as_bytes();
    let mut changed = bytes.to_vec();
    changed[bytes.len() / 2] ^= 1;
    let spaced = text.replacen(',', ", ", 1);
    for other in [
        &bytes[..bytes.len() - 1],
        &[bytes, b" "].concat()[..],
        &[bytes, b"}"].concat()[..],
        &changed[..],
        spaced.as_bytes(),
        b"",
    ] {
        assert!(!is_canonical_text(&value, other).unwrap(), "{other:?}");
    }
    // What the writer refuses, both refuse.
    let too_big = json!(9_007_199_254_740_992_u64);
    assert_eq!(
        is_canonical_text(&too_big, b"9007199254740992"),
        Err(CanonicalError::OutOfRange)
    );
    assert_eq!(
        canonical_sha256_hex(&too_big),
        Err(CanonicalError::OutOfRange)
    );
}

#[test]
fn sha256_hex_is_lowercase() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn an_enclosing_document_gets_its_envelope_of_depth_and_nothing_else() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let at_limit = nested(MAX_DEPTH + 3);
    assert!(parse_enclosing(at_limit.as_bytes(), BIG, 3).is_ok());
    assert_eq!(
        parse_enclosing(nested(MAX_DEPTH + 4).as_bytes(), BIG, 3),
        Err(CanonicalError::TooDeep)
    );
    assert_eq!(
        parse(at_limit.as_bytes(), BIG),
        Err(CanonicalError::TooDeep)
    );
    assert_eq!(
        parse_enclosing(br#"{"a":1,"a":2}"#, BIG, 3),
        Err(CanonicalError::DuplicateKey("a".into()))
    );
}
