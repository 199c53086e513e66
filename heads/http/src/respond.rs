//! The one place where the HTTP heads' JSON answers reach the wire.
//!
//! - A result or a refusal is `200` with a JSON body: the surface's result
//!   value, or `{"ok": false, "applied": false, "reason", "message"}`.
//! - A malformed request is a 4xx with a precise message; a missing or bad
//!   credential is 401 with `WWW-Authenticate: Bearer`.
//! - An internal fault is a 500 with the generic message "internal error";
//!   its detail goes to the log only, redacted.
//!
//! Messages never contain a proof, a token, or a request value.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use countersign_proto::reason::Reason;
use serde_json::{Value, json};

use crate::redact::redact;
use crate::tokens::AuthRefusal;

/// Why a request got no result.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The request is malformed; the message says exactly how.
    #[error("{0}")]
    BadRequest(String),
    /// No valid credential.
    #[error("{0}")]
    Unauthorized(AuthRefusal),
    /// Cross-site, DNS rebinding, or a Host that is not ours.
    #[error("{0}")]
    Forbidden(&'static str),
    /// No such route or operation.
    #[error("{0}")]
    NotFound(String),
    /// The route exists, the method does not (`Allow` lists the methods).
    #[error("this route does not accept that method")]
    MethodNotAllowed,
    /// The body is over the limit.
    #[error("the request body is larger than {0} bytes")]
    PayloadTooLarge(usize),
    /// The body is not JSON.
    #[error("the request body must be application/json")]
    UnsupportedMediaType,
    /// The signer cannot be reached.
    #[error("the signer is unavailable; try again later")]
    Unavailable,
    /// The request took longer than the limit.
    #[error("the request timed out")]
    Timeout,
    /// A fault on our side; the detail is logged, never sent.
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        let (status, reason) = match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, Reason::BadRequest),
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, Reason::Unauthorized),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, Reason::Forbidden),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, Reason::NotFound),
            ApiError::MethodNotAllowed => {
                (StatusCode::METHOD_NOT_ALLOWED, Reason::MethodNotAllowed)
            }
            ApiError::PayloadTooLarge(_) => {
                (StatusCode::PAYLOAD_TOO_LARGE, Reason::PayloadTooLarge)
            }
            ApiError::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                Reason::UnsupportedMediaType,
            ),
            ApiError::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, Reason::Unavailable),
            ApiError::Timeout => (StatusCode::SERVICE_UNAVAILABLE, Reason::Timeout),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, Reason::Internal),
        };
        (status, reason.code())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(detail) = &self {
            tracing::error!(detail = %redact(detail), "internal error");
        }
        let (status, code) = self.status_and_code();
        let mut response = (
            status,
            json_body(&json!({"error": code, "message": self.to_string()})),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"countersign\""),
            );
        }
        response
    }
}

/// `200` with `value` as the JSON body.
pub fn ok(value: &Value) -> Response {
    (StatusCode::OK, json_body(value)).into_response()
}

fn json_body(value: &Value) -> ([(header::HeaderName, HeaderValue); 2], String) {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        value.to_string(),
    )
}
