//! Every RPC of the `Signer` service and the roles that may call it, in
//! one table.
//!
//! Owns: the only implementation of the generated `Signer` trait. Each
//! method authorizes the caller's certificate against its row (the role,
//! and from it the principal), then calls its handler with the
//! `PeerIdentity` that authorization produced; a handler takes that
//! identity as an argument, so none runs unauthorized, and an RPC without
//! a row leaves the trait unimplemented (the crate does not compile).
//! Every error leaves through [`SignerService::refused`]. The RPCs that
//! write a proposal's facts run `detached` (to their end, whatever the
//! client does); the two watches are server streams (`watch.rs`).
//!
//! Notes: rules and passkeys are a person's (approver) only; a head can at
//! most propose `rule.create`. The notifier (the notify process) calls its
//! own rows and nothing else: no other row names it, so every other RPC
//! refuses it (`role_not_allowed`), and no row but its own accepts it.

use countersign_identity::Role;
use countersign_proto::v1 as wire;
use countersign_proto::v1::signer_server::Signer;
use tonic::{Request, Response, Status};
use tracing::Instrument as _;

use crate::error::RpcError;
use crate::service::{SignerService, authorize};
use crate::watch::Views;

macro_rules! rpcs {
    (
        unary { $( $name:ident($request:ident) -> $response:ident: $rpc:literal, [$($role:ident),+], $call:ident; )* }
        streams { $( $sname:ident($srequest:ident) -> $stream:ident of $item:ident: $srpc:literal, [$($srole:ident),+]; )* }
    ) => {
        /// Each RPC's name (as in `signer.proto`) and the roles it accepts,
        /// for the test that checks the table against the proto.
        #[cfg(test)]
        const TABLE: &[(&str, &[Role])] = &[
            $(($rpc, &[$(Role::$role),+]),)*
            $(($srpc, &[$(Role::$srole),+]),)*
        ];

        #[tonic::async_trait]
        impl Signer for SignerService {
            $(
                async fn $name(
                    &self,
                    request: Request<wire::$request>,
                ) -> Result<Response<wire::$response>, Status> {
                    let peer = authorize(&request, $rpc, &[$(Role::$role),+])
                        .map_err(|e| self.refused(e))?;
                    rpcs!(@call $call, self, $name, peer, request)
                        .map(Response::new)
                        .map_err(|e| self.refused(e))
                }
            )*
            $(
                type $stream = Views<wire::$item>;

                async fn $sname(
                    &self,
                    request: Request<wire::$srequest>,
                ) -> Result<Response<Self::$stream>, Status> {
                    let peer = authorize(&request, $srpc, &[$(Role::$srole),+])
                        .map_err(|e| self.refused(e))?;
                    SignerService::$sname(self, peer, request)
                        .await
                        .map(Response::new)
                        .map_err(|e| self.refused(e))
                }
            )*
        }
    };
    (@call await, $service:ident, $name:ident, $peer:ident, $request:ident) => {
        SignerService::$name($service, $peer, $request).await
    };
    // A write to a proposal runs to its end in a task of its own: a client
    // that goes away (or the request timeout) drops the RPC's future, and
    // a write the group commit finishes anyway must still be announced to
    // the proposal's watches after it commits (`changes.rs`).
    (@call detached, $service:ident, $name:ident, $peer:ident, $request:ident) => {{
        let service = $service.clone();
        tokio::spawn(
            async move { SignerService::$name(&service, $peer, $request).await }
                .in_current_span(),
        )
        .await
        .unwrap_or_else(|e| Err(RpcError::Internal(format!("{} task: {e}", stringify!($name)))))
    }};
    (@call now, $service:ident, $name:ident, $peer:ident, $request:ident) => {
        SignerService::$name($service, $peer, &$request)
    };
}

rpcs! {
    unary {
    propose(ProposeRequest) -> ProposalView: "Propose", [Head], detached;
    get_proposal(GetProposalRequest) -> ProposalView: "GetProposal", [Head, Approver], await;
    list_pending(ListPendingRequest) -> ListPendingResponse: "ListPending", [Approver], await;
    list_proposals(ListProposalsRequest) -> ListPendingResponse: "ListProposals", [Head, Approver], await;
    withdraw(WithdrawRequest) -> ProposalView: "Withdraw", [Head], detached;
    decide(DecideRequest) -> DecideResponse: "Decide", [Approver], detached;
    claim_handoff(ClaimHandoffRequest) -> ClaimHandoffResponse: "ClaimHandoff", [Head], await;
    release_handoff(ReleaseHandoffRequest) -> ReleaseHandoffResponse: "ReleaseHandoff", [Head], await;
    revoke(RevokeRequest) -> RevokeResponse: "Revoke", [Approver], detached;
    resolve_uncertain(ResolveUncertainRequest) -> ResolveUncertainResponse: "ResolveUncertain", [Approver], detached;
    reissue_for_reconcile(ReissueForReconcileRequest) -> ReissueForReconcileResponse: "ReissueForReconcile", [Head], await;
    spent_proof(SpentProofRequest) -> SpentProofResponse: "SpentProof", [Head], await;
    public_keys(PublicKeysRequest) -> PublicKeysResponse: "PublicKeys", [Head, Approver, Admin], await;
    begin_decision(BeginDecisionRequest) -> PasskeyChallenge: "BeginDecision", [Approver], await;
    begin_enrolment(BeginEnrolmentRequest) -> EnrolmentChallenge: "BeginEnrolment", [Approver], await;
    enrol(EnrolRequest) -> PasskeyView: "Enrol", [Approver], await;
    begin_removal(BeginRemovalRequest) -> PasskeyChallenge: "BeginRemoval", [Approver], await;
    remove_passkey(RemovePasskeyRequest) -> PasskeyView: "RemovePasskey", [Approver], await;
    list_passkeys(ListPasskeysRequest) -> ListPasskeysResponse: "ListPasskeys", [Approver], await;
    pending_notifications(PendingNotificationsRequest) -> PendingNotificationsResponse: "PendingNotifications", [Notifier], await;
    ack_notifications(AckNotificationsRequest) -> AckNotificationsResponse: "AckNotifications", [Notifier], await;
    push_devices(PushDevicesRequest) -> PushDevicesResponse: "PushDevices", [Notifier], await;
    set_push_devices(SetPushDevicesRequest) -> SetPushDevicesResponse: "SetPushDevices", [Approver], await;
    audit_events(AuditEventsRequest) -> AuditEventsResponse: "AuditEvents", [Notifier], await;
    create_rule(CreateRuleRequest) -> RuleView: "CreateRule", [Approver], await;
    revise_rule(ReviseRuleRequest) -> RuleView: "ReviseRule", [Approver], await;
    revoke_rule(RevokeRuleRequest) -> RuleView: "RevokeRule", [Approver], await;
    list_rules(ListRulesRequest) -> ListRulesResponse: "ListRules", [Approver], await;
    }
    streams {
    watch_proposal(WatchProposalRequest) -> WatchProposalStream of ProposalView: "WatchProposal", [Head, Approver];
    watch_pending(WatchPendingRequest) -> WatchPendingStream of ListPendingResponse: "WatchPending", [Approver];
    }
}

#[cfg(test)]
mod tests {
    use super::TABLE;

    /// Every RPC the proto declares has exactly one row (the trait would
    /// not compile without its method; this also catches a row naming an
    /// RPC by another name).
    #[test]
    fn the_table_names_every_rpc_of_the_proto_once() {
        let proto = include_str!("../../proto/countersign/v1/signer.proto");
        let declared: std::collections::BTreeSet<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .map(str::trim)
            .collect();
        let rows: std::collections::BTreeSet<&str> = TABLE.iter().map(|(rpc, _)| *rpc).collect();
        assert_eq!(rows.len(), TABLE.len(), "an RPC has two rows");
        assert_eq!(rows, declared);
    }

    /// The notifier role carries no approval authority: it is named by its
    /// own rows only, and they name no other role.
    #[test]
    fn the_notifier_role_calls_its_own_rpcs_and_nothing_else() {
        use countersign_identity::Role;
        let notifier: Vec<&str> = TABLE
            .iter()
            .filter(|(_, roles)| roles.contains(&Role::Notifier))
            .map(|(rpc, _)| *rpc)
            .collect();
        assert_eq!(
            notifier,
            [
                "PendingNotifications",
                "AckNotifications",
                "PushDevices",
                "AuditEvents"
            ]
        );
        for (rpc, roles) in TABLE {
            if notifier.contains(rpc) {
                assert_eq!(*roles, [Role::Notifier], "{rpc}");
            }
        }
    }
}
