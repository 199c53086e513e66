//! Verifying one bundle offline, the whole of `evidence verify`'s work but
//! reading the files: the target is at most 50 ms per bundle
//! (BENCHMARKS.md). The bundles are the Python implementation's
//! (tests/vectors/evidence): a passkey approval with 6 events, and a
//! two-approver quorum.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;

use countersign_evidence::{Trust, verify};
use countersign_tlog::Policy;
use countersign_verifier::KeySet;
use criterion::{Criterion, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/evidence");
    let policy = Policy::parse(&std::fs::read(dir.join("policy.txt")).unwrap()).unwrap();
    let keys = KeySet::parse(&std::fs::read(dir.join("keys.json")).unwrap()).unwrap();
    let trust = Trust {
        policy: &policy,
        keys: Some(&keys),
    };
    for name in ["bundle.json", "quorum.json"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        verify(&bytes, &trust, None).unwrap();
        c.bench_function(&format!("evidence verify {name}"), |b| {
            b.iter(|| verify(std::hint::black_box(&bytes), &trust, None).unwrap());
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
