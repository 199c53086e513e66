//! The development PKI: a CA, the signer's server certificate, the
//! approver and head client certificates and the named approver
//! credentials (`console`), made in-process with rcgen.
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
use crate::home::{create_private_dir, dev_named_approvers};
use crate::peer::{ApproverName, ClientCredential, Role, SIGNER_URI};
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

    /// A CA from its certificate and key (PEM).
    pub(crate) fn from_pem(cert_pem: String, key_pem: String) -> CaMaterial {
        CaMaterial {
            cert_pem,
            key_pem: Zeroizing::new(key_pem),
        }
    }

    /// The CA's private key (PEM).
    pub(crate) fn key_pem(&self) -> &str {
        &self.key_pem
    }

    pub(crate) fn issuer(&self) -> Result<Issuer<'static, KeyPair>, IdentityError> {
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

/// Issues a named approver certificate:
/// `countersign://approver/<principal>/<name>`. Decisions made with it carry
/// the provenance `human:cert:<principal>/<name>`. Refuses a principal that
/// is not `pr_` + 32 lowercase hex.
pub fn issue_named_approver_cert(
    ca: &CaMaterial,
    principal: &str,
    name: &ApproverName,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<IssuedCert, IdentityError> {
    if !is_valid_principal(principal) {
        return Err(IdentityError::BadPeerPrincipal(principal.to_owned()));
    }
    let uri = format!("countersign://{}/{principal}/{name}", Role::Approver);
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
/// certificate, approver and head client certificates for `principal`, and
/// the named approver credentials of [`crate::DEV_NAMED_APPROVERS`]
/// (`pki/approver-console.pem`). Existing certificate/key pairs are kept,
/// missing ones created (so an older home gains a new credential); a half
/// pair is refused.
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
    let credentials = [Role::Approver, Role::Head, Role::Notifier]
        .map(ClientCredential::Role)
        .into_iter()
        .chain(dev_named_approvers()?.map(ClientCredential::NamedApprover));
    for credential in credentials {
        let cert = home.credential_cert_path(&credential);
        let key = home.credential_key_path(&credential);
        if !pair_exists(&cert, &key)? {
            let issued = match &credential {
                ClientCredential::Role(role) => {
                    issue_client_cert(&ca, *role, principal, from, until)?
                }
                ClientCredential::NamedApprover(name) => {
                    issue_named_approver_cert(&ca, principal, name, from, until)?
                }
            };
            write_pair(&cert, &issued.cert_pem, &key, &issued.key_pem, &mut created)?;
        }
    }
    Ok(PkiReport { created })
}

/// What [`export_named_approver`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialExport {
    /// The URI SAN the new certificate names.
    pub uri: String,
    /// `<dir>/approver-<name>.pem`, new.
    pub cert: PathBuf,
    /// `<dir>/approver-<name>.key`, new, mode 0600.
    pub key: PathBuf,
    /// `<dir>/ca.pem`: the CA that the signer's certificate chains to.
    pub ca: PathBuf,
    /// Whether `ca.pem` was written (false: it was already there, identical).
    pub ca_written: bool,
}

/// Issues a named approver credential for the home's principal from the
/// home's CA (`pki/ca.key`; development PKI) and writes it into `out_dir`:
/// `approver-<name>.pem`, `approver-<name>.key` (0600) and `ca.pem`.
/// `out_dir` must be an existing directory. The certificate and key are
/// created new, never overwritten: if either exists nothing is written. An
/// existing `ca.pem` is kept if it is this CA and refused otherwise.
pub fn export_named_approver(
    home: &Home,
    name: &ApproverName,
    out_dir: &Path,
) -> Result<CredentialExport, IdentityError> {
    match std::fs::metadata(out_dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(IdentityError::NotADirectory(out_dir.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(IdentityError::Missing(out_dir.to_path_buf()));
        }
        Err(e) => return Err(IdentityError::io(out_dir, &e)),
    }
    let principal = home.principal()?;
    let ca = CaMaterial::load(home)?;
    let stem = ClientCredential::NamedApprover(name.clone()).file_stem();
    let cert = out_dir.join(format!("{stem}.pem"));
    let key = out_dir.join(format!("{stem}.key"));
    let ca_path = out_dir.join("ca.pem");
    for path in [&cert, &key] {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(IdentityError::AlreadyExists(path.clone()));
        }
    }
    let ca_written = match std::fs::symlink_metadata(&ca_path) {
        // A CA certificate is public: compare it however it is protected.
        Ok(_) if std::fs::read(&ca_path).is_ok_and(|pem| pem == ca.cert_pem.as_bytes()) => false,
        Ok(_) => return Err(IdentityError::AlreadyExists(ca_path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(IdentityError::io(&ca_path, &e)),
    };
    let now = OffsetDateTime::now_utc();
    let issued =
        issue_named_approver_cert(&ca, &principal, name, now - BACKDATE, now + DEV_VALIDITY)?;
    write_pair(
        &cert,
        &issued.cert_pem,
        &key,
        &issued.key_pem,
        &mut Vec::new(),
    )?;
    if ca_written {
        write_private_new(&ca_path, ca.cert_pem.as_bytes())?;
    }
    Ok(CredentialExport {
        uri: format!("countersign://{}/{principal}/{name}", Role::Approver),
        cert,
        key,
        ca: ca_path,
        ca_written,
    })
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

pub(crate) fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "countersign");
    dn.push(DnType::CommonName, common_name);
    dn
}

pub(crate) fn random_serial() -> Result<SerialNumber, IdentityError> {
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

pub(crate) fn pki_err(e: rcgen::Error) -> IdentityError {
    IdentityError::Pki(e.to_string())
}
