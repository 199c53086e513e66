//! The console's TLS identity: a console CA that can vouch for the
//! console's names and nothing else, and the console's server certificate.
//!
//! A person's browser is asked to trust the console CA once
//! (`countersign console trust`). A trusted root can vouch for any name, so
//! this CA is not the installation CA (which issues the signer's and the
//! clients' certificates) and carries X.509 name constraints: permitted,
//! the console's DNS names (and their subdomains); excluded, every IPv4 and
//! IPv6 address. Were its key stolen, it could still not impersonate
//! another site to a browser that honours name constraints (Chromium,
//! Firefox, rustls-webpki and OpenSSL all do).
//!
//! Files, in the home's `pki/` (every one 0600, created new): `console-ca.pem`,
//! `console-ca.key`, `console.pem`, `console.key`. The server certificate is
//! issued again whenever its names are not exactly the configured ones or it
//! is within [`RENEW_BEFORE`] of expiry; the CA is never replaced here (a
//! person trusted it): names it does not permit are refused with the way
//! out. An operator who brings their own certificate (`[console] cert` and
//! `key`) uses none of this.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CidrSubnet, ExtendedKeyUsagePurpose, GeneralSubtree, IsCa,
    KeyPair, KeyUsagePurpose, NameConstraints, SanType,
};
use sha2::{Digest, Sha256};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;
use x509_parser::prelude::FromDer;

use crate::files::{read_private, write_private_new};
use crate::home::create_private_dir;
use crate::pki::{CaMaterial, IssuedCert, name, pki_err, random_serial, read_text};
use crate::{Home, IdentityError};

/// The name a browser reaches the console by unless more are configured:
/// browsers resolve every `*.localhost` name to loopback themselves.
pub const CONSOLE_NAME: &str = "console.localhost";
/// How long the console CA stays valid.
const CA_VALIDITY: Duration = Duration::days(3650);
/// How long a console server certificate stays valid (browsers cap
/// certificates of public CAs lower; a private root is not held to it, but
/// a short life costs nothing since the console renews its own).
const LEAF_VALIDITY: Duration = Duration::days(397);
/// A server certificate this close to expiry is issued again at start.
pub const RENEW_BEFORE: Duration = Duration::days(30);
const BACKDATE: Duration = Duration::hours(1);

/// The console's certificate chain and key, ready for a TLS server.
pub struct ConsoleCert {
    /// The server certificate (PEM), followed by nothing: the CA is the
    /// root the browser trusts, so it is not sent.
    pub cert_pem: String,
    /// The server certificate's private key (PEM); zeroized on drop.
    pub key_pem: zeroize::Zeroizing<String>,
}

impl std::fmt::Debug for ConsoleCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleCert").finish_non_exhaustive()
    }
}

/// What [`ensure_console_cert`] found or did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsolePkiReport {
    /// Files created or replaced by this call.
    pub written: Vec<PathBuf>,
}

/// The console CA's certificate (PEM) of a home, as a person's browser
/// must trust it.
pub fn console_ca_pem(home: &Home) -> Result<String, IdentityError> {
    read_text(&home.console_ca_cert_path())
}

/// The SHA-256 fingerprint of a PEM certificate's DER, as browsers and
/// `openssl x509 -fingerprint -sha256` show it (`AB:CD:...`).
pub fn fingerprint_sha256(cert_pem: &str) -> Result<String, IdentityError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject as _;
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes())
        .map_err(|e| IdentityError::Pki(format!("not a PEM certificate: {e}")))?;
    Ok(Sha256::digest(der.as_ref())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":"))
}

/// Makes sure the home holds a console CA that permits `names` and a
/// server certificate for exactly `names`, valid for at least
/// [`RENEW_BEFORE`]; creates or re-issues what is missing or stale, and
/// returns the certificate to serve. `names` are lowercase DNS names, the
/// first of them the origin's host.
pub fn ensure_console_cert(
    home: &Home,
    names: &[String],
) -> Result<(ConsoleCert, ConsolePkiReport), IdentityError> {
    if names.is_empty() {
        return Err(IdentityError::Pki(
            "the console needs at least one name".into(),
        ));
    }
    create_private_dir(&home.pki_dir())?;
    let mut written = Vec::new();
    let (ca_cert, ca_key) = (home.console_ca_cert_path(), home.console_ca_key_path());
    let ca = match (exists(&ca_cert)?, exists(&ca_key)?) {
        (true, true) => {
            let ca = CaMaterial::from_pem(read_text(&ca_cert)?, read_text(&ca_key)?);
            check_permits(&ca, names, &ca_cert)?;
            ca
        }
        (false, false) => {
            let ca = generate_console_ca(names)?;
            write_private_new(&ca_key, ca.key_pem().as_bytes())?;
            write_private_new(&ca_cert, ca.cert_pem().as_bytes())?;
            written.extend([ca_key.clone(), ca_cert.clone()]);
            ca
        }
        (true, false) => return Err(IdentityError::HalfPair(ca_cert)),
        (false, true) => return Err(IdentityError::HalfPair(ca_key)),
    };
    let (cert, key) = (home.console_cert_path(), home.console_key_path());
    if exists(&cert)? && exists(&key)? {
        let pem = read_text(&cert)?;
        if current(&pem, names)? {
            let key_pem = zeroize::Zeroizing::new(read_text(&key)?);
            return Ok((
                ConsoleCert {
                    cert_pem: pem,
                    key_pem,
                },
                ConsolePkiReport { written },
            ));
        }
    }
    let issued = issue_console_cert(&ca, names)?;
    replace(&key, issued.key_pem.as_bytes())?;
    replace(&cert, issued.cert_pem.as_bytes())?;
    written.extend([key, cert]);
    Ok((
        ConsoleCert {
            cert_pem: issued.cert_pem,
            key_pem: issued.key_pem,
        },
        ConsolePkiReport { written },
    ))
}

/// A new console CA permitted `names` (DNS) and no IP address.
pub fn generate_console_ca(names: &[String]) -> Result<CaMaterial, IdentityError> {
    let now = OffsetDateTime::now_utc();
    let mut params = CertificateParams::default();
    params.distinguished_name = name("countersign console CA (name-constrained)");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.name_constraints = Some(NameConstraints {
        permitted_subtrees: names
            .iter()
            .map(|n| GeneralSubtree::DnsName(n.clone()))
            .collect(),
        excluded_subtrees: vec![
            GeneralSubtree::IpAddress(CidrSubnet::V4([0; 4], [0; 4])),
            GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16])),
        ],
    });
    params.not_before = now - BACKDATE;
    params.not_after = now + CA_VALIDITY;
    params.serial_number = Some(random_serial()?);
    let key = KeyPair::generate().map_err(pki_err)?;
    let cert = params.self_signed(&key).map_err(pki_err)?;
    Ok(CaMaterial::from_pem(cert.pem(), key.serialize_pem()))
}

/// A console server certificate for exactly `names`, from `ca`.
pub fn issue_console_cert(ca: &CaMaterial, names: &[String]) -> Result<IssuedCert, IdentityError> {
    let now = OffsetDateTime::now_utc();
    let sans = names
        .iter()
        .map(|n| Ok(SanType::DnsName(n.as_str().try_into().map_err(pki_err)?)))
        .collect::<Result<Vec<_>, IdentityError>>()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = name(&names[0]);
    params.subject_alt_names = sans;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = now - BACKDATE;
    params.not_after = now + LEAF_VALIDITY;
    params.serial_number = Some(random_serial()?);
    let key = KeyPair::generate().map_err(pki_err)?;
    let cert = params.signed_by(&key, &ca.issuer()?).map_err(pki_err)?;
    Ok(IssuedCert {
        cert_pem: cert.pem(),
        key_pem: zeroize::Zeroizing::new(key.serialize_pem()),
    })
}

/// Why the home's console CA cannot vouch for `names`, if it cannot (or
/// `None`: it can, or there is none yet, and the console makes one for
/// them when it starts).
pub fn ca_problem(home: &Home, names: &[String]) -> Result<Option<String>, IdentityError> {
    let path = home.console_ca_cert_path();
    if !exists(&path)? {
        return Ok(None);
    }
    let (permitted, missing) = unpermitted(&read_text(&path)?, names)?;
    Ok((!missing.is_empty()).then(|| {
        format!(
            "the console CA {} may vouch only for {} and not for {}",
            path.display(),
            permitted.join(", "),
            missing.join(", ")
        )
    }))
}

/// Makes a new console CA for `names`, and the console's certificate
/// from it, in place of the home's: the old CA's key is deleted (it can
/// vouch for nothing more), its certificate kept beside it as
/// `console-ca.retired-<unix time>.pem` so a person can tell which root
/// to remove from their browsers. Returns the new certificate, what was
/// written, and where the old CA's certificate went (`None` if there was
/// none). Every browser and phone that trusted the old CA must trust the
/// new one, and a running console must be restarted.
pub fn replace_console_ca(
    home: &Home,
    names: &[String],
) -> Result<(ConsoleCert, ConsolePkiReport, Option<PathBuf>), IdentityError> {
    if names.is_empty() {
        return Err(IdentityError::Pki(
            "the console needs at least one name".into(),
        ));
    }
    let ca_cert = home.console_ca_cert_path();
    let retired = if exists(&ca_cert)? {
        let to = home.pki_dir().join(format!(
            "console-ca.retired-{}.pem",
            OffsetDateTime::now_utc().unix_timestamp()
        ));
        if exists(&to)? {
            return Err(IdentityError::Pki(format!(
                "{} exists: wait a second and run it again",
                to.display()
            )));
        }
        std::fs::rename(&ca_cert, &to).map_err(|e| {
            IdentityError::Pki(format!("cannot move {} aside: {e}", ca_cert.display()))
        })?;
        Some(to)
    } else {
        None
    };
    for path in [
        home.console_ca_key_path(),
        home.console_key_path(),
        home.console_cert_path(),
    ] {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(IdentityError::Pki(format!(
                    "cannot delete {}: {e}",
                    path.display()
                )));
            }
        }
    }
    let (cert, report) = ensure_console_cert(home, names)?;
    Ok((cert, report, retired))
}

/// The DNS names the console CA `ca_pem` permits, and those of `names`
/// it does not.
fn unpermitted(
    ca_pem: &str,
    names: &[String],
) -> Result<(Vec<String>, Vec<String>), IdentityError> {
    let permitted = with_x509(ca_pem, |cert| {
        let Ok(Some(ext)) = cert.name_constraints() else {
            return Vec::new();
        };
        ext.value
            .permitted_subtrees
            .iter()
            .flatten()
            .filter_map(|s| match s.base {
                GeneralName::DNSName(n) => Some(n.to_ascii_lowercase()),
                _ => None,
            })
            .collect::<Vec<_>>()
    })?;
    let missing = names
        .iter()
        .filter(|n| {
            !permitted
                .iter()
                .any(|p| *n == p || n.ends_with(&format!(".{p}")))
        })
        .cloned()
        .collect();
    Ok((permitted, missing))
}

/// Refuses names the console CA's constraints do not permit: the CA is
/// not replaced behind the person who trusted it.
fn check_permits(ca: &CaMaterial, names: &[String], path: &Path) -> Result<(), IdentityError> {
    let (permitted, missing) = unpermitted(ca.cert_pem(), names)?;
    if let Some(n) = missing.first() {
        return Err(IdentityError::Pki(format!(
            "the console CA {} may vouch only for {} and not for {n:?}; to add a name, make a new console CA with `countersign console trust --new-ca`, restart the console, and trust the new CA in every browser that trusted the old one (and remove the old one)",
            path.display(),
            permitted.join(", ")
        )));
    }
    Ok(())
}

/// Whether the server certificate `pem` names exactly `names` and is valid
/// for longer than [`RENEW_BEFORE`].
fn current(pem: &str, names: &[String]) -> Result<bool, IdentityError> {
    let found = with_x509(pem, |cert| {
        let mut have = dns_names(cert);
        have.sort();
        (have, cert.validity().not_after.timestamp())
    });
    let Ok((have, not_after)) = found else {
        return Ok(false);
    };
    let mut want = names.to_vec();
    want.sort();
    let renew_at = (OffsetDateTime::now_utc() + RENEW_BEFORE).unix_timestamp();
    Ok(have == want && not_after > renew_at)
}

/// What keeps the certificate `pem` from serving the console's `names` at
/// `now`, as a browser would find it: a name none of its DNS names covers
/// (an exact name, or `*.` and one label), or a validity that has not
/// begun or has ended. `None` when it serves every name; `Err` when it is
/// no certificate.
pub fn serving_problem(
    pem: &str,
    names: &[String],
    now: OffsetDateTime,
) -> Result<Option<String>, IdentityError> {
    let (dns, not_before, not_after) = with_x509(pem, |cert| {
        let validity = cert.validity();
        (
            dns_names(cert),
            validity.not_before.timestamp(),
            validity.not_after.timestamp(),
        )
    })?;
    let missing: Vec<&str> = names
        .iter()
        .filter(|n| !dns.iter().any(|d| covers(d, n)))
        .map(String::as_str)
        .collect();
    let problem = if !missing.is_empty() {
        let named = match dns.as_slice() {
            [] => "no DNS name".to_owned(),
            dns => dns.join(", "),
        };
        Some(format!(
            "it does not name {} (it names {named})",
            missing.join(", ")
        ))
    } else if now.unix_timestamp() < not_before {
        Some("it is not valid yet".to_owned())
    } else if now.unix_timestamp() >= not_after {
        Some("it has expired".to_owned())
    } else {
        None
    };
    Ok(problem)
}

/// The DNS names of `cert`'s subject alternative names, lowercase.
fn dns_names(cert: &X509Certificate<'_>) -> Vec<String> {
    match cert.subject_alternative_name() {
        Ok(Some(ext)) => ext
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                GeneralName::DNSName(n) => Some(n.to_ascii_lowercase()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether the certificate's DNS name `dns` covers the host `name`: the
/// same name, or a wildcard `*.rest` for one more label in front of `rest`.
fn covers(dns: &str, name: &str) -> bool {
    match dns.strip_prefix("*.") {
        Some(rest) => name
            .split_once('.')
            .is_some_and(|(label, tail)| !label.is_empty() && tail == rest),
        None => dns == name,
    }
}

/// Runs `read` over the first certificate of `pem`.
pub(crate) fn with_x509<T>(
    pem: &str,
    read: impl FnOnce(&X509Certificate<'_>) -> T,
) -> Result<T, IdentityError> {
    let block = Pem::iter_from_buffer(pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .ok_or_else(|| IdentityError::Pki("no PEM certificate".into()))?;
    let (_, cert) = X509Certificate::from_der(&block.contents)
        .map_err(|_| IdentityError::Pki("not a valid X.509 certificate".into()))?;
    Ok(read(&cert))
}

fn exists(path: &Path) -> Result<bool, IdentityError> {
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(IdentityError::io(path, &e)),
    }
}

/// Replace a private file with new contents: written beside it, renamed
/// over it. An existing file must pass the private-file checks first.
fn replace(path: &Path, bytes: &[u8]) -> Result<(), IdentityError> {
    if exists(path)? {
        read_private(path)?;
    }
    let tmp = path.with_extension("new");
    let _ = std::fs::remove_file(&tmp);
    write_private_new(&tmp, bytes)?;
    std::fs::rename(&tmp, path).map_err(|e| IdentityError::io(path, &e))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_wildcard_covers_one_label_and_a_name_only_itself() {
        assert!(covers("console.localhost", "console.localhost"));
        assert!(covers("*.example.net", "phone.example.net"));
        assert!(!covers("*.example.net", "example.net"));
        assert!(!covers("*.example.net", "a.b.example.net"));
        assert!(!covers("console.localhost", "other.localhost"));
    }

    #[test]
    fn names_a_missing_name_and_an_ended_validity() {
        let ca = generate_console_ca(&["a.localhost".into(), "b.localhost".into()]).unwrap();
        let issued = issue_console_cert(&ca, &["a.localhost".into()]).unwrap();
        let now = OffsetDateTime::now_utc();
        let names = |n: &[&str]| n.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            serving_problem(&issued.cert_pem, &names(&["a.localhost"]), now).unwrap(),
            None
        );
        assert_eq!(
            serving_problem(
                &issued.cert_pem,
                &names(&["a.localhost", "b.localhost"]),
                now
            )
            .unwrap(),
            Some("it does not name b.localhost (it names a.localhost)".to_owned())
        );
        assert_eq!(
            serving_problem(
                &issued.cert_pem,
                &names(&["a.localhost"]),
                now + Duration::days(3650)
            )
            .unwrap(),
            Some("it has expired".to_owned())
        );
        assert!(serving_problem("not a certificate", &names(&["a.localhost"]), now).is_err());
    }

    #[test]
    fn a_new_console_ca_vouches_for_the_new_names_and_the_old_key_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home")).unwrap();
        home.init().unwrap();
        let first = vec![CONSOLE_NAME.to_owned()];
        let wider = vec!["laptop.home.arpa".to_owned(), CONSOLE_NAME.to_owned()];
        // No CA yet: no problem, the console makes one.
        assert_eq!(ca_problem(&home, &wider).unwrap(), None);
        ensure_console_cert(&home, &first).unwrap();
        let old_pem = read_text(&home.console_ca_cert_path()).unwrap();
        let refused = ensure_console_cert(&home, &wider).unwrap_err().to_string();
        assert!(
            refused.contains("countersign console trust --new-ca"),
            "{refused}"
        );
        assert_eq!(
            ca_problem(&home, &wider).unwrap(),
            Some(format!(
                "the console CA {} may vouch only for console.localhost and not for laptop.home.arpa",
                home.console_ca_cert_path().display()
            ))
        );

        let (cert, _, retired) = replace_console_ca(&home, &wider).unwrap();
        let retired = retired.unwrap();
        assert_eq!(read_text(&retired).unwrap(), old_pem);
        assert_ne!(read_text(&home.console_ca_cert_path()).unwrap(), old_pem);
        assert_eq!(ca_problem(&home, &wider).unwrap(), None);
        let now = OffsetDateTime::now_utc();
        assert_eq!(serving_problem(&cert.cert_pem, &wider, now).unwrap(), None);
        // The new key is a new file; the old one is gone with the old CA.
        let new_ca = CaMaterial::from_pem(
            read_text(&home.console_ca_cert_path()).unwrap(),
            read_text(&home.console_ca_key_path()).unwrap(),
        );
        assert!(issue_console_cert(&new_ca, &wider).is_ok());
        let entries: Vec<String> = std::fs::read_dir(home.pki_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("console"))
            .collect();
        assert_eq!(
            entries.iter().filter(|n| n.ends_with(".key")).count(),
            2,
            "{entries:?}"
        );
        // The same names again: the console starts from it as it is.
        ensure_console_cert(&home, &wider).unwrap();
    }
}
