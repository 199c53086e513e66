//! Wire types of the signer's gRPC API (`proto/countersign/v1/signer.proto`).
//!
//! The code in `gen/` is generated and committed; `tests/generated_code_is_current.rs`
//! fails when it drifts from the `.proto` files. Conversion between these
//! wire types and domain types happens in the crates that own the domain
//! types, never here. Messages that carry a proof have a hand-written `Debug`
//! that prints only the proof's hash; a push subscription's shows only its
//! session.
#![forbid(unsafe_code)]

/// `countersign.v1`: the signer service, its client and its messages.
#[allow(unreachable_pub, clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    include!("gen/countersign.v1.rs");

    use std::fmt;

    impl fmt::Debug for DecideResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("DecideResponse")
                .field("proposal", &self.proposal)
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .field("expires_at", &self.expires_at)
                .field("created_rule_id", &self.created_rule_id)
                .finish()
        }
    }

    impl fmt::Debug for ClaimHandoffResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ClaimHandoffResponse")
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .finish()
        }
    }

    impl fmt::Debug for ReissueForReconcileResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ReissueForReconcileResponse")
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .field("expires_at", &self.expires_at)
                .finish()
        }
    }

    impl fmt::Debug for SpentProofResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("SpentProofResponse")
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .finish()
        }
    }

    impl fmt::Debug for PushDevice {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("PushDevice")
                .field("approver", &self.approver)
                .field("session_id", &self.session_id)
                .finish_non_exhaustive()
        }
    }

    fn redacted(proof: &str) -> &'static str {
        if proof.is_empty() {
            "<none>"
        } else {
            "<redacted>"
        }
    }
}

mod names;

pub use names::UnknownName;

/// The encoded `FileDescriptorSet` of `countersign/v1/signer.proto`, which the
/// signer serves through gRPC server reflection. Committed beside the
/// generated code and checked for drift by the same test.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("gen/countersign.v1.fds.bin");

/// The reason codes of the signer's refusals travel in the gRPC metadata
/// entry [`reason::METADATA_KEY`]: the signer sets one on every error
/// status, and `countersign_gate::signer_client` decodes it, once, for
/// every head. The codes are the one catalogue's ([`reason::Reason`]).
pub mod reason {
    pub use countersign_reason::{Code, Reason, Status};

    /// The metadata key that carries a refusal's reason code.
    pub const METADATA_KEY: &str = "countersign-reason";
}
