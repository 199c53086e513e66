//! The consoles' Web Push devices, kept in the ledger: `SetPushDevices`,
//! by which a console (role approver, its certificate naming its
//! approver) records and forgets the devices of its own sessions, and
//! `PushDevices`, by which the notify process (role `notifier`) asks which
//! devices a push goes to.
//!
//! The devices live in the ledger, written by the console that holds the
//! sessions, so every signer of one ledger answers the same and no signer
//! reads a console's files (the notify process may run as a user of its
//! own, on another host). Who can decide an operation is the registry's
//! (a quorum's listed approvers), and for a given proposal also the
//! operator's policy's (the approvers its verdict named), which the signer
//! holds.
//!
//! Must not: record or forget a device of another principal or approver
//! than the caller's certificate names; answer another principal with
//! these devices; log an endpoint or a key; decide, issue or reveal
//! anything else.

use countersign_identity::PeerIdentity;
use countersign_ledger::PushDevice;
use countersign_proto::v1 as wire;
use countersign_verifier::ProposalId;
use time::format_description::well_known::Rfc3339;
use time::{Duration, OffsetDateTime};
use tonic::Request;

use crate::error::RpcError;
use crate::service::SignerService;

/// The longest operation name a request may carry.
const MAX_OPERATION_BYTES: usize = 256;
/// The most approver names a request may carry.
const MAX_APPROVERS: usize = 100;
/// The most devices a `SetPushDevices` may keep, and sessions it may name
/// to forget (the console sends at most 100 of each per call).
const MAX_CHANGES: usize = 500;
/// The longest push service URL recorded (browsers' are under 1 KiB).
const MAX_ENDPOINT_BYTES: usize = 2048;
/// The longest key or auth secret recorded (base64url; a P-256 point is
/// 87 characters).
const MAX_KEY_BYTES: usize = 128;
/// The longest console session id.
const MAX_SESSION_ID_BYTES: usize = 64;
/// How far ahead a session may end (the console's last 12 hours).
const LONGEST_SESSION: Duration = Duration::days(30);

impl SignerService {
    pub(crate) async fn set_push_devices(
        &self,
        peer: PeerIdentity,
        request: Request<wire::SetPushDevicesRequest>,
    ) -> Result<wire::SetPushDevicesResponse, RpcError> {
        let Some(approver) = peer.approver.as_ref() else {
            return Err(RpcError::UnnamedApprover("SetPushDevices"));
        };
        let wire::SetPushDevicesRequest { keep, mut remove } = request.into_inner();
        if keep.len() > MAX_CHANGES {
            return Err(invalid("keep", format!("at most {MAX_CHANGES} devices")));
        }
        if remove.len() > MAX_CHANGES {
            return Err(invalid(
                "remove",
                format!("at most {MAX_CHANGES} session ids"),
            ));
        }
        for id in &remove {
            session_id("remove", id)?;
        }
        let now = OffsetDateTime::now_utc();
        // A session already ended by this signer's clock (which may run
        // ahead of the console's host's): forgotten, not kept.
        let (keep, ended): (Vec<_>, Vec<_>) = keep
            .into_iter()
            .map(kept)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .partition(|d| d.expires_at > now);
        remove.extend(ended.into_iter().map(|d| d.session_id));
        let (kept, removed) = self
            .state
            .ledger
            .set_push_devices(peer.principal.as_str(), approver.as_str(), &keep, &remove)
            .await?;
        // Every minute for every console: not worth an info line.
        tracing::debug!(
            %approver,
            kept,
            removed,
            "recorded the console's Web Push devices"
        );
        Ok(wire::SetPushDevicesResponse { kept, removed })
    }

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
            return Err(invalid(
                "operation",
                format!("must be 1..={MAX_OPERATION_BYTES} bytes"),
            ));
        }
        if approvers.len() > MAX_APPROVERS {
            return Err(invalid(
                "approvers",
                format!("at most {MAX_APPROVERS} names"),
            ));
        }
        let registry = self.registry_now()?;
        let mut quorum = registry.get(&operation).and_then(|op| op.quorum.clone());
        if !proposal_id.is_empty() {
            // The quorum of this very proposal: the operator's policy may
            // name approvers its operation does not.
            let id = ProposalId::parse(proposal_id)
                .map_err(|e| invalid("proposal_id", e.to_string()))?;
            match self.state.ledger.proposal(&id).await? {
                Some(record) if record.proposal.principal == peer.principal => {
                    quorum = crate::operator_policy::quorum_of(&record, quorum);
                }
                _ => return Err(RpcError::UnknownProposal(id.to_string())),
            }
        }
        let stored = self
            .state
            .ledger
            .push_devices(peer.principal.as_str())
            .await?;
        let can_decide = |approver: &str| {
            quorum
                .as_ref()
                .is_none_or(|q| q.approvers().iter().any(|a| a.as_str() == approver))
        };
        let devices = stored
            .into_iter()
            .filter(|d| approvers.is_empty() || approvers.contains(&d.approver))
            .filter(|d| can_decide(&d.approver))
            .map(|d| wire::PushDevice {
                approver: d.approver,
                session_id: d.device.session_id,
                endpoint: d.device.endpoint,
                p256dh: d.device.p256dh,
                auth: d.device.auth,
                application_server_key: d.device.application_server_key,
            })
            .collect();
        Ok(wire::PushDevicesResponse { devices })
    }
}

fn invalid(field: &'static str, reason: String) -> RpcError {
    RpcError::InvalidField { field, reason }
}

/// A device to keep, each field checked for its shape (the notify
/// process parses the subscription strictly before it sends).
fn kept(d: wire::KeptPushDevice) -> Result<PushDevice, RpcError> {
    session_id("keep.session_id", &d.session_id)?;
    if d.endpoint.is_empty()
        || d.endpoint.len() > MAX_ENDPOINT_BYTES
        || !d.endpoint.bytes().all(|b| b.is_ascii_graphic())
        || !(d.endpoint.starts_with("https://") || d.endpoint.starts_with("http://"))
    {
        return Err(invalid(
            "keep.endpoint",
            format!("must be an http(s) URL of at most {MAX_ENDPOINT_BYTES} bytes"),
        ));
    }
    for (field, value) in [
        ("keep.p256dh", &d.p256dh),
        ("keep.auth", &d.auth),
        ("keep.application_server_key", &d.application_server_key),
    ] {
        let base64url = |b: u8| b.is_ascii_alphanumeric() || b == b'-' || b == b'_';
        if value.is_empty() || value.len() > MAX_KEY_BYTES || !value.bytes().all(base64url) {
            return Err(invalid(
                field,
                format!("must be 1..={MAX_KEY_BYTES} bytes of base64url"),
            ));
        }
    }
    let latest = OffsetDateTime::now_utc() + LONGEST_SESSION;
    let expires_at = OffsetDateTime::parse(&d.expires_at, &Rfc3339)
        .ok()
        .filter(|t| *t <= latest)
        .ok_or_else(|| {
            invalid(
                "keep.expires_at",
                "must be an RFC 3339 time at most 30 days ahead".into(),
            )
        })?;
    Ok(PushDevice {
        session_id: d.session_id,
        endpoint: d.endpoint,
        p256dh: d.p256dh,
        auth: d.auth,
        application_server_key: d.application_server_key,
        expires_at,
    })
}

/// A console session id: 1..=64 bytes of `[0-9A-Za-z_-]`.
fn session_id(field: &'static str, id: &str) -> Result<(), RpcError> {
    let ok = !id.is_empty()
        && id.len() <= MAX_SESSION_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!("must be 1..={MAX_SESSION_ID_BYTES} bytes of [0-9A-Za-z_-]"),
        ))
    }
}
