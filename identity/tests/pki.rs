//! Development PKI creation and peer identities read from its certificates.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use countersign_identity::pki::{
    CaMaterial, create_dev_pki, export_named_approver, issue_client_cert,
    issue_client_cert_with_uris, issue_named_approver_cert,
};
use countersign_identity::{
    ApproverName, ClientCredential, Home, IdentityError, PeerIdentity, Role, peer_identity,
};
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
    // CA, signer, approver, head, notifier and the console approver: a pair each.
    assert_eq!(first.created.len(), 12);
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
                principal: principal.parse().unwrap(),
                approver: None,
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

fn console() -> ClientCredential {
    ClientCredential::NamedApprover(ApproverName::parse("console").unwrap())
}

#[test]
fn dev_pki_has_the_console_approver_credential() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    let cert = home.credential_cert_path(&console());
    let key = home.credential_key_path(&console());
    assert_eq!(cert, home.pki_dir().join("approver-console.pem"));
    assert_eq!(key, home.pki_dir().join("approver-console.key"));
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let pem = std::fs::read_to_string(cert).unwrap();
    let id = peer_identity(&der(&pem)).unwrap();
    assert_eq!(
        id,
        PeerIdentity {
            role: Role::Approver,
            principal: principal.parse().unwrap(),
            approver: Some(ApproverName::parse("console").unwrap()),
        }
    );
    assert_eq!(
        id.uri(),
        format!("countersign://approver/{principal}/console")
    );
}

#[test]
fn an_existing_home_gains_the_console_credential_and_keeps_the_others() {
    let (_dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    let approver_before = std::fs::read(home.client_cert_path(Role::Approver)).unwrap();
    std::fs::remove_file(home.credential_cert_path(&console())).unwrap();
    std::fs::remove_file(home.credential_key_path(&console())).unwrap();
    let report = create_dev_pki(&home, &principal).unwrap();
    assert_eq!(
        report.created,
        vec![
            home.credential_key_path(&console()),
            home.credential_cert_path(&console())
        ]
    );
    assert_eq!(
        std::fs::read(home.client_cert_path(Role::Approver)).unwrap(),
        approver_before
    );
}

#[test]
fn role_credentials_keep_their_paths() {
    let (_dir, home, _principal) = init();
    for role in Role::ALL {
        let credential = ClientCredential::Role(role);
        assert_eq!(
            home.credential_cert_path(&credential),
            home.client_cert_path(role)
        );
        assert_eq!(
            home.credential_key_path(&credential),
            home.client_key_path(role)
        );
        assert_eq!(
            home.client_cert_path(role),
            home.pki_dir().join(format!("{role}.pem"))
        );
    }
}

#[test]
fn refuses_a_certificate_naming_a_head() {
    let ca = CaMaterial::generate("test CA").unwrap();
    let now = OffsetDateTime::now_utc();
    let (from, until) = (now - Duration::hours(1), now + Duration::hours(1));
    let p = "pr_0123456789abcdef0123456789abcdef";
    let named_head = issue_client_cert_with_uris(
        &ca,
        &[format!("countersign://head/{p}/console")],
        from,
        until,
    )
    .unwrap();
    assert_eq!(
        peer_identity(&der(&named_head.cert_pem)),
        Err(IdentityError::NameOnNonApprover(Role::Head))
    );
    let named = issue_named_approver_cert(
        &ca,
        p,
        &ApproverName::parse("kiosk-1").unwrap(),
        from,
        until,
    )
    .unwrap();
    assert_eq!(
        peer_identity(&der(&named.cert_pem)).unwrap().uri(),
        format!("countersign://approver/{p}/kiosk-1")
    );
    assert_eq!(
        issue_named_approver_cert(
            &ca,
            "pr_bad",
            &ApproverName::parse("x").unwrap(),
            from,
            until
        )
        .map(|_| ()),
        Err(IdentityError::BadPeerPrincipal("pr_bad".into()))
    );
}

#[test]
fn exports_a_named_approver_credential_from_the_home_ca() {
    let (dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let name = ApproverName::parse("kiosk").unwrap();
    let export = export_named_approver(&home, &name, &out).unwrap();
    assert_eq!(export.cert, out.join("approver-kiosk.pem"));
    assert_eq!(export.key, out.join("approver-kiosk.key"));
    assert_eq!(export.ca, out.join("ca.pem"));
    assert!(export.ca_written);
    assert_eq!(
        export.uri,
        format!("countersign://approver/{principal}/kiosk")
    );
    let mode = std::fs::metadata(&export.key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::read(&export.ca).unwrap(),
        std::fs::read(home.ca_cert_path()).unwrap()
    );
    let pem = std::fs::read_to_string(&export.cert).unwrap();
    assert_eq!(
        peer_identity(&der(&pem)).unwrap().approver,
        Some(name.clone())
    );
    // Again into the same directory: the pair exists, nothing is rewritten.
    assert_eq!(
        export_named_approver(&home, &name, &out),
        Err(IdentityError::AlreadyExists(export.cert.clone()))
    );
    assert_eq!(std::fs::read_to_string(&export.cert).unwrap(), pem);
    // Another name beside it: the identical ca.pem is kept.
    let other =
        export_named_approver(&home, &ApproverName::parse("kiosk-2").unwrap(), &out).unwrap();
    assert!(!other.ca_written);
}

#[test]
fn refuses_to_export_into_a_missing_directory_or_beside_a_foreign_ca() {
    let (dir, home, principal) = init();
    create_dev_pki(&home, &principal).unwrap();
    let name = ApproverName::parse("kiosk").unwrap();
    let missing = dir.path().join("missing");
    assert_eq!(
        export_named_approver(&home, &name, &missing),
        Err(IdentityError::Missing(missing))
    );
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("ca.pem"), "another CA").unwrap();
    std::fs::set_permissions(out.join("ca.pem"), std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        export_named_approver(&home, &name, &out),
        Err(IdentityError::AlreadyExists(out.join("ca.pem")))
    );
    assert!(!out.join("approver-kiosk.key").exists());
}
