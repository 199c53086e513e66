//! The one place an [`RpcError`] becomes a gRPC [`Status`].
//!
//! Refusals get a specific code and message; internal faults get
//! `INTERNAL` with the generic message "internal error", and their detail
//! goes to the log only. Nothing that reaches this function holds a proof.

use tonic::{Code, Status};

use crate::error::RpcError;

/// Maps an RPC error to the status the client sees.
pub(crate) fn to_status(err: RpcError) -> Status {
    let code = match &err {
        RpcError::NoClientCertificate | RpcError::PeerIdentity(_) => Code::Unauthenticated,
        RpcError::RoleNotAllowed { .. }
        | RpcError::NotYourProposal
        | RpcError::HandoffSessionMismatch => Code::PermissionDenied,
        RpcError::UnknownOperation(_)
        | RpcError::InvalidField { .. }
        | RpcError::InvalidArguments(_) => Code::InvalidArgument,
        RpcError::UnknownProposal(_) | RpcError::NoLiveHandoff => Code::NotFound,
        RpcError::NotPending { .. }
        | RpcError::ContractChanged(_)
        | RpcError::PolicyChanged
        | RpcError::HandoffNotClaimed
        | RpcError::NotUncertain(_)
        | RpcError::StillRunning { .. } => Code::FailedPrecondition,
        RpcError::Internal(detail) => {
            tracing::error!(%detail, "internal error");
            return Status::internal("internal error");
        }
    };
    tracing::info!(code = ?code, reason = %err, "request refused");
    Status::new(code, err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_identity::Role;

    #[test]
    fn internal_detail_never_reaches_the_client() {
        let status = to_status(RpcError::Internal("db at /secret/path failed".into()));
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "internal error");
    }

    #[test]
    fn role_refusal_names_role_and_rpc() {
        let status = to_status(RpcError::RoleNotAllowed {
            role: Role::Head,
            rpc: "Decide",
        });
        assert_eq!(status.code(), Code::PermissionDenied);
        assert_eq!(status.message(), "role head may not call Decide");
    }
}
