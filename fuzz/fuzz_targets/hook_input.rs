//! A coding agent's hook input, read as each agent's: parsing never panics,
//! a refused input is answered with a deny the agent honours, and every
//! answer to an accepted call is well formed. The body is
//! `countersign_hook::fuzzing::hook_input`, which a unit test also runs over
//! the seed corpus in `seeds/hook_input/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_hook::fuzzing::hook_input(data));
