//! grpc.health.v1 and server reflection on the signer, behind the same
//! mTLS as every RPC: a client with an installation certificate sees the
//! signer SERVING and `countersign.v1.Signer` listed; one without a client
//! certificate cannot connect at all.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::pki::CaMaterial;
use countersign_identity::{Role, tls};
use tonic::codegen::tokio_stream::{self, StreamExt as _};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_reflection::pb::v1::ServerReflectionRequest;
use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

use support::start;

#[tokio::test]
async fn health_check_returns_serving_over_mtls() {
    let signer = start().await;
    let tls = tls::client_config(signer.home(), Role::Head).unwrap();
    let mut health = HealthClient::new(signer.channel_with(tls).await.unwrap());
    for service in ["", "countersign.v1.Signer"] {
        let answer = health
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(answer.status(), ServingStatus::Serving, "{service:?}");
    }

    let ca = CaMaterial::load(signer.home()).unwrap();
    let anonymous = tls::client_config_without_identity(ca.cert_pem());
    let refused = match signer.channel_with(anonymous).await {
        Err(e) => e.to_string(),
        Ok(channel) => HealthClient::new(channel)
            .check(HealthCheckRequest::default())
            .await
            .unwrap_err()
            .to_string(),
    };
    assert!(!refused.is_empty());
}

#[tokio::test]
async fn reflection_lists_the_signer_service() {
    let signer = start().await;
    let tls = tls::client_config(signer.home(), Role::Approver).unwrap();
    let mut reflection = ServerReflectionClient::new(signer.channel_with(tls).await.unwrap());
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(tokio_stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.next().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("{answer:?}")
    };
    let names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.contains(&"countersign.v1.Signer".to_string()),
        "{names:?}"
    );
}
