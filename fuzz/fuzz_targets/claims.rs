//! Claims payload reader: never panics; accepted payloads are exactly their canonical re-encoding.
#![no_main]

use countersign_verifier::Claims;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(claims) = Claims::from_canonical_json(data) {
        let text = claims
            .to_canonical_json()
            .expect("accepted claims must be writable");
        assert_eq!(text.as_bytes(), data);
    }
});
