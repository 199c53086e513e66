//! Inspecting the installation's certificates on disk, for `countersign
//! doctor`: parse a PEM certificate, verify that it chains to the
//! installation's CA exactly as the signer (client certificates) or a head
//! (the signer's server certificate) would during the handshake, and place
//! the current time in its validity window.
//!
//! Chains are verified by rustls's own WebPKI verifiers, the ones the mTLS
//! handshake uses, so a certificate the doctor accepts is one the handshake
//! accepts (extended key usage included). This module only reads: it never
//! issues, writes or trusts anything.

use std::sync::Arc;

use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;

use crate::tls::{SIGNER_DOMAIN, install_crypto_provider};

/// Why a certificate file could not be inspected or does not chain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertificateError {
    /// The text holds no `CERTIFICATE` PEM block.
    #[error("no PEM certificate")]
    NoCertificate,
    /// The first `CERTIFICATE` block is not valid X.509 DER.
    #[error("not a valid X.509 certificate")]
    NotX509,
    /// The CA certificate cannot be used as a trust root.
    #[error("the CA certificate cannot be a trust root: {0}")]
    BadRoot(String),
    /// The certificate does not verify against the CA.
    #[error("does not chain to the installation CA: {0}")]
    Chain(String),
}

/// A parsed certificate: its DER and its validity window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateFacts {
    /// The certificate, DER.
    pub der: Vec<u8>,
    /// Not valid before this instant.
    pub not_before: OffsetDateTime,
    /// Not valid after this instant.
    pub not_after: OffsetDateTime,
}

/// Where an instant falls in a certificate's validity window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validity {
    /// Valid, and for longer than the warning window.
    Valid {
        /// Time left until `not_after`.
        remaining: Duration,
    },
    /// Valid, but expires within the warning window.
    ExpiresSoon {
        /// Time left until `not_after`.
        remaining: Duration,
    },
    /// Past `not_after`.
    Expired {
        /// How long ago it expired.
        since: Duration,
    },
    /// Before `not_before`.
    NotYetValid {
        /// How long until it becomes valid.
        until: Duration,
    },
}

impl CertificateFacts {
    /// Reads the first `CERTIFICATE` block of PEM text.
    pub fn from_pem(text: &[u8]) -> Result<CertificateFacts, CertificateError> {
        let der = Pem::iter_from_buffer(text)
            .filter_map(Result::ok)
            .find(|pem| pem.label == "CERTIFICATE")
            .ok_or(CertificateError::NoCertificate)?
            .contents;
        CertificateFacts::from_der(der)
    }

    /// Parses DER.
    pub fn from_der(der: Vec<u8>) -> Result<CertificateFacts, CertificateError> {
        let (not_before, not_after) = {
            let (rest, cert) =
                X509Certificate::from_der(&der).map_err(|_| CertificateError::NotX509)?;
            if !rest.is_empty() {
                return Err(CertificateError::NotX509);
            }
            let validity = cert.validity();
            (
                validity.not_before.to_datetime(),
                validity.not_after.to_datetime(),
            )
        };
        Ok(CertificateFacts {
            der,
            not_before,
            not_after,
        })
    }

    /// Where `now` falls in the validity window; `ExpiresSoon` when fewer
    /// than `warn_within` remain.
    pub fn validity_at(&self, now: OffsetDateTime, warn_within: Duration) -> Validity {
        if now < self.not_before {
            Validity::NotYetValid {
                until: self.not_before - now,
            }
        } else if now > self.not_after {
            Validity::Expired {
                since: now - self.not_after,
            }
        } else if self.not_after - now < warn_within {
            Validity::ExpiresSoon {
                remaining: self.not_after - now,
            }
        } else {
            Validity::Valid {
                remaining: self.not_after - now,
            }
        }
    }

    /// The instant chains are verified at: `now`, moved into the validity
    /// window, so that an expired certificate is reported as expired (by
    /// [`CertificateFacts::validity_at`]) and its chain still checked.
    fn chain_time(&self, now: OffsetDateTime) -> UnixTime {
        let at = now.clamp(self.not_before, self.not_after);
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            u64::try_from(at.unix_timestamp()).unwrap_or(0),
        ))
    }
}

fn roots(ca: &CertificateFacts) -> Result<Arc<RootCertStore>, CertificateError> {
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca.der.clone()))
        .map_err(|e| CertificateError::BadRoot(e.to_string()))?;
    Ok(Arc::new(roots))
}

/// Verifies a client certificate against the CA as the signer's handshake
/// does (signature chain, client-auth usage), at `now` moved into the
/// certificate's validity window.
pub fn verify_client_chain(
    cert: &CertificateFacts,
    ca: &CertificateFacts,
    now: OffsetDateTime,
) -> Result<(), CertificateError> {
    install_crypto_provider();
    let verifier = WebPkiClientVerifier::builder(roots(ca)?)
        .build()
        .map_err(|e| CertificateError::BadRoot(e.to_string()))?;
    verifier
        .verify_client_cert(
            &CertificateDer::from(cert.der.as_slice()),
            &[],
            cert.chain_time(now),
        )
        .map(|_| ())
        .map_err(|e| CertificateError::Chain(e.to_string()))
}

/// Verifies the signer's server certificate against the CA as a head's
/// handshake does (signature chain, server-auth usage, the name heads
/// expect), at `now` moved into the certificate's validity window.
pub fn verify_server_chain(
    cert: &CertificateFacts,
    ca: &CertificateFacts,
    now: OffsetDateTime,
) -> Result<(), CertificateError> {
    install_crypto_provider();
    let verifier = WebPkiServerVerifier::builder(roots(ca)?)
        .build()
        .map_err(|e| CertificateError::BadRoot(e.to_string()))?;
    let name =
        ServerName::try_from(SIGNER_DOMAIN).map_err(|e| CertificateError::Chain(e.to_string()))?;
    verifier
        .verify_server_cert(
            &CertificateDer::from(cert.der.as_slice()),
            &[],
            &name,
            &[],
            cert.chain_time(now),
        )
        .map(|_| ())
        .map_err(|e| CertificateError::Chain(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Role;
    use crate::pki::{CaMaterial, issue_client_cert, issue_server_cert};

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn facts(pem: &str) -> CertificateFacts {
        CertificateFacts::from_pem(pem.as_bytes()).unwrap()
    }

    #[test]
    fn places_now_in_the_validity_window() {
        let now = OffsetDateTime::now_utc();
        let c = CertificateFacts {
            der: Vec::new(),
            not_before: now - Duration::days(1),
            not_after: now + Duration::days(10),
        };
        let month = Duration::days(30);
        assert!(matches!(
            c.validity_at(now, month),
            Validity::ExpiresSoon { .. }
        ));
        assert!(matches!(
            c.validity_at(now, Duration::days(5)),
            Validity::Valid { .. }
        ));
        assert_eq!(
            c.validity_at(now + Duration::days(11), month),
            Validity::Expired {
                since: Duration::days(1)
            }
        );
        assert_eq!(
            c.validity_at(now - Duration::days(2), month),
            Validity::NotYetValid {
                until: Duration::days(1)
            }
        );
    }

    #[test]
    fn refuses_text_without_a_certificate() {
        assert_eq!(
            CertificateFacts::from_pem(b"hello"),
            Err(CertificateError::NoCertificate)
        );
        assert_eq!(
            CertificateFacts::from_pem(
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
            ),
            Err(CertificateError::NotX509)
        );
    }

    #[test]
    fn an_expired_client_certificate_still_chains_and_a_foreign_one_does_not() {
        let ca = CaMaterial::generate("ca").unwrap();
        let other = CaMaterial::generate("other").unwrap();
        let now = OffsetDateTime::now_utc();
        let expired = issue_client_cert(
            &ca,
            Role::Head,
            P,
            now - Duration::days(2),
            now - Duration::days(1),
        )
        .unwrap();
        let cert = facts(&expired.cert_pem);
        let ca_facts = facts(ca.cert_pem());
        assert_eq!(verify_client_chain(&cert, &ca_facts, now), Ok(()));
        assert!(matches!(
            cert.validity_at(now, Duration::days(30)),
            Validity::Expired { .. }
        ));
        assert!(matches!(
            verify_client_chain(&cert, &facts(other.cert_pem()), now),
            Err(CertificateError::Chain(_))
        ));
    }

    #[test]
    fn the_server_certificate_chains_as_a_server_and_not_as_a_client() {
        let ca = CaMaterial::generate("ca").unwrap();
        let now = OffsetDateTime::now_utc();
        let server =
            issue_server_cert(&ca, now - Duration::hours(1), now + Duration::days(1)).unwrap();
        let cert = facts(&server.cert_pem);
        let ca_facts = facts(ca.cert_pem());
        assert_eq!(verify_server_chain(&cert, &ca_facts, now), Ok(()));
        assert!(matches!(
            verify_client_chain(&cert, &ca_facts, now),
            Err(CertificateError::Chain(_))
        ));
    }
}
