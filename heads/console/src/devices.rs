//! Paired devices: the browsers paired with this console, as a person sees
//! them (a name, when each was paired and last used), and unpairing one.
//!
//! A device is a session of the store (`sessions`). Its name is given once,
//! at pairing, from the User-Agent the browser sent, and only from a fixed
//! vocabulary ("Chrome on Android", "Safari on iPhone"): the store keeps no
//! User-Agent text, and no text a browser chose is ever shown. The name is
//! not editable; two devices of the same kind are told apart by when they
//! were paired and last used, and by their id. A User-Agent can say
//! anything, so the name is a hint to the person, never a credential.
//!
//! Unpairing is a POST with the page key, like every change; it ends the
//! session (that browser sees only the pairing page from its next request
//! on, and its live list stops at the next change), and only a session of
//! this console's own approver can be unpaired here.
//!
//! Must not: show or store anything a browser wrote; unpair anything but
//! an active session of this console's approver.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use countersign_http::secrets::CredentialStatus;
use maud::{Markup, html};
use time::OffsetDateTime;

use crate::ConsoleState;
use crate::actions::Authorized;
use crate::auth::{clear_cookie, html_response, refusal};
use crate::html::{notice, page, page_key_field};
use crate::sessions::{SessionRecord, UNKNOWN_DEVICE, UnpairRefusal};
use crate::views::age;

/// The name of the device that sent `user_agent`: "`<browser>` on
/// `<system>`", each from a fixed list (the order matters: Edge, Opera and
/// Samsung Internet also say "Chrome", and every Chromium says "Safari").
pub(crate) fn name_from_user_agent(user_agent: Option<&str>) -> String {
    let ua = user_agent.unwrap_or_default();
    let has = |token: &str| ua.contains(token);
    let browser = if has("Edg/") || has("EdgA/") || has("EdgiOS/") {
        Some("Edge")
    } else if has("SamsungBrowser/") {
        Some("Samsung Internet")
    } else if has("OPR/") || has("OPiOS/") {
        Some("Opera")
    } else if has("Firefox/") || has("FxiOS/") {
        Some("Firefox")
    } else if has("HeadlessChrome/") {
        Some("Headless Chrome")
    } else if has("Chrome/") || has("CriOS/") || has("Chromium/") {
        Some("Chrome")
    } else if has("Safari/") && has("Version/") {
        Some("Safari")
    } else {
        None
    };
    let system = if has("Android") {
        Some("Android")
    } else if has("iPhone") {
        Some("iPhone")
    } else if has("iPad") {
        Some("iPad")
    } else if has("CrOS") {
        Some("ChromeOS")
    } else if has("Macintosh") || has("Mac OS X") {
        Some("macOS")
    } else if has("Windows") {
        Some("Windows")
    } else if has("Linux") {
        Some("Linux")
    } else {
        None
    };
    match (browser, system) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_owned(),
        (None, Some(s)) => format!("A browser on {s}"),
        (None, None) => UNKNOWN_DEVICE.to_owned(),
    }
}

/// `GET /devices`: the browsers paired with this console, each with a way
/// to unpair it.
pub(crate) async fn page_of_devices(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
) -> Response {
    let here = match crate::auth::reading(&state, &headers) {
        Ok(session) => session.record,
        Err(page) => return *page,
    };
    let now = OffsetDateTime::now_utc();
    let mut devices: Vec<SessionRecord> = match state.sessions.list() {
        Ok(list) => list
            .into_iter()
            .filter(|r| r.status(now) == CredentialStatus::Active)
            .collect(),
        Err(e) => {
            tracing::error!(error = %e, "the console session store failed");
            return refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be read; see the console's log.",
            );
        }
    };
    // This browser first, then the most recently paired.
    devices.sort_by(|a, b| {
        (b.id == here.id)
            .cmp(&(a.id == here.id))
            .then_with(|| b.created_at.cmp(&a.created_at))
    });
    let body = html! {
        h1 { "Paired devices" }
        p {
            "The browsers that can see and decide in this console (approver "
            code { (state.sessions.approver().as_str()) } "). Unpairing one ends its session: from its next request it sees only the pairing page. "
            "A name says which browser and system it was paired from, as that browser described itself."
        }
        ul #devices.items {
            @for d in &devices {
                (device(d, d.id == here.id))
            }
        }
        (crate::push::section(&state, &here))
    };
    html_response(StatusCode::OK, page("Devices", None, true, body))
}

/// One device of the list.
fn device(d: &SessionRecord, this_browser: bool) -> Markup {
    let name = d.device_name();
    let heading = format!("device-{}", d.id);
    html! {
        li.device data-session=(d.id) aria-labelledby=(heading) {
            strong #(heading) { (name) @if this_browser { " (this browser)" } }
            div.meta {
                "Paired " time datetime=(d.created_at) { (age(&d.created_at)) }
                ", last used "
                @match &d.last_used_at {
                    Some(t) => time.last-used datetime=(t) { (age(t)) },
                    None => span.last-used { "not since pairing" },
                }
                ", paired until " time datetime=(d.expires_at) { (d.expires_at) }
                ". Id " code { (d.id) } "."
                @if d.push.is_some() { " Notified by push." }
            }
            form method="post" action={ "/devices/" (d.id) "/unpair" } {
                (page_key_field())
                button.deny type="submit" {
                    @if this_browser { "Unpair this browser" } @else {
                        "Unpair " span.visually-hidden { (name) " (" (d.id) ")" }
                    }
                }
            }
        }
    }
}

/// `POST /devices/{id}/unpair`: end that device's session.
pub(crate) async fn unpair(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { session, .. }: Authorized,
) -> Response {
    match state.sessions.unpair(&id) {
        Ok(Ok(record)) => {
            tracing::info!(session = %record.id, "a browser was unpaired from the console");
            crate::push_devices::published_or_later(&state).await;
            if record.id == session.record.id {
                return unpaired_here(&state, record.device_name());
            }
            let message = format!(
                "{} ({}) is no longer paired: its session has ended, and from its next request that browser sees only the pairing page.",
                record.device_name(),
                record.id
            );
            html_response(
                StatusCode::OK,
                page(
                    "Unpaired",
                    None,
                    true,
                    notice(
                        "Unpaired",
                        &message,
                        Some(("/devices", "Back to the devices")),
                    ),
                ),
            )
        }
        Ok(Err(why)) => {
            let status = match why {
                UnpairRefusal::Unknown => StatusCode::NOT_FOUND,
                UnpairRefusal::Ended => StatusCode::CONFLICT,
            };
            refusal(status, &format!("{why}; nothing was done."))
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot unpair a console session");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be written; nothing was unpaired.",
            )
        }
    }
}

/// The page this browser gets once its own session ended: it forgets its
/// page key and its cookie.
pub(crate) fn unpaired_here(state: &ConsoleState, name: &str) -> Response {
    let body = html! {
        div #forget-page-key hidden {}
        (notice("Unpaired", &format!("This browser ({name}) is no longer paired."), Some(("/", "Pair it again"))))
    };
    let mut response = html_response(StatusCode::OK, page("Unpaired", None, false, body));
    clear_cookie(&mut response, state.sessions.approver().as_str());
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_named_from_a_fixed_vocabulary() {
        for (ua, name) in [
            (
                "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36",
                "Chrome on Android",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1",
                "Safari on iPhone",
            ),
            (
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/156.0 Mobile/15E148 Safari/604.1",
                "Chrome on iPhone",
            ),
            (
                "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15",
                "Safari on macOS",
            ),
            (
                "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36 Edg/156.0.0.0",
                "Edge on Windows",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0",
                "Firefox on Linux",
            ),
            (
                "Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/27.0 Chrome/125.0.0.0 Mobile Safari/537.36",
                "Samsung Internet on Android",
            ),
            (
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36",
                "Headless Chrome on Linux",
            ),
            ("curl/8.9.1", UNKNOWN_DEVICE),
            ("", UNKNOWN_DEVICE),
            // Whatever else a User-Agent says is never part of the name.
            (
                "<script>alert(1)</script> Firefox/1 \u{202e}Android",
                "Firefox on Android",
            ),
        ] {
            assert_eq!(name_from_user_agent(Some(ua)), name, "{ua}");
        }
        assert_eq!(name_from_user_agent(None), UNKNOWN_DEVICE);
    }
}
