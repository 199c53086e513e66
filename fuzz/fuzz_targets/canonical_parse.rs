//! Strict canonical JSON parser: never panics, and whatever it accepts the
//! RFC 8785 writer can write, re-parses to the same value, and is a fixed
//! point. The body is `countersign_verifier::fuzzing::canonical_parse`,
//! whose unit test replays `seeds/canonical_parse/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_verifier::fuzzing::canonical_parse(data));
