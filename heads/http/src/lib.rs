//! The HTTP platform the HTTP heads share, so that no head imports
//! another head: the Host/Origin/`Sec-Fetch-Site` guards ([`guard`]), the
//! JSON answers and their error ([`respond`]), the one secret store of
//! bearer credentials and browser sessions ([`secrets`], with the API's
//! tokens in [`tokens`]), log redaction ([`redact`]), the body limit, and
//! serving with `TCP_NODELAY` and a drain at shutdown ([`mod@serve`]).
//!
//! Must not: know a route, an operation or a proof.
#![forbid(unsafe_code)]

pub mod guard;
pub mod redact;
pub mod respond;
pub mod secrets;
pub mod serve;
pub mod tokens;
pub mod unix;

pub use guard::{AllowedHosts, Forbidden, check};
pub use respond::ApiError;
pub use serve::{nodelay, serve, stop_when};
pub use tokens::{ApiToken, TokenRecord, TokenStore};

/// The largest request body an HTTP head accepts (a proof is at most
/// 192 KiB).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
