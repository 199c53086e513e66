//! Strict canonical JSON parser: never panics, and whatever it accepts the
//! RFC 8785 writer can write, re-parses to the same value, and is a fixed point.
#![no_main]

use countersign_verifier::canonical::{parse, to_canonical};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 128 * 1024;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = parse(data, LIMIT) else {
        return;
    };
    let text = to_canonical(&value).expect("a parsed value must be writable");
    let again = parse(text.as_bytes(), LIMIT).expect("canonical text must parse");
    assert_eq!(again, value, "canonical text must round-trip");
    assert_eq!(
        to_canonical(&again).expect("writable"),
        text,
        "canonical form must be a fixed point"
    );
});
