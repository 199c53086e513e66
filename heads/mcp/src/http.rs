//! The MCP head over streamable HTTP (`countersign mcp --listen ADDR`): the
//! SDK's `StreamableHttpService`, stateless, mounted at [`MCP_PATH`] in an
//! axum router, behind the HTTP API's guards and bearer credentials.
//!
//! Every request crosses, in order: the API's Host, Origin and
//! `Sec-Fetch-Site` guards (403); the API's bearer credential check (401
//! with a `WWW-Authenticate` naming the RFC 9728 metadata); for a POST, the
//! body screened by [`crate::frame::screen_frame`] exactly as a stdio frame
//! (a refused body is answered with the same JSON-RPC error, and the SDK
//! never sees it); then the SDK. The credential travels to the tool call in
//! the request's extensions, and the call's session is derived from it
//! (`api:<id>`, the same session the HTTP API gives that credential).
//!
//! Must not: let a client choose or carry over a session (the SDK runs
//! stateless: no `Mcp-Session-Id` is issued, so no session can be replayed
//! under another credential), pass the SDK a body the strict parser refused,
//! or log a credential.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, HOST, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use countersign_http::ApiError;
use countersign_http::guard::{self, AllowedHosts};
use countersign_http::tokens::TokenStore;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::frame::{Screened, screen_frame};
use crate::server::McpHead;

/// Where the MCP endpoint is served.
pub const MCP_PATH: &str = "/mcp";

/// Where the RFC 9728 protected-resource metadata is served (also at this
/// path followed by [`MCP_PATH`], the form RFC 9728 derives from the
/// resource's own path).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The largest POST body accepted: the HTTP API's limit.
pub const MAX_BODY_BYTES: usize = countersign_http::MAX_BODY_BYTES;

/// Who may call, and as whom: the credentials of this installation's API.
#[derive(Debug, Clone)]
pub struct HttpAuth {
    /// The API's token store.
    pub tokens: TokenStore,
    /// This installation's principal.
    pub principal: String,
    /// The API's audience (credentials are bound to it).
    pub audience: String,
}

/// The session of the credential a request was authenticated with, put in
/// the request's extensions by the credential check.
#[derive(Debug, Clone)]
struct CredentialSession(String);

/// The session of the credential the HTTP request behind a tool call was
/// authenticated with, from the extensions the SDK gives the call.
pub(crate) fn credential_session(extensions: &rmcp::model::Extensions) -> Option<String> {
    extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<CredentialSession>()
        .map(|c| c.0.clone())
}

struct Endpoint {
    auth: HttpAuth,
    mcp: StreamableHttpService<McpHead, NeverSessionManager>,
}

/// The router: metadata, and the MCP endpoint behind the credential check
/// and the body screening; the guards in front of both.
fn router(head: McpHead, auth: HttpAuth, local: SocketAddr, stop: CancellationToken) -> Router {
    let hosts = AllowedHosts::for_addr(local);
    // The Host and Origin checks are the API's guards below (stricter: the
    // bound address and port only); the SDK's own loopback list would refuse
    // a non-loopback --listen that the guards accept.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop);
    let head = head.per_credential();
    let mcp = StreamableHttpService::new(
        move || Ok(head.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let endpoint = Arc::new(Endpoint { auth, mcp });
    Router::new()
        .route(METADATA_PATH, get(metadata))
        .route(&format!("{METADATA_PATH}{MCP_PATH}"), get(metadata))
        .route(
            MCP_PATH,
            any(move |req: Request| {
                let endpoint = endpoint.clone();
                async move { endpoint.serve(req).await }
            }),
        )
        .fallback(|| async { ApiError::NotFound("no such route".into()) })
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            guard::guarded(hosts.clone(), req, next)
        }))
}

/// `http://` and the request's `Host` (already checked to name this server).
fn origin_of(req: &Request) -> String {
    let host = req
        .headers()
        .get(HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    format!("http://{host}")
}

/// RFC 9728 section 2: `resource` is the one required member; there is no
/// authorization server (credentials are made with `countersign api token
/// create`), so `authorization_servers` is absent.
async fn metadata(req: Request) -> Response {
    let origin = origin_of(&req);
    let body = json!({
        "resource": format!("{origin}{MCP_PATH}"),
        "bearer_methods_supported": ["header"],
        "resource_name": "countersign MCP",
    });
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body.to_string(),
    )
        .into_response()
}

impl Endpoint {
    async fn serve(&self, req: Request) -> Response {
        let origin = origin_of(&req);
        let header = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
        let checked =
            self.auth
                .tokens
                .authenticate(header, &self.auth.principal, &self.auth.audience);
        let record = match checked {
            Ok(Ok(record)) => record,
            Ok(Err(refusal)) => {
                tracing::info!(%refusal, "refused an MCP request without a valid credential");
                let mut response = ApiError::Unauthorized(refusal).into_response();
                let challenge = format!("Bearer resource_metadata=\"{origin}{METADATA_PATH}\"");
                match HeaderValue::from_str(&challenge) {
                    Ok(value) => {
                        response.headers_mut().insert(WWW_AUTHENTICATE, value);
                    }
                    Err(e) => tracing::error!("cannot name the metadata in a header: {e}"),
                }
                return response;
            }
            Err(e) => {
                tracing::error!("reading the credential store failed: {e}");
                return ApiError::Internal(e.to_string()).into_response();
            }
        };
        let (mut parts, body) = req.into_parts();
        parts.extensions.insert(CredentialSession(record.session()));
        let body = if parts.method == Method::POST {
            match screened_body(body).await {
                Ok(bytes) => Body::from(bytes),
                Err(response) => return response,
            }
        } else {
            body
        };
        self.mcp
            .handle(Request::from_parts(parts, body))
            .await
            .map(Body::new)
    }
}

/// A POST body through the strict parser, as a stdio frame: passed on
/// whole, or answered here.
async fn screened_body(body: Body) -> Result<axum::body::Bytes, Response> {
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return Err(ApiError::PayloadTooLarge(MAX_BODY_BYTES).into_response());
    };
    match screen_frame(&bytes) {
        Screened::Message(_) => Ok(bytes),
        Screened::Answer(answer) => Err((
            StatusCode::BAD_REQUEST,
            [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
            answer.to_string(),
        )
            .into_response()),
        Screened::Ignore => Err(StatusCode::ACCEPTED.into_response()),
    }
}

/// Serve the MCP head on `listener` (TCP_NODELAY on every connection) until
/// `shutdown` resolves, then stop taking requests, and let executions still
/// running finish for up to the shutdown grace.
pub async fn serve_http(
    head: McpHead,
    auth: HttpAuth,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    let executions = head.executions();
    let stop = CancellationToken::new();
    let app = router(head, auth, local, stop.clone());
    let signalled = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        signalled.cancel();
    });
    let served = countersign_http::serve(countersign_http::nodelay(listener), app, stop).await;
    executions.close();
    if !executions.is_empty() {
        tracing::warn!(
            running = executions.len(),
            "stopping; waiting for executions still running to finish"
        );
    }
    crate::server::drain_executions(&executions).await;
    served
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn refused(body: &'static str) -> (StatusCode, serde_json::Value) {
        let response = screened_body(Body::from(body)).await.unwrap_err();
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), MAX_BODY_BYTES)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap_or_default())
    }

    #[tokio::test]
    async fn a_strict_request_body_passes_unchanged() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let passed = screened_body(Body::from(body)).await.unwrap();
        assert_eq!(&passed[..], body.as_bytes());
    }

    #[tokio::test]
    async fn refuses_a_body_with_a_duplicate_key_with_the_stdio_heads_answer() {
        let body = r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","method":"tools/call"}"#;
        let (status, answer) = refused(body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        match screen_frame(body.as_bytes()) {
            Screened::Answer(stdio) => assert_eq!(answer, stdio),
            other => panic!("{other:?}"),
        }
        assert_eq!(answer["id"], 4);
    }

    #[tokio::test]
    async fn refuses_a_body_that_is_not_json_with_a_parse_error() {
        let (status, answer) = refused("{not json").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(answer["error"]["code"], -32700);
    }

    #[tokio::test]
    async fn refuses_a_body_over_the_limit_with_413() {
        let big = "x".repeat(MAX_BODY_BYTES + 1);
        let response = screened_body(Body::from(big)).await.unwrap_err();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[tokio::test]
    async fn a_refused_notification_is_accepted_and_answered_with_nothing() {
        let body = r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"a":1,"a":2}}"#;
        let response = screened_body(Body::from(body)).await.unwrap_err();
        assert_eq!(response.status(), StatusCode::ACCEPTED);
    }

    #[test]
    fn the_session_comes_from_the_authenticated_credential_only() {
        let mut extensions = rmcp::model::Extensions::new();
        assert_eq!(credential_session(&extensions), None);
        let (mut parts, ()) = axum::http::Request::new(()).into_parts();
        extensions.insert(parts.clone());
        assert_eq!(credential_session(&extensions), None);
        parts
            .extensions
            .insert(CredentialSession("api:0123456789abcdef".into()));
        extensions.insert(parts);
        assert_eq!(
            credential_session(&extensions).as_deref(),
            Some("api:0123456789abcdef")
        );
    }
}
