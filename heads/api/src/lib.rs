//! The private HTTP API head (`countersign api serve`): the data operations
//! of the surface table over HTTP, for programs that are not MCP clients.
//!
//! - Every data endpoint requires a bearer credential from [`tokens`], bound
//!   to this installation's principal and to this API's audience; the
//!   session of every proposal and execution is `api:<token id>`.
//! - Host, Origin and `Sec-Fetch-Site` guards refuse cross-site and
//!   DNS-rebinding requests (`guard`).
//! - Requests are flat JSON of the declared parameters, parsed strictly
//!   (`request`); proofs only ever in the body's `proof` field.
//! - Responses are the surface's result values; refusals are `200` with
//!   `ok: false`; errors reach the wire in one place (`respond`).
//! - The router and the OpenAPI document ([`openapi`]) are both built from
//!   the table, so the parity gate reads what the API really serves.
//!
//! Must not: approve, deny or revoke; log a URL, header, body, proof or
//! token; accept a proof anywhere but a request body.
#![forbid(unsafe_code)]

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod handlers;
mod hook;
pub mod openapi;
mod request;
mod routes;
pub use countersign_http::{guard, redact, respond, tokens};

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use countersign_gate::Gate;
use countersign_http::unix::PeerListener;
use countersign_http::{AllowedHosts, nodelay, stop_when};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use countersign_surface::operations::{DATA_OPERATIONS, DataOperation, Exposure};
use serde_json::Value;
use tokio::net::TcpListener;
use tonic::transport::Channel;

pub use countersign_http::unix;
pub use respond::ApiError;
pub use routes::router;
pub use tokens::{ApiToken, TokenRecord, TokenStore};

/// The default listening address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";
/// The largest request body accepted (a proof is at most 192 KiB).
pub use countersign_http::MAX_BODY_BYTES;
/// How long one request may take before the API answers 503.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a shutdown waits for requests in flight (the one grace of
/// every long-running process).
pub use countersign_identity::shutdown::SHUTDOWN_GRACE;

/// The audience of this installation's API: tokens are bound to it.
pub fn default_audience(principal: &str) -> String {
    format!("countersign-api:{principal}")
}

/// What the API needs from the installation.
pub struct ApiParts {
    /// The installation's principal.
    pub principal: String,
    /// This API's audience.
    pub audience: String,
    /// The operation registry, as loaded at start (routes, schemas, OpenAPI).
    pub registry: Arc<Registry>,
    /// The verifier/effect service.
    pub gate: Gate,
    /// A signer client authenticated as this installation's head.
    pub head: SignerClient<Channel>,
    /// The token store.
    pub tokens: TokenStore,
}

/// The shared state of a running API.
pub struct ApiState {
    pub(crate) parts: ApiParts,
    /// The data-operation service every data route calls.
    pub(crate) service: countersign_service::Service,
    pub(crate) table: Vec<DataOperation>,
    pub(crate) openapi: Value,
}

impl ApiState {
    /// The state for the shipped table of data operations.
    pub fn new(parts: ApiParts) -> Result<Self, ApiError> {
        Self::with_table(parts, DATA_OPERATIONS)
    }

    /// The state for another table (tests of the parity gate).
    pub fn with_table(parts: ApiParts, table: &[DataOperation]) -> Result<Self, ApiError> {
        let openapi = openapi::document(table, &parts.registry);
        let service = countersign_service::Service::new(
            parts.head.clone(),
            parts.gate.clone(),
            parts.registry.clone(),
        )
        .through(countersign_service::Through::Api);
        // Every parameter schema compiles now, once, in the service.
        service
            .schemas()
            .compile_all(&parts.registry, table)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(Self {
            parts,
            service,
            table: table.to_vec(),
            openapi,
        })
    }

    /// The OpenAPI document this API serves.
    pub fn openapi(&self) -> &Value {
        &self.openapi
    }
}

/// What the API exposes for `registry`, read from its OpenAPI document (the
/// router is built from the same table; a test checks it serves every path).
pub fn exposures(registry: &Registry) -> Vec<Exposure> {
    openapi::exposures_from_document(&openapi::document(DATA_OPERATIONS, registry))
}

/// Serve `state` on `listener` until `shutdown` completes, then let
/// requests in flight finish for at most the shutdown grace
/// ([`countersign_http::serve()`]).
pub async fn run(
    listener: TcpListener,
    state: Arc<ApiState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local: SocketAddr = listener.local_addr()?;
    let app = router(state, AllowedHosts::for_addr(local));
    countersign_http::serve(nodelay(listener), app, stop_when(shutdown)).await
}

/// [`run`] on a Unix socket whose listener serves one OS user only
/// ([`countersign_http::unix`]); requests name the host `localhost`.
pub async fn run_unix(
    listener: PeerListener,
    state: Arc<ApiState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state, AllowedHosts::unix_socket());
    countersign_http::serve(listener, app, stop_when(shutdown)).await
}
