//! Web Push for a paired browser: "Notify this device" on the *Devices*
//! page. The page carries the installation's VAPID public key (the
//! `applicationServerKey`; only a paired browser sees the page), the
//! script subscribes with the browser's push manager and posts the
//! subscription's JSON here in a form with the page key, like every change.
//! The subscription is parsed strictly (`countersign_push::subscription`),
//! kept with this browser's own session in the session store and
//! published to the ledger through the signer (`push_devices.rs`), where
//! the notify process learns it; it pushes to it while the session is
//! active, and it is removed when the session ends (unpair, revoke,
//! expiry).
//!
//! A push carries no authority: it names a proposal, and the service
//! worker only opens that proposal's card on this console's origin.
//!
//! Must not: keep a subscription for any session but the requesting one,
//! or one that failed a check; read the VAPID private key.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use countersign_push::Subscription;
use maud::{Markup, html};

use crate::ConsoleState;
use crate::actions::Authorized;
use crate::auth::{html_response, refusal};
use crate::html::{notice, page, page_key_field};
use crate::sessions::{SessionRecord, SessionRefusal};

/// The form field holding the subscription's JSON.
pub(crate) const SUBSCRIPTION_FIELD: &str = "subscription";

/// The installation's VAPID public key, if it has one (the console reads
/// only the public half).
pub(crate) fn application_server_key(state: &ConsoleState) -> Option<String> {
    match countersign_push::vapid::public_key_at(&state.push_key) {
        Ok(key) => Some(key),
        Err(e) => {
            tracing::debug!(error = %e, "no Web Push key: the Notify button is not shown");
            None
        }
    }
}

/// The *Devices* page's section about this browser's notifications.
pub(crate) fn section(state: &ConsoleState, here: &SessionRecord) -> Markup {
    let key = application_server_key(state);
    html! {
        section #push aria-labelledby="push-heading" {
            h2 #push-heading { "Notifications on this device" }
            @match (&key, &here.push) {
                (None, _) => p #push-state {
                    "Push notifications are not set up in this installation (it has no VAPID key): run "
                    code { "countersign init" } " again, or start " code { "countersign notify serve" }
                    " with a " code { "[notify.push]" } " channel."
                },
                (Some(_), Some(_)) => {
                    p #push-state { "This device is notified when a proposal waits for a decision. A notification only opens the proposal's card; deciding still needs this paired browser (and a passkey where one is required)." }
                    form method="post" action="/push/unsubscribe" {
                        (page_key_field())
                        button type="submit" { "Stop notifying this device" }
                    }
                }
                (Some(key), None) => {
                    p #push-state { "This device is not notified. A notification says only which operation waits, and opens its card." }
                    form #push-subscribe method="post" action="/push/subscribe" data-push-key=(key) {
                        (page_key_field())
                        input type="hidden" name=(SUBSCRIPTION_FIELD) value="";
                        button type="submit" { "Notify this device" }
                    }
                }
            }
        }
    }
}

/// `POST /push/subscribe`: keep this browser's subscription.
pub(crate) async fn subscribe(
    State(state): State<Arc<ConsoleState>>,
    Authorized { session, form }: Authorized,
) -> Response {
    let subscription = match Subscription::from_browser_json(
        form.get(SUBSCRIPTION_FIELD).unwrap_or_default().as_bytes(),
    ) {
        Ok(subscription) => subscription,
        Err(why) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("{why}; nothing was kept."),
            );
        }
    };
    if application_server_key(&state).is_none() {
        return refusal(
            StatusCode::CONFLICT,
            "Push notifications are not set up in this installation (it has no VAPID key); nothing was kept.",
        );
    }
    let id = &session.record.id;
    let outcome = state.sessions.subscribe(id, subscription);
    if let Ok(Ok(())) = outcome
        && let Err(e) = crate::push_devices::publish(&state).await
    {
        tracing::error!("cannot publish a new Web Push subscription: {e}");
        // Back to what the session held before (the ledger still has it).
        let previous = match session.record.push.clone() {
            Some(previous) => state.sessions.subscribe(id, previous),
            None => state.sessions.unsubscribe(id),
        };
        if let Err(e) = previous {
            tracing::error!(error = %e, "cannot take back a subscription the signer did not record");
        }
        return refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            "The signer did not record this device, so no notification could reach it; nothing was kept. Try again once the signer runs.",
        );
    }
    answer(
        outcome,
        "Notifications on",
        "This device will be notified when a proposal waits for a decision.",
    )
}

/// `POST /push/unsubscribe`: forget this browser's subscription.
pub(crate) async fn unsubscribe(
    State(state): State<Arc<ConsoleState>>,
    Authorized { session, .. }: Authorized,
) -> Response {
    let outcome = state.sessions.unsubscribe(&session.record.id);
    if let Ok(Ok(())) = outcome {
        crate::push_devices::published_or_later(&state).await;
    }
    answer(
        outcome,
        "Notifications off",
        "This device is no longer notified.",
    )
}

fn answer(
    outcome: Result<Result<(), SessionRefusal>, crate::sessions::StoreError>,
    heading: &str,
    message: &str,
) -> Response {
    match outcome {
        Ok(Ok(())) => {
            tracing::info!("{message}");
            html_response(
                StatusCode::OK,
                page(
                    heading,
                    None,
                    true,
                    notice(heading, message, Some(("/devices", "Back to the devices"))),
                ),
            )
        }
        Ok(Err(why)) => refusal(StatusCode::FORBIDDEN, &format!("{why}; nothing was kept.")),
        Err(e) => {
            tracing::error!(error = %e, "cannot change a session's push subscription");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be written; nothing was kept.",
            )
        }
    }
}
