//! The API's guard middleware: the shared guards (`countersign_http`),
//! answered in the API's refusal format.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
pub use countersign_http::{AllowedHosts, Forbidden, check};

use crate::respond::ApiError;

/// The guards as a middleware (`axum::middleware::from_fn`): a refused
/// request is answered 403 here and goes no further.
pub async fn guarded(hosts: AllowedHosts, req: Request, next: Next) -> Response {
    match check(req.headers(), &hosts) {
        Ok(()) => next.run(req).await,
        Err(Forbidden(why)) => ApiError::Forbidden(why).into_response(),
    }
}
