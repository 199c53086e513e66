//! The router, built from the table of data operations (the same table the
//! OpenAPI document comes from), and the layers every request crosses:
//! guards, a log line without the URL, a timeout.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, RawPathParams, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, get, on, post};
use countersign_surface::operations::{DataOperation, ParamSchema};
use tracing::Instrument as _;

use crate::guard::{self, AllowedHosts};
use crate::handlers;
use crate::hook;
use crate::openapi::{HEALTH_PATH, OPENAPI_PATH};
use crate::request;
use crate::respond::{self, ApiError};
use crate::{ApiState, REQUEST_TIMEOUT};

/// The API's router for `state`, answering to the host names `hosts`.
pub fn router(state: Arc<ApiState>, hosts: AllowedHosts) -> Router {
    let mut router = Router::new()
        .route(
            HEALTH_PATH,
            get(|| async { respond::ok(&serde_json::json!({"status": "ok"})) }),
        )
        .route(OPENAPI_PATH, get(openapi_document));
    for op in state.table.clone() {
        let Some((method, route)) = op.entries.api() else {
            continue;
        };
        let filter = if method == "GET" {
            MethodFilter::GET
        } else {
            MethodFilter::POST
        };
        router = router.route(
            route,
            on(
                filter,
                move |state: State<Arc<ApiState>>, path: Result<RawPathParams, _>, req: Request| {
                    handle(op, state, path, req)
                },
            ),
        );
    }
    // A hook waits for a person, up to its own wait: the one route
    // without the request timeout, behind the same guards.
    let hook_hosts = hosts.clone();
    let hooks = Router::new()
        .route(hook::CLAUDE_CODE_HOOK_PATH, post(hook::claude_code))
        .layer(middleware::from_fn(log))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            guard::guarded(hook_hosts.clone(), req, next)
        }))
        .with_state(Arc::clone(&state));
    router
        .fallback(|| async { ApiError::NotFound("no such route".into()) })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn(timeout))
        .layer(middleware::from_fn(log))
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            guard::guarded(hosts.clone(), req, next)
        }))
        .with_state(state)
        .merge(hooks)
}

async fn openapi_document(State(state): State<Arc<ApiState>>, req: Request) -> Response {
    match authenticate(&state, req.headers()) {
        Ok(_) => respond::ok(&state.openapi),
        Err(e) => e.into_response(),
    }
}

/// The caller's credential, from its `Authorization` header.
pub(crate) fn authenticate(
    state: &ApiState,
    headers: &axum::http::HeaderMap,
) -> Result<crate::tokens::TokenRecord, ApiError> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    state
        .parts
        .tokens
        .authenticate(header, &state.parts.principal, &state.parts.audience)
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map_err(ApiError::Unauthorized)
}

/// One data operation: secrets where they belong, credential, parameters,
/// then the operation itself.
async fn handle(
    op: DataOperation,
    State(state): State<Arc<ApiState>>,
    path: Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>,
    req: Request,
) -> Response {
    match handle_inner(&op, &state, path, req).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn handle_inner(
    op: &DataOperation,
    state: &Arc<ApiState>,
    path: Result<RawPathParams, axum::extract::rejection::RawPathParamsRejection>,
    req: Request,
) -> Result<Response, ApiError> {
    let (parts, body): (_, Body) = req.into_parts();
    request::refuse_misplaced_secrets(&parts)?;
    let token = authenticate(state, &parts.headers)?;
    let path: Vec<(String, String)> = path
        .map_err(|_| ApiError::BadRequest("the path is not valid percent-encoded UTF-8".into()))?
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let registry_op = match op.params {
        ParamSchema::Propose => {
            let name = path
                .iter()
                .find(|(k, _)| k == "operation")
                .map(|(_, v)| v.as_str())
                .unwrap_or_default();
            // Agent operations are proposed only by a hook
            // (`Operation::proposed_by_hooks`): not a route here.
            Some(
                state
                    .parts
                    .registry
                    .get(name)
                    .filter(|op| !op.proposed_by_hooks())
                    .ok_or_else(|| {
                        ApiError::NotFound("no such operation in the registry".into())
                    })?,
            )
        }
        ParamSchema::Fixed(_) => None,
    };
    let schema = op.params.schema(registry_op);
    let params = request::parameters(&parts, body, &path, &schema).await?;
    request::validate(
        &state.service,
        &state.parts.registry,
        op,
        registry_op,
        &params,
    )?;
    handlers::dispatch(state, op, registry_op, params, &token.session()).await
}

/// Log one line per request: method, route template, status, duration.
/// Never the URL (it may carry a query), a header or a body.
async fn log(req: Request, next: Next) -> Response {
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(unmatched)".to_string(), |p| p.as_str().to_string());
    // One span per request, named by the method and the route template
    // (never the path's values, a header or the body): what a trace shows.
    let span =
        tracing::info_span!("request", otel.name = %format!("{method} {route}"), %method, %route);
    async move {
        let started = Instant::now();
        let response = next.run(req).await;
        tracing::info!(%method, %route, status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
        response
    }
    .instrument(span)
    .await
}

/// Answer 503 when a request takes longer than [`REQUEST_TIMEOUT`]. An
/// execution keeps running to its recorded end (it runs in its own task).
async fn timeout(req: Request, next: Next) -> Response {
    match tokio::time::timeout(REQUEST_TIMEOUT, next.run(req)).await {
        Ok(response) => response,
        Err(_) => ApiError::Timeout.into_response(),
    }
}
