//! A tlog witness's answer to `add-checkpoint`, as the witnessing client
//! reads it: reading never panics, cosignature lines are only ever
//! signature-shaped lines, and a size is exactly its decimal. The body is
//! `countersign_tlog::fuzzing::witness_reply`, which a unit test also
//! runs over the seed corpus in `seeds/witness_reply/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_tlog::fuzzing::witness_reply(data));
