//! The approval console: a web page where a person, in a paired browser,
//! reviews proposals and decides, through the signer's approver API.
//!
//! The console is its own process (`countersign console`), a gRPC client of
//! the signer with its own approver credential (so the signer records that
//! the console decided), and, for "approve and run now", a head with the
//! gate. It links no signing code.
//!
//! What it promises, and where that is kept:
//! - It speaks HTTPS only, at names whose certificate key only its user
//!   reads, on every address those names resolve to (`tls`, `bind`); a
//!   plain-HTTP request gets a redirect that carries nothing.
//! - Only a browser paired through a one-time link, with a session of this
//!   console's own approver, sees anything but the pairing page, and only
//!   its own script, which sends the session's page key with every read,
//!   sees a proposal, rule, device or passkey: a cookie alone reads an
//!   empty page (`auth`, `sessions`).
//! - Nothing changes on GET; every change is a POST with the session's page
//!   key, which no cookie carries, after the API's Host/Origin/Sec-Fetch-Site
//!   guards on the console's https names (`guarded`).
//! - Every response carries a Content-Security-Policy without inline script,
//!   `frame-ancestors 'none'`, nosniff and no referrer (`guarded`); every
//!   asset is served by the binary (`assets`).
//! - A person sees the signer's stored preview and canonical arguments with
//!   unsafe characters escaped and nothing truncated (`views`, `html`).
//! - The paired browsers are listed as devices, and any can be unpaired
//!   from the console (`devices`).
//! - A paired browser may ask to be notified by Web Push; its subscription
//!   is kept with its session and ends with it (`push`).
//! - It is an installable web app (a manifest, icons and a service worker
//!   that caches nothing and holds nothing: `assets`); pages fit a phone.
#![forbid(unsafe_code)]

mod actions;
mod assets;
mod auth;
pub mod bind;
mod devices;
mod html;
mod live;
pub mod mdns;
mod pages;
mod passkeys;
mod push;
mod push_devices;
mod rules;
pub mod sessions;
pub mod tls;
mod views;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::header::{
    CONTENT_SECURITY_POLICY, ORIGIN, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use countersign_http::{AllowedHosts, check};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::{CurrentRegistry, Policy};
use countersign_service::{Approver, Service};
use tonic::transport::Channel;
use tracing::Instrument as _;

pub use sessions::{SessionRecord, SessionStore};
pub use tls::TlsListener;

/// Where the console listens unless told otherwise.
pub use countersign_identity::DEFAULT_CONSOLE_ADDR as DEFAULT_LISTEN;
/// The largest form body accepted (a denial reason is at most 2000 characters).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The policy every response carries: scripts and styles only from this
/// server, no inline script, no framing, forms only to this server; the web
/// app's manifest and service worker only from this server too.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What the console is built from.
pub struct ConsoleParts {
    /// The signer, authenticated with the console's approver credential.
    pub approver: SignerClient<Channel>,
    /// The service this console runs approved effects through ("approve
    /// and run now"), as a head of the principal, on its tracker.
    pub service: Service,
    /// The registry, for what a card shows about an operation (lifetime,
    /// model-supplied fields).
    pub registry: Arc<CurrentRegistry>,
    /// The issuing policy, for an operation's proof lifetime.
    pub policy: Policy,
    /// Paired browsers of this console's approver.
    pub sessions: SessionStore,
    /// The https names the console is reached by (`Host` must name one).
    pub names: Vec<String>,
    /// The installation's VAPID public key file (`notify/vapid.pub`),
    /// read on each *Devices* page; the console never reads the private key.
    pub push_key: std::path::PathBuf,
}

/// The console's shared state.
pub struct ConsoleState {
    pub(crate) approver: SignerClient<Channel>,
    /// The approver operations: every decision goes through them.
    pub(crate) decisions: Approver,
    pub(crate) registry: Arc<CurrentRegistry>,
    pub(crate) policy: Policy,
    pub(crate) sessions: SessionStore,
    pub(crate) names: Vec<String>,
    pub(crate) push_key: std::path::PathBuf,
    pub(crate) live: live::Live,
}

impl ConsoleState {
    /// The state for `parts`.
    pub fn new(parts: ConsoleParts) -> Self {
        let live = live::Live::new(parts.approver.clone());
        Self {
            decisions: Approver::new(parts.approver.clone(), parts.service),
            approver: parts.approver,
            registry: parts.registry,
            policy: parts.policy,
            sessions: parts.sessions,
            names: parts.names,
            push_key: parts.push_key,
            live,
        }
    }
}

/// The console's routes for a server on `port`.
pub fn router(state: Arc<ConsoleState>, port: u16) -> Router {
    let hosts = AllowedHosts::https_names(&state.names, port);
    Router::new()
        .route("/", get(pages::pending))
        .route("/history", get(pages::history))
        .route("/proposals/{id}", get(pages::proposal))
        .route("/proposals/{id}/approve", post(actions::approve))
        .route("/proposals/{id}/deny", post(actions::deny))
        .route("/proposals/{id}/revoke", post(actions::revoke))
        .route("/proposals/{id}/resolve", post(actions::resolve))
        .route(
            "/proposals/{id}/passkey-challenge",
            post(passkeys::decision_challenge),
        )
        .route("/passkeys", get(passkeys::page_of_passkeys))
        .route(
            "/passkeys/enrolment-challenge",
            post(passkeys::enrolment_challenge),
        )
        .route("/passkeys/enrol", post(passkeys::enrol))
        .route(
            "/passkeys/{id}/removal-challenge",
            post(passkeys::removal_challenge),
        )
        .route("/passkeys/{id}/remove", post(passkeys::remove))
        .route("/rules", get(rules::page_of_rules))
        .route("/rules/{id}/revoke", post(rules::revoke))
        .route(
            "/rules/{id}/revise",
            get(rules::revise::page_of_revision).post(rules::revise::preview),
        )
        .route("/rules/{id}/revise/confirm", post(rules::revise::confirm))
        .route("/devices", get(devices::page_of_devices))
        .route("/devices/{id}/unpair", post(devices::unpair))
        .route("/push/subscribe", post(push::subscribe))
        .route("/push/unsubscribe", post(push::unsubscribe))
        .route("/pair/{code}", get(pages::pair_link))
        .route("/pair", post(actions::pair))
        .route("/logout", post(actions::logout))
        .route("/events", get(live::events))
        .route("/assets/{name}", get(assets::asset))
        .route("/manifest.webmanifest", get(assets::manifest))
        .route("/sw.js", get(assets::service_worker))
        .fallback(pages::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(hosts, guarded))
        .with_state(state)
}

/// Every request: refuse one that is cross-site or not addressed to us
/// before anything runs, and put the security headers on every response.
async fn guarded(State(hosts): State<AllowedHosts>, mut request: Request, next: Next) -> Response {
    // Our pages send no referrer, so the browser sends `Origin: null` with
    // their own form posts (Fetch: a request whose referrer policy is
    // no-referrer serializes its origin as null). Such a request is ours
    // only if the browser also says it is same-origin (`Sec-Fetch-Site`,
    // which no page can set); a null origin from anywhere else (a
    // sandboxed frame on another site) stays refused by the guard.
    let headers = request.headers();
    if headers.get(ORIGIN).is_some_and(|o| o == "null")
        && headers.get_all("sec-fetch-site").iter().count() == 1
        && headers
            .get("sec-fetch-site")
            .is_some_and(|s| s == "same-origin")
    {
        request.headers_mut().remove(ORIGIN);
    }
    // One span per request, named by the method and the route template
    // (never the path's values, a cookie or a form field).
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("(unmatched)", MatchedPath::as_str)
        .to_owned();
    let method = request.method().clone();
    let span =
        tracing::info_span!("request", otel.name = %format!("{method} {route}"), %method, %route);
    let mut response = match check(request.headers(), &hosts) {
        Ok(()) => next.run(request).instrument(span).await,
        Err(e) => auth::refusal(StatusCode::FORBIDDEN, &format!("{e}; nothing was done.")),
    };
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// Serve the console on `listener` (HTTPS, every address) until
/// `shutdown` completes, then let requests in flight finish for
/// the shutdown grace; live update streams end at once.
pub async fn run(
    listener: TlsListener,
    state: Arc<ConsoleState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = axum::serve::Listener::local_addr(&listener)?.port();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    state.live.stop_on(stop_rx.clone());
    let follower = tokio::spawn(live::follow(state.clone(), stop_rx.clone()));
    let publisher = tokio::spawn(push_devices::keep_published(state.clone(), stop_rx));
    let executions = state.decisions.executions();
    let app = router(state, port);
    let stop = countersign_http::stop_when(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let served = countersign_http::serve(listener, app, stop).await;
    follower.abort();
    publisher.abort();
    // An approval run now whose request was cut off still completes.
    executions.close();
    executions.wait().await;
    served
}
