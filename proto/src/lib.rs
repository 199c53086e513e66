//! Wire types of the signer's gRPC API (`proto/countersign/v1/signer.proto`).
//!
//! The code in `gen/` is generated and committed; `tests/generated_code_is_current.rs`
//! fails when it drifts from the `.proto` files. Conversion between these
//! wire types and domain types happens in the crates that own the domain
//! types, never here. Messages that carry a proof have a hand-written `Debug`
//! that prints only the proof's hash.
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

    fn redacted(proof: &str) -> &'static str {
        if proof.is_empty() {
            "<none>"
        } else {
            "<redacted>"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::v1::{ClaimHandoffResponse, DecideResponse};

    #[test]
    fn debug_of_proof_carrying_messages_never_prints_the_proof() {
        let secret = "v4.public.c2VjcmV0LXByb29mLWJ5dGVz";
        let decide = DecideResponse {
            proof: secret.into(),
            ..Default::default()
        };
        let claim = ClaimHandoffResponse {
            proof: secret.into(),
            ..Default::default()
        };
        for printed in [
            format!("{decide:?}"),
            format!("{claim:?}"),
            format!("{decide:#?}"),
        ] {
            assert!(!printed.contains(secret), "{printed}");
            assert!(printed.contains("<redacted>"), "{printed}");
        }
    }
}
