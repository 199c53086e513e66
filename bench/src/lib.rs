//! countersign's load tool lives in `benches/load.rs` (`cargo bench -p
//! countersign-bench --bench load`); this library is empty. The crate
//! exists so that the tool, which mints proofs with the signer's own
//! issuing code, is the only crate besides the signer that names it.
#![forbid(unsafe_code)]
