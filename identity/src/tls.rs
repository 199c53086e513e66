//! TLS for the signer and its clients: the one place that installs the
//! rustls crypto provider, builders for tonic's server and client TLS
//! configurations, and the rustls client configuration of the failover
//! connector ([`SignerTls`]), which completes its handshakes itself.
//!
//! The server requires a client certificate chaining to the installation's
//! CA; clients trust only that CA and expect the name `localhost`. Key PEM
//! read here is handed to tonic or rustls (which hold the key for the
//! connection's life); this module keeps no copy of its own.

use std::sync::{Arc, Once};
use std::time::Duration;

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

use crate::pki::read_text;
use crate::{ClientCredential, Home, IdentityError, Role};

/// The server name clients expect in the signer's certificate.
pub const SIGNER_DOMAIN: &str = "localhost";
/// How long a TLS handshake may take before the server drops the connection.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Installs rustls's `ring` provider as the process default. The only place
/// that does so; safe to call any number of times from any thread.
pub fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means a provider is already installed, which is what we want.
        let _already = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The signer's server TLS: `pki/signer.pem` + key, client certificates
/// required and verified against `pki/ca.pem`.
pub fn server_config(home: &Home) -> Result<ServerTlsConfig, IdentityError> {
    let cert = read_text(&home.signer_cert_path())?;
    let key = zeroize::Zeroizing::new(read_text(&home.signer_tls_key_path())?);
    let ca = read_text(&home.ca_cert_path())?;
    Ok(server_config_from_pem(&cert, &key, &ca))
}

/// [`server_config`] from PEM text.
pub fn server_config_from_pem(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pem: &str,
) -> ServerTlsConfig {
    ServerTlsConfig::new()
        .identity(Identity::from_pem(cert_pem, key_pem))
        .client_ca_root(Certificate::from_pem(client_ca_pem))
        .client_auth_optional(false)
        .timeout(HANDSHAKE_TIMEOUT)
}

/// A client TLS configuration for `role`: trusts `pki/ca.pem`, presents
/// `pki/<role>.pem` + key, expects the server name `localhost`.
pub fn client_config(home: &Home, role: Role) -> Result<ClientTlsConfig, IdentityError> {
    client_config_for(home, &ClientCredential::Role(role))
}

/// A client TLS configuration presenting `credential`: trusts `pki/ca.pem`,
/// presents [`Home::credential_cert_path`] + key, expects the server name
/// `localhost`.
pub fn client_config_for(
    home: &Home,
    credential: &ClientCredential,
) -> Result<ClientTlsConfig, IdentityError> {
    let ca = read_text(&home.ca_cert_path())?;
    let cert = read_text(&home.credential_cert_path(credential))?;
    let key = zeroize::Zeroizing::new(read_text(&home.credential_key_path(credential))?);
    Ok(client_config_from_pem(&ca, &cert, &key))
}

/// The endpoint every client of the signer (heads, approver interfaces,
/// the notify process) connects through: `https://<addr>` with `tls`.
pub fn signer_endpoint(
    addr: &str,
    tls: ClientTlsConfig,
) -> Result<Endpoint, tonic::transport::Error> {
    Ok(signer_endpoint_settings(
        Endpoint::from_shared(format!("https://{addr}"))?.tls_config(tls)?,
    ))
}

/// The settings of every signer endpoint, with one address or several
/// (`crate::failover`).
pub(crate) fn signer_endpoint_settings(endpoint: Endpoint) -> Endpoint {
    endpoint
        // Explicit: a request's last frame must not wait for a delayed ACK.
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(5))
        // Bounds how long a request waits for its answer to start; a
        // watch stream's messages are not bounded by it.
        .timeout(Duration::from_secs(30))
        // While a stream is open (a request, or a watch waiting for a
        // decision), a PING every 10 s finds a signer that vanished or
        // froze without closing the connection within 20 s, so that the
        // next request connects again (to the next signer, with several);
        // an idle connection sends none.
        .http2_keep_alive_interval(KEEPALIVE_EVERY)
        .keep_alive_timeout(KEEPALIVE_WITHIN)
        .keep_alive_while_idle(false)
}

/// How often an open stream's connection to the signer is PINGed.
pub const KEEPALIVE_EVERY: Duration = Duration::from_secs(10);
/// How long a PING may go unanswered before the connection is dropped.
pub const KEEPALIVE_WITHIN: Duration = Duration::from_secs(10);

/// A signer client's TLS as rustls configures it, for the failover
/// connector, which completes each address's handshake itself
/// (`crate::failover`): trusts the installation's CA only, presents the
/// client's certificate, offers HTTP/2.
#[derive(Clone)]
pub struct SignerTls(Arc<rustls::ClientConfig>);

impl std::fmt::Debug for SignerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignerTls")
    }
}

impl SignerTls {
    /// Presenting `credential` of `home` (as [`client_config_for`]).
    pub fn of(home: &Home, credential: &ClientCredential) -> Result<SignerTls, IdentityError> {
        let ca = read_text(&home.ca_cert_path())?;
        let cert = read_text(&home.credential_cert_path(credential))?;
        let key = zeroize::Zeroizing::new(read_text(&home.credential_key_path(credential))?);
        SignerTls::from_pem(&ca, &cert, &key)
    }

    /// From PEM text: the CA to trust, the client's certificate chain and
    /// its key.
    pub fn from_pem(
        ca_pem: &str,
        cert_pem: &str,
        key_pem: &str,
    ) -> Result<SignerTls, IdentityError> {
        use rustls::pki_types::pem::PemObject as _;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        install_crypto_provider();
        let pki =
            |what: &str, e: &dyn std::fmt::Display| IdentityError::Pki(format!("{what}: {e}"));
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let cert = cert.map_err(|e| pki("the CA certificate", &e))?;
            roots.add(cert).map_err(|e| pki("the CA certificate", &e))?;
        }
        if roots.is_empty() {
            return Err(IdentityError::Pki(
                "the CA file holds no certificate".into(),
            ));
        }
        let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pki("the client certificate", &e))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
            .map_err(|e| pki("the client key", &e))?;
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .map_err(|e| pki("the client certificate and key", &e))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(SignerTls(Arc::new(config)))
    }

    /// The rustls configuration.
    pub(crate) fn config(&self) -> Arc<rustls::ClientConfig> {
        Arc::clone(&self.0)
    }
}

/// An error and its causes on one line (`a: b: c`): a failed TLS
/// handshake's cause, for example "unknown CA", is in the source chain. A
/// cause that says what the line already ends with (transport errors often
/// repeat their source's words, "tcp connect error: tcp connect error:
/// ...") is not written twice.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let words = cause.to_string();
        if !text.ends_with(&words) {
            text.push_str(": ");
            text.push_str(&words);
        }
        source = cause.source();
    }
    text
}

/// [`client_config`] from PEM text.
pub fn client_config_from_pem(ca_pem: &str, cert_pem: &str, key_pem: &str) -> ClientTlsConfig {
    client_config_without_identity(ca_pem).identity(Identity::from_pem(cert_pem, key_pem))
}

/// A client that presents no certificate (tests: the server must refuse it).
pub fn client_config_without_identity(ca_pem: &str) -> ClientTlsConfig {
    ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca_pem))
        .domain_name(SIGNER_DOMAIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let refused = Layer("Connection refused (os error 111)", None);
        let connect = Layer("tcp connect error", Some(Box::new(refused)));
        let outer = Layer("tcp connect error", Some(Box::new(connect)));
        let transport = Layer("transport error", Some(Box::new(outer)));
        assert_eq!(
            error_chain(&transport),
            "transport error: tcp connect error: Connection refused (os error 111)"
        );
    }
}
