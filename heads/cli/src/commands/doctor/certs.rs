//! The certificate checks of `countersign doctor`: every certificate in the
//! home's `pki/` that a handshake will present or trust, each judged as the
//! handshake judges it (identity's [`certificate`] module) plus the role,
//! principal and name its URI SAN must carry, and its expiry.

use std::path::Path;

use countersign_identity::certificate::{
    CertificateFacts, Validity, verify_client_chain, verify_server_chain,
};
use countersign_identity::files::read_private;
use countersign_identity::{ClientCredential, Home, IdentityError, Role, peer_identity};
use time::{Duration, OffsetDateTime};

use super::report::Check;

/// Warn when a certificate expires within this window.
pub(crate) const EXPIRY_WARNING: Duration = Duration::days(30);

/// What a certificate file is for, which decides how it is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expected {
    /// `pki/signer.pem`: the signer's server certificate.
    Server,
    /// A client certificate presenting this credential for `principal`.
    Client(ClientCredential),
}

/// The fix for a certificate that must be issued again.
fn reissue(home: &Home, stem: &str) -> String {
    let pki = home.pki_dir();
    format!(
        "issue it again from the installation CA (development PKI: remove {0}/{stem}.pem and {0}/{stem}.key, then run `countersign init`)",
        pki.display()
    )
}

/// Every certificate check of `home` for `principal`, the CA's first.
pub(crate) fn check_all(home: &Home, principal: &str, now: OffsetDateTime) -> Vec<Check> {
    let mut checks = Vec::new();
    let ca = match read_pem(&home.ca_cert_path()) {
        Ok(Some(text)) => match CertificateFacts::from_pem(&text) {
            Ok(ca) => {
                checks.push(judge_validity("certificate ca", &ca, now, "", || {
                    "replace the installation CA and every certificate it issued".to_string()
                }));
                Some(ca)
            }
            Err(e) => {
                checks.push(Check::fail(
                    "certificate ca",
                    format!("{}: {e}", home.ca_cert_path().display()),
                    "restore pki/ca.pem from the installation CA",
                ));
                None
            }
        },
        Ok(None) => {
            checks.push(Check::fail(
                "certificate ca",
                format!("{} does not exist", home.ca_cert_path().display()),
                "run `countersign init` (development PKI) or install the CA certificate",
            ));
            None
        }
        Err(e) => {
            checks.push(Check::fail(
                "certificate ca",
                e.to_string(),
                "make pki/ca.pem a private (0600) file of yours",
            ));
            None
        }
    };
    checks.push(check_file(
        home,
        &home.signer_cert_path(),
        "signer",
        &Expected::Server,
        ca.as_ref(),
        principal,
        now,
    ));
    let mut credentials = vec![
        ClientCredential::Role(Role::Head),
        ClientCredential::Role(Role::Approver),
    ];
    credentials.extend(named_approvers(home));
    for credential in credentials {
        checks.push(check_file(
            home,
            &home.credential_cert_path(&credential),
            &credential.file_stem(),
            &Expected::Client(credential.clone()),
            ca.as_ref(),
            principal,
            now,
        ));
    }
    checks
}

/// The named approver credentials present in `pki/` (`approver-<name>.pem`),
/// sorted; files whose name is not a valid approver name are skipped (no
/// handshake can present them).
fn named_approvers(home: &Home) -> Vec<ClientCredential> {
    let Ok(entries) = std::fs::read_dir(home.pki_dir()) else {
        return Vec::new();
    };
    let mut names: Vec<ClientCredential> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let name = file.strip_prefix("approver-")?.strip_suffix(".pem")?;
            countersign_identity::ApproverName::parse(name).ok()
        })
        .map(ClientCredential::NamedApprover)
        .collect();
    names.sort_by_key(ClientCredential::file_stem);
    names
}

/// A private PEM file's bytes; `None` if it does not exist.
fn read_pem(path: &Path) -> Result<Option<Vec<u8>>, IdentityError> {
    match read_private(path) {
        Ok(bytes) => Ok(Some(bytes.to_vec())),
        Err(IdentityError::Missing(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn check_file(
    home: &Home,
    path: &Path,
    stem: &str,
    expected: &Expected,
    ca: Option<&CertificateFacts>,
    principal: &str,
    now: OffsetDateTime,
) -> Check {
    let name = format!("certificate {stem}");
    let text = match read_pem(path) {
        Ok(Some(text)) => text,
        Ok(None) => {
            return match expected {
                Expected::Client(ClientCredential::Role(Role::Head)) => Check::fail(
                    name,
                    format!("{} does not exist", path.display()),
                    "run `countersign init`, or install this head's certificate and key",
                ),
                Expected::Server => Check::warn(
                    name,
                    format!(
                        "{} is not in this home (the signer runs from another)",
                        path.display()
                    ),
                    None,
                ),
                _ => Check::warn(
                    name,
                    format!(
                        "{} is not in this home (a head-only home cannot approve)",
                        path.display()
                    ),
                    None,
                ),
            };
        }
        Err(e) => {
            return Check::fail(
                name,
                e.to_string(),
                "make it a private (0600) file of yours",
            );
        }
    };
    let Some(ca) = ca else {
        return Check::fail(
            name,
            "not checked: the installation CA could not be read",
            "fix `certificate ca` first",
        );
    };
    judge(home, &name, stem, &text, expected, ca, principal, now)
}

/// Judges one certificate's PEM text: parses, chains to `ca`, names the
/// expected role, principal and approver name, and is valid at `now`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge(
    home: &Home,
    name: &str,
    stem: &str,
    pem: &[u8],
    expected: &Expected,
    ca: &CertificateFacts,
    principal: &str,
    now: OffsetDateTime,
) -> Check {
    let fix = || reissue(home, stem);
    let cert = match CertificateFacts::from_pem(pem) {
        Ok(cert) => cert,
        Err(e) => return Check::fail(name, format!("pki/{stem}.pem: {e}"), fix()),
    };
    let (chain, what) = match expected {
        Expected::Server => (
            verify_server_chain(&cert, ca, now),
            "the signer's server certificate for localhost".to_string(),
        ),
        Expected::Client(credential) => {
            let chain = verify_client_chain(&cert, ca, now);
            match peer_identity(&cert.der) {
                Err(e) => return Check::fail(name, format!("{e}"), fix()),
                Ok(id) => {
                    let wanted_name = match credential {
                        ClientCredential::NamedApprover(n) => Some(n),
                        ClientCredential::Role(_) => None,
                    };
                    if id.role != credential.role()
                        || id.principal != principal
                        || id.approver.as_ref() != wanted_name
                    {
                        let mut want = format!("countersign://{}/{principal}", credential.role());
                        if let Some(n) = wanted_name {
                            want.push_str(&format!("/{n}"));
                        }
                        return Check::fail(
                            name,
                            format!("names {}, expected {want}", id.uri()),
                            fix(),
                        );
                    }
                    (chain, id.uri())
                }
            }
        }
    };
    if let Err(e) = chain {
        return Check::fail(name, e.to_string(), fix());
    }
    judge_validity(name, &cert, now, &what, fix)
}

fn judge_validity(
    name: &str,
    cert: &CertificateFacts,
    now: OffsetDateTime,
    what: &str,
    fix: impl Fn() -> String,
) -> Check {
    let date = |t: OffsetDateTime| t.date().to_string();
    let what = if what.is_empty() {
        String::new()
    } else {
        format!("{what}, ")
    };
    match cert.validity_at(now, EXPIRY_WARNING) {
        Validity::Valid { remaining } => Check::ok(
            name,
            format!(
                "{what}valid until {} ({} days)",
                date(cert.not_after),
                remaining.whole_days()
            ),
        ),
        Validity::ExpiresSoon { remaining } => Check::warn(
            name,
            format!(
                "{what}expires on {} (in {} days)",
                date(cert.not_after),
                remaining.whole_days()
            ),
            Some(fix()),
        ),
        Validity::Expired { since } => Check::fail(
            name,
            format!(
                "{what}expired on {} ({} days ago)",
                date(cert.not_after),
                since.whole_days()
            ),
            fix(),
        ),
        Validity::NotYetValid { until } => Check::fail(
            name,
            format!(
                "{what}not valid before {} (in {} s): is this host's clock right?",
                cert.not_before,
                until.whole_seconds()
            ),
            fix(),
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::commands::doctor::report::Status;
    use countersign_identity::pki::{CaMaterial, issue_client_cert};

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn judge_head(ca: &CaMaterial, role: Role, days: (i64, i64)) -> Check {
        let now = OffsetDateTime::now_utc();
        let cert = issue_client_cert(
            ca,
            role,
            P,
            now + Duration::days(days.0),
            now + Duration::days(days.1),
        )
        .unwrap();
        let ca_facts = CertificateFacts::from_pem(ca.cert_pem().as_bytes()).unwrap();
        judge(
            &Home::at("/nonexistent").unwrap(),
            "certificate head",
            "head",
            cert.cert_pem.as_bytes(),
            &Expected::Client(ClientCredential::Role(Role::Head)),
            &ca_facts,
            P,
            now,
        )
    }

    #[test]
    fn a_head_certificate_is_judged_by_role_chain_and_expiry() {
        let ca = CaMaterial::generate("ca").unwrap();
        assert_eq!(judge_head(&ca, Role::Head, (-1, 365)).status, Status::Ok);
        assert_eq!(judge_head(&ca, Role::Head, (-1, 10)).status, Status::Warn);
        let expired = judge_head(&ca, Role::Head, (-10, -1));
        assert_eq!(expired.status, Status::Fail);
        assert!(expired.detail.contains("expired on"), "{}", expired.detail);
        assert_eq!(
            judge_head(&ca, Role::Head, (1, 365)).status,
            Status::Fail,
            "not yet valid"
        );
        let wrong = judge_head(&ca, Role::Approver, (-1, 365));
        assert_eq!(wrong.status, Status::Fail);
        assert_eq!(
            wrong.detail,
            format!("names countersign://approver/{P}, expected countersign://head/{P}")
        );
    }

    #[test]
    fn a_certificate_from_another_ca_fails_the_chain() {
        let ca = CaMaterial::generate("ca").unwrap();
        let other = CaMaterial::generate("other").unwrap();
        let now = OffsetDateTime::now_utc();
        let cert = issue_client_cert(&other, Role::Head, P, now, now + Duration::days(90)).unwrap();
        let check = judge(
            &Home::at("/nonexistent").unwrap(),
            "certificate head",
            "head",
            cert.cert_pem.as_bytes(),
            &Expected::Client(ClientCredential::Role(Role::Head)),
            &CertificateFacts::from_pem(ca.cert_pem().as_bytes()).unwrap(),
            P,
            now,
        );
        assert_eq!(check.status, Status::Fail);
        assert!(
            check
                .detail
                .starts_with("does not chain to the installation CA"),
            "{}",
            check.detail
        );
    }
}
