//! The HTTP API's request parser on arbitrary requests: never panics, and
//! accepts only declared parameters. The body is
//! `countersign_api::fuzzing::http_request`, whose unit test replays
//! `seeds/http_request/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_api::fuzzing::http_request(data));
