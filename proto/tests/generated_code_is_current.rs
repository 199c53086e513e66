//! The generated gRPC code is committed so that no `protoc` is needed to
//! build. This test regenerates it with the pure-Rust `protox` compiler and
//! fails when the committed file differs from what the `.proto` files produce.
//! Run with `COUNTERSIGN_REGENERATE=1` to rewrite the committed file.

use std::path::{Path, PathBuf};

const GENERATED: &str = "src/gen/countersign.v1.rs";

/// Messages that carry a proof: their `Debug` is written by hand in
/// `src/lib.rs` so that a proof can never be printed.
const SECRET_MESSAGES: &[&str] = &[
    ".countersign.v1.DecideResponse",
    ".countersign.v1.ClaimHandoffResponse",
];

fn generate(out_dir: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fds = protox::compile(["countersign/v1/signer.proto"], [root]).expect("proto compiles");
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .skip_debug(SECRET_MESSAGES.iter().copied())
        .out_dir(out_dir)
        .compile_fds(fds)
        .expect("code generation succeeds");
    std::fs::read_to_string(out_dir.join("countersign.v1.rs")).expect("generated file exists")
}

#[test]
fn committed_generated_code_matches_the_proto_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let fresh = generate(tmp.path());
    let committed_path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(GENERATED);
    if std::env::var_os("COUNTERSIGN_REGENERATE").is_some() {
        std::fs::write(&committed_path, &fresh).expect("write generated code");
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{GENERATED} is stale: run `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-proto --test generated_code_is_current` and commit the result"
    );
}
