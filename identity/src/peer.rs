//! Roles and the peer identity a client certificate names.
//!
//! A client's role, principal and (for an approver) optional name come only
//! from the single URI SAN `countersign://<role>/<principal>` or
//! `countersign://approver/<principal>/<name>` of its (already
//! chain-verified) certificate. This module parses; it does not verify
//! chains — rustls does that during the handshake.

use std::fmt;
use std::str::FromStr;

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::FromDer;

pub use countersign_verifier::{ApproverName, Principal};

use crate::IdentityError;

/// The URI SAN of the signer's server certificate.
pub const SIGNER_URI: &str = "countersign://signer";

const URI_PREFIX: &str = "countersign://";

/// What a client certificate allows its holder to ask of the signer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// A trusted human interface (CLI approve, web console): decides and revokes.
    Approver,
    /// An agent-side head (CLI, API, MCP): proposes and claims handoffs.
    Head,
    /// Key administration.
    Admin,
    /// The notify process (`countersign notify serve`): reads the
    /// notifications waiting for delivery and acknowledges them. No
    /// approval authority: it cannot propose, decide, revoke or read a
    /// proposal or a proof.
    Notifier,
}

impl Role {
    /// Every role, in a fixed order.
    pub const ALL: [Role; 4] = [Role::Approver, Role::Head, Role::Admin, Role::Notifier];

    /// The role's name in certificates and file names.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Approver => "approver",
            Role::Head => "head",
            Role::Admin => "admin",
            Role::Notifier => "notifier",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = IdentityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "approver" => Ok(Role::Approver),
            "head" => Ok(Role::Head),
            "admin" => Ok(Role::Admin),
            "notifier" => Ok(Role::Notifier),
            other => Err(IdentityError::UnknownRole(other.to_owned())),
        }
    }
}

/// Who is on the other end of an mTLS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    /// The role named by the certificate.
    pub role: Role,
    /// The principal named by the certificate (`pr_` + 32 hex).
    pub principal: Principal,
    /// The approver's name, for a named approver certificate
    /// (`countersign://approver/<principal>/<name>`); `None` otherwise.
    /// Only an approver can have one.
    pub approver: Option<ApproverName>,
}

impl PeerIdentity {
    /// The URI SAN that names this identity.
    pub fn uri(&self) -> String {
        match &self.approver {
            None => format!("{URI_PREFIX}{}/{}", self.role, self.principal),
            Some(name) => format!("{URI_PREFIX}{}/{}/{name}", self.role, self.principal),
        }
    }
}

/// The client credential a process presents to the signer: one of the
/// installation's role certificates, or a named approver certificate (a
/// trusted interface such as the web console, which the signer records in
/// the proof's provenance).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientCredential {
    /// `pki/<role>.pem`: the unnamed certificate of a role.
    Role(Role),
    /// `pki/approver-<name>.pem`: an approver certificate naming `<name>`.
    NamedApprover(ApproverName),
}

impl ClientCredential {
    /// The role the credential's certificate names.
    pub fn role(&self) -> Role {
        match self {
            ClientCredential::Role(role) => *role,
            ClientCredential::NamedApprover(_) => Role::Approver,
        }
    }

    /// The credential's file stem under `pki/`: `<role>` or `approver-<name>`.
    pub fn file_stem(&self) -> String {
        match self {
            ClientCredential::Role(role) => role.as_str().to_owned(),
            ClientCredential::NamedApprover(name) => format!("{}-{name}", Role::Approver),
        }
    }
}

/// Reads the role and principal from a DER client certificate: it must have
/// exactly one URI SAN, of the form `countersign://<role>/<principal>`.
pub fn peer_identity(cert_der: &[u8]) -> Result<PeerIdentity, IdentityError> {
    let (rest, cert) =
        X509Certificate::from_der(cert_der).map_err(|_| IdentityError::PeerCertificate)?;
    if !rest.is_empty() {
        return Err(IdentityError::PeerCertificate);
    }
    let san = cert
        .subject_alternative_name()
        .map_err(|_| IdentityError::PeerCertificate)?
        .ok_or(IdentityError::NoPeerUri)?;
    let uris: Vec<&str> = san
        .value
        .general_names
        .iter()
        .filter_map(|name| match name {
            GeneralName::URI(uri) => Some(*uri),
            _ => None,
        })
        .collect();
    let uri = match uris.as_slice() {
        [] => return Err(IdentityError::NoPeerUri),
        [one] => *one,
        many => return Err(IdentityError::MultiplePeerUris(many.len())),
    };
    parse_peer_uri(uri)
}

/// Parses `countersign://<role>/<principal>` or
/// `countersign://approver/<principal>/<name>`.
pub(crate) fn parse_peer_uri(uri: &str) -> Result<PeerIdentity, IdentityError> {
    let malformed = || IdentityError::MalformedPeerUri(uri.to_owned());
    let rest = uri.strip_prefix(URI_PREFIX).ok_or_else(malformed)?;
    let mut segments = rest.split('/');
    let (Some(role), Some(principal), name, None) = (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) else {
        return Err(malformed());
    };
    let role = Role::from_str(role)?;
    let principal = Principal::parse(principal)
        .map_err(|_| IdentityError::BadPeerPrincipal(principal.to_owned()))?;
    let approver = match (role, name) {
        (_, None) => None,
        (Role::Approver, Some(name)) => Some(
            ApproverName::parse(name)
                .map_err(|_| IdentityError::BadApproverName(name.to_owned()))?,
        ),
        (Role::Head | Role::Admin | Role::Notifier, Some(_)) => {
            return Err(IdentityError::NameOnNonApprover(role));
        }
    };
    Ok(PeerIdentity {
        role,
        principal,
        approver,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    #[test]
    fn parses_each_role() {
        for role in Role::ALL {
            let id = parse_peer_uri(&format!("countersign://{role}/{P}")).unwrap();
            assert_eq!(id.role, role);
            assert_eq!(id.principal, P);
            assert_eq!(id.uri(), format!("countersign://{role}/{P}"));
        }
    }

    #[test]
    fn refuses_malformed_uris() {
        assert_eq!(
            parse_peer_uri("https://head/x"),
            Err(IdentityError::MalformedPeerUri("https://head/x".into()))
        );
        assert_eq!(
            parse_peer_uri("countersign://signer"),
            Err(IdentityError::MalformedPeerUri(
                "countersign://signer".into()
            ))
        );
        assert_eq!(
            parse_peer_uri(&format!("countersign://root/{P}")),
            Err(IdentityError::UnknownRole("root".into()))
        );
        assert_eq!(
            parse_peer_uri("countersign://head/pr_0123456789ABCDEF0123456789abcdef"),
            Err(IdentityError::BadPeerPrincipal(
                "pr_0123456789ABCDEF0123456789abcdef".into()
            ))
        );
    }

    #[test]
    fn parses_a_named_approver_and_round_trips() {
        for name in ["console", "a", "0", "web-2", &"z".repeat(32)] {
            let uri = format!("countersign://approver/{P}/{name}");
            let id = parse_peer_uri(&uri).unwrap();
            assert_eq!(id.role, Role::Approver);
            assert_eq!(id.principal, P);
            assert_eq!(id.approver.as_ref().map(ApproverName::as_str), Some(name));
            assert_eq!(id.uri(), uri);
        }
        let unnamed = parse_peer_uri(&format!("countersign://approver/{P}")).unwrap();
        assert_eq!(unnamed.approver, None);
    }

    #[test]
    fn refuses_a_name_on_any_role_but_approver() {
        assert_eq!(
            parse_peer_uri(&format!("countersign://head/{P}/extra")),
            Err(IdentityError::NameOnNonApprover(Role::Head))
        );
        assert_eq!(
            parse_peer_uri(&format!("countersign://admin/{P}/console")),
            Err(IdentityError::NameOnNonApprover(Role::Admin))
        );
        assert_eq!(
            parse_peer_uri(&format!("countersign://head/{P}/")),
            Err(IdentityError::NameOnNonApprover(Role::Head))
        );
    }

    #[test]
    fn refuses_an_empty_or_bad_approver_name() {
        let too_long = "z".repeat(33);
        for name in [
            "",
            "-console",
            "Console",
            "con_sole",
            "con%20sole",
            &too_long,
        ] {
            assert_eq!(
                parse_peer_uri(&format!("countersign://approver/{P}/{name}")),
                Err(IdentityError::BadApproverName(name.to_owned())),
                "{name:?}"
            );
        }
    }

    #[test]
    fn refuses_more_segments_than_role_principal_and_name() {
        for uri in [
            format!("countersign://approver/{P}/console/extra"),
            format!("countersign://approver/{P}/console/"),
            format!("countersign://approver/{P}//"),
        ] {
            assert_eq!(
                parse_peer_uri(&uri),
                Err(IdentityError::MalformedPeerUri(uri.clone()))
            );
        }
    }

    #[test]
    fn a_credential_names_its_role_and_file_stem() {
        let console = ClientCredential::NamedApprover(ApproverName::parse("console").unwrap());
        assert_eq!(console.role(), Role::Approver);
        assert_eq!(console.file_stem(), "approver-console");
        for role in Role::ALL {
            assert_eq!(ClientCredential::Role(role).role(), role);
            assert_eq!(ClientCredential::Role(role).file_stem(), role.as_str());
        }
    }
}
