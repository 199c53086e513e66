//! Claims payload reader: never panics; accepted payloads are exactly their
//! canonical re-encoding. The body is `countersign_verifier::fuzzing::claims`,
//! whose unit test replays `seeds/claims/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_verifier::fuzzing::claims(data));
