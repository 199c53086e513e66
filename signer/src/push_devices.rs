//! `PushDevices`: the browsers subscribed to Web Push in the console of
//! this signer's home, for the notify process (role `notifier`).
//!
//! The console runs in the signer's home as the signer's user and keeps
//! each paired browser's subscription with its session
//! (`console-sessions-<approver>.json`); the notify process may run as a
//! user of its own (the hardened installation), so it asks here rather
//! than reading those files. Who can decide an operation is the registry's
//! (a quorum's listed approvers), and for a given proposal also the
//! operator's policy's (the approvers its verdict named), which the signer
//! holds.
//!
//! Must not: answer another principal with this home's devices; log an
//! endpoint or a key; decide, issue or reveal anything else.

use std::path::PathBuf;

use countersign_identity::console_devices::{StoredDevice, subscribed_devices};
use countersign_identity::files::read_private;
use countersign_identity::{Home, PeerIdentity};
use countersign_proto::v1 as wire;
use countersign_verifier::ProposalId;
use time::OffsetDateTime;
use tonic::Request;

use crate::error::RpcError;
use crate::service::SignerService;

/// The longest operation name a request may carry.
const MAX_OPERATION_BYTES: usize = 256;
/// The most approver names a request may carry.
const MAX_APPROVERS: usize = 100;

/// The home the signer runs in, which the console shares.
#[derive(Debug, Clone)]
pub(crate) struct ConsoleHome {
    root: PathBuf,
    vapid_public: PathBuf,
    principal: String,
}

impl ConsoleHome {
    /// The console of `home`, whose principal is `principal`.
    pub(crate) fn of(home: &Home, principal: String) -> ConsoleHome {
        ConsoleHome {
            root: home.root().to_path_buf(),
            vapid_public: home.vapid_public_path(),
            principal,
        }
    }

    /// The VAPID public key the console serves, or empty without one.
    fn application_server_key(&self) -> String {
        read_private(&self.vapid_public)
            .ok()
            .and_then(|bytes| {
                std::str::from_utf8(&bytes)
                    .map(|t| t.trim().to_owned())
                    .ok()
            })
            .unwrap_or_default()
    }
}

impl SignerService {
    pub(crate) async fn push_devices(
        &self,
        peer: PeerIdentity,
        request: Request<wire::PushDevicesRequest>,
    ) -> Result<wire::PushDevicesResponse, RpcError> {
        let wire::PushDevicesRequest {
            operation,
            approvers,
            proposal_id,
        } = request.into_inner();
        if operation.is_empty() || operation.len() > MAX_OPERATION_BYTES {
            return Err(RpcError::InvalidField {
                field: "operation",
                reason: format!("must be 1..={MAX_OPERATION_BYTES} bytes"),
            });
        }
        if approvers.len() > MAX_APPROVERS {
            return Err(RpcError::InvalidField {
                field: "approvers",
                reason: format!("at most {MAX_APPROVERS} names"),
            });
        }
        let Some(home) = self
            .state
            .console_home
            .as_ref()
            .filter(|home| home.principal == peer.principal.as_str())
        else {
            return Ok(wire::PushDevicesResponse::default());
        };
        let root = home.root.clone();
        let stored = tokio::task::spawn_blocking(move || {
            subscribed_devices(&root, OffsetDateTime::now_utc())
        })
        .await
        .map_err(|e| RpcError::Internal(format!("push devices task: {e}")))?
        .map_err(|e| RpcError::Internal(format!("the console's session stores: {e}")))?;
        let registry = self.registry_now()?;
        let mut quorum = registry.get(&operation).and_then(|op| op.quorum.clone());
        if !proposal_id.is_empty() {
            // The quorum of this very proposal: the operator's policy may
            // name approvers its operation does not.
            let id = ProposalId::parse(proposal_id).map_err(|e| RpcError::InvalidField {
                field: "proposal_id",
                reason: e.to_string(),
            })?;
            match self.state.ledger.proposal(&id).await? {
                Some(record) if record.proposal.principal == peer.principal => {
                    quorum = crate::operator_policy::quorum_of(&record, quorum);
                }
                _ => return Err(RpcError::UnknownProposal(id.to_string())),
            }
        }
        let can_decide = |d: &StoredDevice| {
            quorum
                .as_ref()
                .is_none_or(|q| q.approvers().iter().any(|a| a.as_str() == d.approver))
        };
        let devices = stored
            .into_iter()
            .filter(|d| approvers.is_empty() || approvers.contains(&d.approver))
            .filter(can_decide)
            .map(|d| wire::PushDevice {
                approver: d.approver,
                session_id: d.session_id,
                endpoint: d.endpoint,
                p256dh: d.p256dh,
                auth: d.auth,
            })
            .collect();
        Ok(wire::PushDevicesResponse {
            devices,
            application_server_key: home.application_server_key(),
        })
    }
}
