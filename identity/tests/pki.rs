//! Development PKI creation and peer identities read from its certificates.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use countersign_identity::pki::{
    CaMaterial, create_dev_pki, issue_client_cert, issue_client_cert_with_uris,
};
use countersign_identity::{Home, IdentityError, PeerIdentity, Role, peer_identity};
use time::{Duration, OffsetDateTime};

fn der(pem: &str) -> Vec<u8> {
    let (_rest, pem) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).unwrap();
    pem.contents
}

fn init() -> (tempfile::TempDir, Home, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("cs")).unwrap();
    let principal = home.init().unwrap().principal;
    (dir, home, principal)
}

#[test]
fn creates_dev_pki_with_private_files_and_is_idempotent() {
    let (_dir, home, principal) = init();
    let first = create_dev_pki(&home, &principal).unwrap();
    assert_eq!(first.created.len(), 8);
    for path in &first.created {
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
    let before = std::fs::read(home.ca_key_path()).unwrap();
    let again = create_dev_pki(&home, &principal).unwrap();
    assert!(again.created.is_empty());
    assert_eq!(std::fs::read(home.ca_key_path()).unwrap(), before);
    home.check().unwrap();
}

#[test]
fn recreates_a_missing_pair_from_the_existing_ca() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    std::fs::remove_file(home.client_cert_path(Role::Head)).unwrap();
    std::fs::remove_file(home.client_key_path(Role::Head)).unwrap();
    let report = create_dev_pki(&home, &principal).unwrap();
    assert_eq!(report.created.len(), 2);
}

#[test]
fn refuses_half_a_pair() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    std::fs::remove_file(home.client_key_path(Role::Approver)).unwrap();
    assert_eq!(
        create_dev_pki(&home, &principal),
        Err(IdentityError::HalfPair(
            home.client_cert_path(Role::Approver)
        ))
    );
}

#[test]
fn dev_client_certs_name_role_and_principal() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    for role in [Role::Approver, Role::Head] {
        let pem = std::fs::read_to_string(home.client_cert_path(role)).unwrap();
        assert_eq!(
            peer_identity(&der(&pem)).unwrap(),
            PeerIdentity {
                role,
                principal: principal.clone()
            }
        );
    }
}

#[test]
fn signer_cert_is_not_a_peer_identity() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    let pem = std::fs::read_to_string(home.signer_cert_path()).unwrap();
    assert_eq!(
        peer_identity(&der(&pem)),
        Err(IdentityError::MalformedPeerUri(
            "countersign://signer".into()
        ))
    );
}

#[test]
fn refuses_certificate_with_no_or_several_uri_sans() {
    let ca = CaMaterial::generate("test CA").unwrap();
    let now = OffsetDateTime::now_utc();
    let (from, until) = (now - Duration::hours(1), now + Duration::hours(1));
    let none = issue_client_cert_with_uris(&ca, &[], from, until).unwrap();
    assert_eq!(
        peer_identity(&der(&none.cert_pem)),
        Err(IdentityError::NoPeerUri)
    );
    let p = "pr_0123456789abcdef0123456789abcdef";
    let two = issue_client_cert_with_uris(
        &ca,
        &[
            format!("countersign://head/{p}"),
            format!("countersign://approver/{p}"),
        ],
        from,
        until,
    )
    .unwrap();
    assert_eq!(
        peer_identity(&der(&two.cert_pem)),
        Err(IdentityError::MultiplePeerUris(2))
    );
    let bad = issue_client_cert(&ca, Role::Head, "pr_short", from, until).unwrap();
    assert_eq!(
        peer_identity(&der(&bad.cert_pem)),
        Err(IdentityError::BadPeerPrincipal("pr_short".into()))
    );
    assert_eq!(
        peer_identity(b"not a certificate"),
        Err(IdentityError::PeerCertificate)
    );
}

#[test]
fn refuses_invalid_principal_for_dev_pki() {
    let (_dir, home, _principal) = init();
    assert_eq!(
        create_dev_pki(&home, "pr_bad"),
        Err(IdentityError::BadPrincipal(home.principal_path()))
    );
}
