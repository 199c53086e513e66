//! Full proof verification on arbitrary text: never panics, never accepts
//! (nobody here can sign for the fixed ring key without its private key).
//! The body is `countersign_verifier::fuzzing::verify_text`, whose unit
//! test replays `seeds/verify/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_verifier::fuzzing::verify_text(data));
