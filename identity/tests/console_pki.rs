//! The console's certificate: a name-constrained CA that a browser can
//! trust without trusting it for any other site, and a server certificate
//! kept to exactly the configured names.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use countersign_identity::console_pki::{
    CONSOLE_NAME, console_ca_pem, ensure_console_cert, fingerprint_sha256, generate_console_ca,
    issue_console_cert,
};
use countersign_identity::{Home, IdentityError};
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};

fn init() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("cs")).unwrap();
    home.init().unwrap();
    (dir, home)
}

/// What a browser's verifier says of `leaf_pem` for `name`, with only the
/// CA `ca_pem` trusted.
fn verify(ca_pem: &str, leaf_pem: &str, name: &str) -> Result<(), rustls::Error> {
    countersign_identity::tls::install_crypto_provider();
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let verifier = WebPkiServerVerifier::builder(Arc::new(roots))
        .build()
        .unwrap();
    verifier
        .verify_server_cert(
            &CertificateDer::from_pem_slice(leaf_pem.as_bytes()).unwrap(),
            &[],
            &ServerName::try_from(name.to_owned()).unwrap(),
            &[],
            UnixTime::now(),
        )
        .map(|_| ())
}

#[test]
fn the_console_ca_vouches_for_the_console_names_and_no_other_site() {
    let names = vec![CONSOLE_NAME.to_owned()];
    let ca = generate_console_ca(&names).unwrap();
    let console = issue_console_cert(&ca, &names).unwrap();
    verify(ca.cert_pem(), &console.cert_pem, CONSOLE_NAME).unwrap();
    // Were the CA's key stolen, what it signs for another site is refused
    // by the verifier for the name constraints, not only for the name.
    for other in ["bank.example.com", "localhost", "evil.localhost"] {
        let forged = issue_console_cert(&ca, &[other.to_owned()]).unwrap();
        let refused = verify(ca.cert_pem(), &forged.cert_pem, other).unwrap_err();
        assert!(
            format!("{refused:?}").contains("NameConstraintViolation"),
            "{other}: {refused:?}"
        );
    }
}

#[test]
fn ensure_makes_private_files_once_and_reissues_only_for_new_names() {
    let (_dir, home) = init();
    let names = vec![CONSOLE_NAME.to_owned()];
    let (first, report) = ensure_console_cert(&home, &names).unwrap();
    assert_eq!(report.written.len(), 4, "{report:?}");
    for path in &report.written {
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
    }
    home.check().unwrap();
    let (again, report) = ensure_console_cert(&home, &names).unwrap();
    assert!(report.written.is_empty(), "{report:?}");
    assert_eq!(again.cert_pem, first.cert_pem);
    let ca = console_ca_pem(&home).unwrap();
    verify(&ca, &first.cert_pem, CONSOLE_NAME).unwrap();
    assert_eq!(fingerprint_sha256(&ca).unwrap().len(), 32 * 3 - 1);

    // A subdomain of a permitted name: the leaf is issued again, the CA kept.
    let more = vec![CONSOLE_NAME.to_owned(), format!("alice.{CONSOLE_NAME}")];
    let (wider, report) = ensure_console_cert(&home, &more).unwrap();
    assert_eq!(
        report.written,
        [home.console_key_path(), home.console_cert_path()]
    );
    verify(&ca, &wider.cert_pem, &more[1]).unwrap();
    assert_eq!(console_ca_pem(&home).unwrap(), ca);

    // A name the CA does not permit: refused with the way out, nothing written.
    let refused = ensure_console_cert(&home, &["approve.example.org".to_owned()]).unwrap_err();
    match refused {
        IdentityError::Pki(message) => {
            assert!(
                message.contains("may vouch only for console.localhost"),
                "{message}"
            );
            assert!(message.contains("countersign console trust"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(home.console_cert_path()).unwrap(),
        wider.cert_pem
    );
}
