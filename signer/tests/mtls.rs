//! The signer refuses connections without a client certificate of its CA
//! that is valid now; the tests assert what the client sees.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::pki::CaMaterial;
use countersign_identity::{Role, tls};
use countersign_proto::v1::PublicKeysRequest;
use countersign_signer::testing::TestSigner;
use time::Duration;
use tonic::Code;
use tonic::transport::ClientTlsConfig;

use support::{SESSION, VALID_NOW, propose_request, start, tls_with_cert};

/// Connecting may succeed (a TLS 1.3 client finishes its handshake before
/// the server has checked its certificate); the first call then fails with
/// the server's alert. Returns what the client saw, and asserts that the
/// server side recorded nothing: no request reached the service.
async fn refused(signer: &TestSigner, config: ClientTlsConfig) -> String {
    let seen = match signer.client_with(config).await {
        Err(e) => format!("{e:?}"),
        Ok(mut client) => {
            let status = client.propose(propose_request(SESSION)).await.unwrap_err();
            assert_eq!(status.code(), Code::Unknown, "{status:?}");
            assert_eq!(status.message(), "transport error");
            format!("{status:?}")
        }
    };
    assert!(signer.state().ledger().events().await.unwrap().is_empty());
    seen
}

#[tokio::test]
async fn rejects_head_without_client_certificate() {
    let signer = start().await;
    let ca = CaMaterial::load(signer.home()).unwrap();
    let seen = refused(&signer, tls::client_config_without_identity(ca.cert_pem())).await;
    assert!(
        seen.contains("received fatal alert: CertificateRequired"),
        "{seen}"
    );
}

#[tokio::test]
async fn rejects_client_certificate_from_another_ca() {
    let signer = start().await;
    let ours = CaMaterial::load(signer.home()).unwrap();
    let theirs = CaMaterial::generate("unrelated CA").unwrap();
    let config = tls_with_cert(
        &ours,
        &theirs,
        Role::Approver,
        signer.principal(),
        VALID_NOW,
    );
    let seen = refused(&signer, config).await;
    assert!(seen.contains("received fatal alert: UnknownCA"), "{seen}");
}

#[tokio::test]
async fn rejects_expired_client_certificate() {
    let signer = start().await;
    let ca = CaMaterial::load(signer.home()).unwrap();
    let expired = (Duration::days(-2), Duration::days(-1));
    let config = tls_with_cert(&ca, &ca, Role::Approver, signer.principal(), expired);
    let seen = refused(&signer, config).await;
    assert!(
        seen.contains("received fatal alert: CertificateExpired"),
        "{seen}"
    );
}

#[tokio::test]
async fn client_refuses_signer_certificate_from_another_ca() {
    let signer = start().await;
    let theirs = CaMaterial::generate("unrelated CA").unwrap();
    let ours = CaMaterial::load(signer.home()).unwrap();
    // The client trusts only the unrelated CA, so the signer's certificate fails.
    let config = tls_with_cert(&theirs, &ours, Role::Head, signer.principal(), VALID_NOW);
    let seen = refused(&signer, config).await;
    assert!(seen.contains("InvalidCertificate(UnknownIssuer)"), "{seen}");
}

#[tokio::test]
async fn accepts_dev_certificates_of_each_role() {
    let signer = start().await;
    for role in [Role::Approver, Role::Head] {
        let mut client = signer.client(role).await.unwrap();
        let keys = client
            .public_keys(PublicKeysRequest {})
            .await
            .unwrap()
            .into_inner();
        assert_eq!(keys.keys.len(), 1);
        assert_eq!(keys.keys[0].key_id, signer.state().key_id().unwrap());
        assert_eq!(keys.keys[0].public_key.len(), 32);
    }
    let mut admin = support::client_as(&signer, Role::Admin, signer.principal()).await;
    admin.public_keys(PublicKeysRequest {}).await.unwrap();
}
