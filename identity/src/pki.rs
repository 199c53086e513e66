//! The development PKI: a CA, the signer's server certificate and the
//! approver and head client certificates, made in-process with rcgen.
//!
//! Files are created new (keys 0600) and never overwritten, so running
//! [`create_dev_pki`] again is harmless. Production deployments bring their
//! own CA and only need the same file layout. This module also issues
//! arbitrary client certificates from a given CA, which tests use for
//! expired, foreign-CA and wrong-role certificates.

use std::fmt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType, SerialNumber,
};
use time::{Duration, OffsetDateTime};
use zeroize::Zeroizing;

use crate::files::{read_private, write_private_new};
use crate::home::create_private_dir;
use crate::peer::{Role, SIGNER_URI};
use crate::{Home, IdentityError, is_valid_principal};

/// How long development certificates stay valid.
const DEV_VALIDITY: Duration = Duration::days(3650);
/// Backdating of `not_before`, to tolerate small clock differences.
const BACKDATE: Duration = Duration::hours(1);

/// A CA that can issue certificates: its certificate and private key (PEM).
pub struct CaMaterial {
    cert_pem: String,
    key_pem: Zeroizing<String>,
}

impl fmt::Debug for CaMaterial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CaMaterial").finish_non_exhaustive()
    }
}

/// An issued certificate and its private key (PEM).
pub struct IssuedCert {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key (PKCS#8 PEM); zeroized on drop.
    pub key_pem: Zeroizing<String>,
}

impl fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedCert").finish_non_exhaustive()
    }
}

/// What [`create_dev_pki`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PkiReport {
    /// Files created by this call (empty when everything already existed).
    pub created: Vec<PathBuf>,
}

impl CaMaterial {
    /// A new self-signed CA, valid from an hour ago for ten years. Also the
    /// way tests make an unrelated CA.
    pub fn generate(common_name: &str) -> Result<CaMaterial, IdentityError> {
        let now = OffsetDateTime::now_utc();
        let mut params = CertificateParams::default();
        params.distinguished_name = name(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = now - BACKDATE;
        params.not_after = now + DEV_VALIDITY;
        params.serial_number = Some(random_serial()?);
        let key = KeyPair::generate().map_err(pki_err)?;
        let cert = params.self_signed(&key).map_err(pki_err)?;
        Ok(CaMaterial {
            cert_pem: cert.pem(),
            key_pem: Zeroizing::new(key.serialize_pem()),
        })
    }

    /// Reads the CA of a home (`pki/ca.pem`, `pki/ca.key`).
    pub fn load(home: &Home) -> Result<CaMaterial, IdentityError> {
        Ok(CaMaterial {
            cert_pem: read_text(&home.ca_cert_path())?,
            key_pem: Zeroizing::new(read_text(&home.ca_key_path())?),
        })
    }

    /// The CA certificate (PEM), to configure as a trust root.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, IdentityError> {
        let key = KeyPair::from_pem(&self.key_pem).map_err(pki_err)?;
        Issuer::from_ca_cert_pem(&self.cert_pem, key).map_err(pki_err)
    }
}

/// Issues a client certificate naming `countersign://<role>/<principal>`.
/// The principal is not validated, so tests can issue malformed identities.
pub fn issue_client_cert(
    ca: &CaMaterial,
    role: Role,
    principal: &str,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<IssuedCert, IdentityError> {
    let uri = format!("countersign://{role}/{principal}");
    issue_client_cert_with_uris(ca, &[uri], not_before, not_after)
}

/// Issues a client certificate with exactly the given URI SANs (tests use
/// none or several to exercise [`crate::peer_identity`]).
pub fn issue_client_cert_with_uris(
    ca: &CaMaterial,
    uris: &[String],
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<IssuedCert, IdentityError> {
    let sans = uris
        .iter()
        .map(|u| Ok(SanType::URI(u.as_str().try_into().map_err(pki_err)?)))
        .collect::<Result<Vec<_>, IdentityError>>()?;
    let common_name = uris.first().map_or("countersign client", String::as_str);
    issue_leaf(
        ca,
        common_name,
        sans,
        ExtendedKeyUsagePurpose::ClientAuth,
        not_before,
        not_after,
    )
}

/// Issues the signer's server certificate: DNS `localhost`, IP 127.0.0.1,
/// URI `countersign://signer`.
pub fn issue_server_cert(
    ca: &CaMaterial,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<IssuedCert, IdentityError> {
    let sans = vec![
        SanType::DnsName("localhost".try_into().map_err(pki_err)?),
        SanType::IpAddress(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
        SanType::URI(SIGNER_URI.try_into().map_err(pki_err)?),
    ];
    issue_leaf(
        ca,
        "countersign signer",
        sans,
        ExtendedKeyUsagePurpose::ServerAuth,
        not_before,
        not_after,
    )
}

/// Creates the development PKI under `home/pki/`: CA, signer server
/// certificate, approver and head client certificates for `principal`.
/// Existing certificate/key pairs are kept; a half pair is refused.
pub fn create_dev_pki(home: &Home, principal: &str) -> Result<PkiReport, IdentityError> {
    if !is_valid_principal(principal) {
        return Err(IdentityError::BadPrincipal(home.principal_path()));
    }
    create_private_dir(&home.pki_dir())?;
    let mut created = Vec::new();
    let now = OffsetDateTime::now_utc();
    let (from, until) = (now - BACKDATE, now + DEV_VALIDITY);

    let (ca_cert, ca_key) = (home.ca_cert_path(), home.ca_key_path());
    let ca = if pair_exists(&ca_cert, &ca_key)? {
        CaMaterial::load(home)?
    } else {
        let ca = CaMaterial::generate("countersign development CA")?;
        write_pair(&ca_cert, &ca.cert_pem, &ca_key, &ca.key_pem, &mut created)?;
        ca
    };

    let (cert, key) = (home.signer_cert_path(), home.signer_tls_key_path());
    if !pair_exists(&cert, &key)? {
        let issued = issue_server_cert(&ca, from, until)?;
        write_pair(&cert, &issued.cert_pem, &key, &issued.key_pem, &mut created)?;
    }
    for role in [Role::Approver, Role::Head] {
        let (cert, key) = (home.client_cert_path(role), home.client_key_path(role));
        if !pair_exists(&cert, &key)? {
            let issued = issue_client_cert(&ca, role, principal, from, until)?;
            write_pair(&cert, &issued.cert_pem, &key, &issued.key_pem, &mut created)?;
        }
    }
    Ok(PkiReport { created })
}

fn issue_leaf(
    ca: &CaMaterial,
    common_name: &str,
    sans: Vec<SanType>,
    usage: ExtendedKeyUsagePurpose,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<IssuedCert, IdentityError> {
    let mut params = CertificateParams::default();
    params.distinguished_name = name(common_name);
    params.subject_alt_names = sans;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    params.not_before = not_before;
    params.not_after = not_after;
    params.serial_number = Some(random_serial()?);
    let key = KeyPair::generate().map_err(pki_err)?;
    let cert = params.signed_by(&key, &ca.issuer()?).map_err(pki_err)?;
    Ok(IssuedCert {
        cert_pem: cert.pem(),
        key_pem: Zeroizing::new(key.serialize_pem()),
    })
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "countersign");
    dn.push(DnType::CommonName, common_name);
    dn
}

fn random_serial() -> Result<SerialNumber, IdentityError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| IdentityError::Pki(format!("random: {e}")))?;
    bytes[0] &= 0x7f; // positive INTEGER
    bytes[0] |= 0x01; // and never shortened by a leading zero
    Ok(SerialNumber::from_slice(&bytes))
}

/// `Ok(true)` if both exist, `Ok(false)` if neither, an error for half a pair.
fn pair_exists(cert: &Path, key: &Path) -> Result<bool, IdentityError> {
    let exists = |p: &Path| match std::fs::symlink_metadata(p) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(IdentityError::io(p, &e)),
    };
    match (exists(cert)?, exists(key)?) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (true, false) => Err(IdentityError::HalfPair(cert.to_path_buf())),
        (false, true) => Err(IdentityError::HalfPair(key.to_path_buf())),
    }
}

/// Writes the key first, then the certificate, both new and 0600.
fn write_pair(
    cert: &Path,
    cert_pem: &str,
    key: &Path,
    key_pem: &str,
    created: &mut Vec<PathBuf>,
) -> Result<(), IdentityError> {
    write_private_new(key, key_pem.as_bytes())?;
    created.push(key.to_path_buf());
    write_private_new(cert, cert_pem.as_bytes())?;
    created.push(cert.to_path_buf());
    Ok(())
}

/// Reads a private PEM file as text.
pub(crate) fn read_text(path: &Path) -> Result<String, IdentityError> {
    let bytes = read_private(path)?;
    std::str::from_utf8(&bytes)
        .map(str::to_owned)
        .map_err(|_| IdentityError::Pki(format!("{} is not UTF-8 PEM", path.display())))
}

fn pki_err(e: rcgen::Error) -> IdentityError {
    IdentityError::Pki(e.to_string())
}
