//! Connect to the signer over mutually authenticated TLS, as a head or an
//! approver, and fetch the public keys a gate verifies with.
//!
//! The certificate chosen decides the role: the signer reads role,
//! principal and approver name from the certificate, never from a request
//! field.
//!
//! [`SignerCallError::from_status`] is the one place a failed signer call is
//! decoded, for every head: a refusal keeps the signer's own reason code
//! (`countersign_proto::reason`), which each head renders unchanged.

use countersign_identity::{ClientCredential, Home, Role, tls};
use countersign_proto::reason::{Code, Reason};
use countersign_proto::v1::PublicKeysRequest;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_verifier::KeyRing;
use tonic::transport::Channel;

/// Why the signer could not be reached or answered nonsense.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TLS material could not be loaded.
    #[error("TLS setup: {0}")]
    Tls(String),
    /// The address or the connection failed.
    #[error("cannot reach the signer at {addr}: {reason} (is `countersign up` running?)")]
    Unreachable {
        /// The configured signer address.
        addr: String,
        /// What went wrong.
        reason: String,
    },
    /// The signer refused the call.
    #[error("the signer refused: {0}")]
    Status(String),
    /// A public key in the answer is not an Ed25519 key.
    #[error("the signer returned an invalid public key")]
    BadKey,
}

/// A signer call that did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SignerCallError {
    /// The signer refused the request; nothing was done.
    #[error("{0}")]
    Refused(SignerRefusal),
    /// The signer could not be reached (or the connection failed).
    #[error("the signer is unavailable: {0}")]
    Unavailable(String),
    /// The signer failed, or answered without a reason code.
    #[error("the signer failed: {0}")]
    Failed(String),
}

/// A refusal as the signer decided it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SignerRefusal {
    /// The signer's reason code: one the catalogue knows, or a newer
    /// signer's.
    pub code: Code,
    /// The signer's message: what was refused and why.
    pub message: String,
}

impl SignerCallError {
    /// Decodes a status the signer (or the transport) returned. A status
    /// with a well-formed reason code other than `internal` is a refusal;
    /// without one it is the transport's (unavailable) or a fault.
    pub fn from_status(status: &tonic::Status) -> Self {
        let code = status
            .metadata()
            .get(countersign_proto::reason::METADATA_KEY)
            .and_then(|value| value.to_str().ok())
            .filter(|code| is_reason_code(code))
            .map(Code::parse);
        match code {
            Some(code) if code != Reason::Internal => SignerCallError::Refused(SignerRefusal {
                code,
                message: status.message().to_owned(),
            }),
            _ => {
                // A failed TLS handshake surfaces on the first call; its
                // cause (for example "unknown CA") is in the source chain.
                let message = tls::error_chain(status);
                match status.code() {
                    tonic::Code::Unavailable
                    | tonic::Code::DeadlineExceeded
                    | tonic::Code::Cancelled => SignerCallError::Unavailable(message),
                    _ => SignerCallError::Failed(message),
                }
            }
        }
    }
}

impl From<tonic::Status> for SignerCallError {
    fn from(status: tonic::Status) -> Self {
        SignerCallError::from_status(&status)
    }
}

/// A reason code: 1 to 64 bytes of `a-z` and `_`.
fn is_reason_code(code: &str) -> bool {
    (1..=64).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// A gRPC client of the signer, authenticated with the certificate of `role`.
pub async fn connect(
    home: &Home,
    addr: &str,
    role: Role,
) -> Result<SignerClient<Channel>, ConnectError> {
    connect_with(home, addr, &ClientCredential::Role(role)).await
}

/// A gRPC client of the signer, authenticated with `credential`: a role's
/// certificate or a named approver's (which the signer records in the
/// provenance of the decisions made over it).
pub async fn connect_with(
    home: &Home,
    addr: &str,
    credential: &ClientCredential,
) -> Result<SignerClient<Channel>, ConnectError> {
    tls::install_crypto_provider();
    let tls =
        tls::client_config_for(home, credential).map_err(|e| ConnectError::Tls(e.to_string()))?;
    let unreachable = |reason: String| ConnectError::Unreachable {
        addr: addr.to_string(),
        reason,
    };
    let endpoint = tls::signer_endpoint(addr, tls).map_err(|e| unreachable(e.to_string()))?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| unreachable(tls::error_chain(&e)))?;
    Ok(SignerClient::new(channel))
}

/// A gRPC client of whichever of the signers at `addrs` answers first
/// (`[signer] addr`, then `[signer] fallback_addrs`), authenticated with
/// `credential`; a connection that breaks later is made again the same
/// way, to the next signer that answers
/// (`countersign_identity::failover`). With one address it is
/// [`connect_with`].
pub async fn connect_any(
    home: &Home,
    addrs: &[String],
    credential: &ClientCredential,
) -> Result<SignerClient<Channel>, ConnectError> {
    let [addr] = addrs else {
        let tls =
            tls::SignerTls::of(home, credential).map_err(|e| ConnectError::Tls(e.to_string()))?;
        let channel = countersign_identity::failover::signer_channel(addrs, &tls)
            .await
            .map_err(|e| ConnectError::Unreachable {
                addr: addrs.join(", "),
                reason: tls::error_chain(&e),
            })?;
        return Ok(SignerClient::new(channel));
    };
    connect_with(home, addr, credential).await
}

/// The verifying keys the signer publishes, as a key ring.
pub async fn public_keys(client: &mut SignerClient<Channel>) -> Result<KeyRing, ConnectError> {
    let response = client
        .public_keys(PublicKeysRequest {})
        .await
        .map_err(|s| ConnectError::Status(s.message().to_string()))?
        .into_inner();
    let mut ring = KeyRing::new();
    for key in response.keys {
        let bytes: [u8; 32] = key
            .public_key
            .as_slice()
            .try_into()
            .map_err(|_| ConnectError::BadKey)?;
        let verifying =
            ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(|_| ConnectError::BadKey)?;
        // The key id is derived from the key; a mismatch means a confused signer.
        if ring.insert(verifying) != key.key_id {
            return Err(ConnectError::BadKey);
        }
    }
    Ok(ring)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_refusal_keeps_the_signers_reason_code() {
        let mut status = tonic::Status::failed_precondition("operation \"x\" changed");
        status
            .metadata_mut()
            .insert("countersign-reason", "contract_changed".parse().unwrap());
        assert_eq!(
            SignerCallError::from_status(&status),
            SignerCallError::Refused(SignerRefusal {
                code: Code::Known(Reason::ContractChanged),
                message: "operation \"x\" changed".into(),
            })
        );
        // A code a newer signer sends is kept as it came.
        status
            .metadata_mut()
            .insert("countersign-reason", "from_a_newer_signer".parse().unwrap());
        assert!(matches!(
            SignerCallError::from_status(&status),
            SignerCallError::Refused(SignerRefusal { code: Code::Unknown(c), .. }) if c == "from_a_newer_signer"
        ));
    }

    #[test]
    fn a_status_without_a_reason_is_no_refusal() {
        assert!(matches!(
            SignerCallError::from_status(&tonic::Status::unavailable("down")),
            SignerCallError::Unavailable(_)
        ));
        let mut internal = tonic::Status::internal("internal error");
        internal
            .metadata_mut()
            .insert("countersign-reason", "internal".parse().unwrap());
        assert!(matches!(
            SignerCallError::from_status(&internal),
            SignerCallError::Failed(_)
        ));
        let mut odd = tonic::Status::not_found("x");
        odd.metadata_mut()
            .insert("countersign-reason", "Not-A-Code".parse().unwrap());
        assert!(matches!(
            SignerCallError::from_status(&odd),
            SignerCallError::Failed(_)
        ));
    }

    #[test]
    fn signer_connections_set_tcp_nodelay() {
        countersign_identity::tls::install_crypto_provider();
        let endpoint =
            tls::signer_endpoint("127.0.0.1:7443", tonic::transport::ClientTlsConfig::new())
                .unwrap();
        assert!(endpoint.get_tcp_nodelay());
    }
}
