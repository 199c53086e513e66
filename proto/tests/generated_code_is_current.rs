//! The generated gRPC code is committed so that no `protoc` is needed to
//! build. This test regenerates it with the pure-Rust `protox` compiler and
//! fails when the committed file differs from what the `.proto` files produce.
//! The file descriptor set the signer serves through gRPC reflection is
//! committed beside it and checked the same way.
//! Run with `COUNTERSIGN_REGENERATE=1` to rewrite the committed files.

use std::path::{Path, PathBuf};

const GENERATED: &str = "src/gen/countersign.v1.rs";
const DESCRIPTORS: &str = "src/gen/countersign.v1.fds.bin";

/// Messages that carry a proof or a push subscription: their `Debug` is
/// written by hand in `src/lib.rs` so that neither can ever be printed.
const SECRET_MESSAGES: &[&str] = &[
    ".countersign.v1.DecideResponse",
    ".countersign.v1.ClaimHandoffResponse",
    ".countersign.v1.ReissueForReconcileResponse",
    ".countersign.v1.SpentProofResponse",
    ".countersign.v1.PushDevice",
];

/// The generated code and the encoded file descriptor set.
fn generate(out_dir: &Path) -> (String, Vec<u8>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fds = protox::compile(["countersign/v1/signer.proto"], [root]).expect("proto compiles");
    let descriptors = prost::Message::encode_to_vec(&fds);
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .build_transport(false)
        .skip_debug(SECRET_MESSAGES.iter().copied())
        .out_dir(out_dir)
        .compile_fds(fds)
        .expect("code generation succeeds");
    let code =
        std::fs::read_to_string(out_dir.join("countersign.v1.rs")).expect("generated file exists");
    (code, descriptors)
}

#[test]
fn committed_generated_code_matches_the_proto_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (code, descriptors) = generate(tmp.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (path, fresh) in [(GENERATED, code.into_bytes()), (DESCRIPTORS, descriptors)] {
        let committed_path: PathBuf = root.join(path);
        if std::env::var_os("COUNTERSIGN_REGENERATE").is_some() {
            std::fs::write(&committed_path, &fresh).expect("write generated file");
            continue;
        }
        let committed = std::fs::read(&committed_path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{path} is stale: run `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-proto --test generated_code_is_current` and commit the result"
        );
    }
}
