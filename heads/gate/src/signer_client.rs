//! Connect to the signer over mutually authenticated TLS, as a head or an
//! approver, and fetch the public keys a gate verifies with.
//!
//! The certificate chosen decides the role: the signer reads role and
//! principal from the certificate, never from a request field.

use countersign_identity::{Home, Role, tls};
use countersign_proto::v1::PublicKeysRequest;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_verifier::KeyRing;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

/// Why the signer could not be reached or answered nonsense.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// A gRPC client of the signer, authenticated with the certificate of `role`.
pub async fn connect(
    home: &Home,
    addr: &str,
    role: Role,
) -> Result<SignerClient<Channel>, ConnectError> {
    tls::install_crypto_provider();
    let tls = tls::client_config(home, role).map_err(|e| ConnectError::Tls(e.to_string()))?;
    let unreachable = |reason: String| ConnectError::Unreachable {
        addr: addr.to_string(),
        reason,
    };
    let endpoint = endpoint(addr, tls).map_err(|e| unreachable(e.to_string()))?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| unreachable(error_chain(&e)))?;
    Ok(SignerClient::new(channel))
}

/// The endpoint every head and approver connects to the signer through.
fn endpoint(addr: &str, tls: ClientTlsConfig) -> Result<Endpoint, tonic::transport::Error> {
    Ok(Endpoint::from_shared(format!("https://{addr}"))?
        .tls_config(tls)?
        // Explicit: a request's last frame must not wait for a delayed ACK.
        .tcp_nodelay(true)
        .connect_timeout(std::time::Duration::from_secs(5))
        .timeout(std::time::Duration::from_secs(30)))
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

/// The full cause chain of a transport error, on one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn signer_connections_set_tcp_nodelay() {
        countersign_identity::tls::install_crypto_provider();
        let endpoint = endpoint("127.0.0.1:7443", ClientTlsConfig::new()).unwrap();
        assert!(endpoint.get_tcp_nodelay());
    }
}
