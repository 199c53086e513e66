//! Who may see and change anything: the API's Host/Origin/Sec-Fetch-Site
//! guards on every request, a paired session's cookie on every page but
//! pairing, and the session's page key on every POST and on every read of
//! a proposal, rule, device or passkey.
//!
//! The cookie is `__Host-countersign-<approver>` (Secure, HttpOnly,
//! SameSite=Strict, Path=/, no Domain), one per approver, so that two
//! approvers' consoles on one host never share or overwrite a session. A
//! browser still sends it to every port of the host (and, for
//! `*.localhost`, over plain http too), so it reads and decides nothing
//! alone: a change needs the page key in its form, and a read needs it in
//! the [`PAGE_KEY_HEADER`] header, which only the console's own script
//! sends (the key lives in this origin's storage, `sessions`). A
//! navigation, which carries the cookie only, gets [`shell`]: a page with
//! nothing in it but the script that fetches the page with the key.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::ConsoleState;
use crate::html::{notice, page};
use crate::sessions::{SESSION_TTL, SessionRecord, SessionRefusal, page_key_matches};

/// The page a request gets instead of what it asked for (boxed: a
/// response is large, and the happy path should not carry its size).
pub(crate) type Rejection = Box<Response>;

/// The form field that carries the page key.
pub(crate) const PAGE_KEY_FIELD: &str = "page_key";

/// The request header that carries the page key on a read (the console's
/// script sets it; a browser never sends it by itself).
pub(crate) const PAGE_KEY_HEADER: &str = "x-countersign-page-key";

/// What a read without a page key gets instead of the page: its script
/// fetches the page again with the key (`console.js`).
const SHELL_MESSAGE: &str = "This page is shown only to the console's own script, which sends this browser's page key with every request, so that a session cookie sent anywhere else reads nothing. Turn JavaScript on for this site.";

/// The name of the cookie that carries a paired browser's session secret
/// in the console of `approver`.
pub(crate) fn cookie_name(approver: &str) -> String {
    format!("__Host-countersign-{approver}")
}

/// A paired browser, authenticated for this request.
pub(crate) struct Paired {
    /// The session's record.
    pub(crate) record: SessionRecord,
}

impl Paired {
    /// Refuses a form (or a read, [`PAGE_KEY_HEADER`]) that does not carry
    /// this session's page key.
    pub(crate) fn check_page_key(&self, presented: Option<&str>) -> Result<(), Rejection> {
        match presented {
            Some(key) if page_key_matches(&self.record, key) => Ok(()),
            _ => Err(Box::new(refusal(
                StatusCode::FORBIDDEN,
                "This request does not carry the page key of this browser's pairing (only the console's own pages, with JavaScript on, hold it); nothing was done. If this browser's site data was cleared, pair it again with `countersign console pair`.",
            ))),
        }
    }
}

/// The value of the session cookie `name`, if exactly one was sent.
fn session_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    let mut found = None;
    for value in headers.get_all(COOKIE) {
        let text = value.to_str().ok()?;
        for pair in text.split(';') {
            if let Some((pair_name, value)) = pair.trim().split_once('=')
                && pair_name == name
            {
                if found.is_some() {
                    // Two session cookies (one planted by a sibling host,
                    // say): trust neither.
                    return None;
                }
                found = Some(value.to_owned());
            }
        }
    }
    found
}

/// The paired session of this request, or the page an unpaired browser
/// gets instead: only the pairing page, and nothing about proposals.
pub(crate) fn paired(state: &ConsoleState, headers: &HeaderMap) -> Result<Paired, Rejection> {
    let name = cookie_name(state.sessions.approver().as_str());
    let cookie = session_cookie(headers, &name);
    match state.sessions.authenticate(cookie.as_deref()) {
        Ok(Ok(record)) => Ok(Paired { record }),
        Ok(Err(why)) => Err(Box::new(unpaired(state, why))),
        Err(e) => {
            tracing::error!(error = %e, "the console session store failed");
            Err(Box::new(refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be read; see the console's log.",
            )))
        }
    }
}

/// The paired session of a read that shows a proposal, rule, device or
/// passkey: a navigation without the page key gets [`shell`], a request
/// with another key a refusal, an unpaired browser the pairing page.
pub(crate) fn reading(state: &ConsoleState, headers: &HeaderMap) -> Result<Paired, Rejection> {
    read_with(state, headers, shell)
}

/// [`reading`] for what only the console's script asks for (the live
/// list): without the page key, a refusal instead of the empty page.
pub(crate) fn reading_by_script(
    state: &ConsoleState,
    headers: &HeaderMap,
) -> Result<Paired, Rejection> {
    read_with(state, headers, || {
        refusal(
            StatusCode::FORBIDDEN,
            "The live list is sent only to the console's own script, with this browser's page key; nothing was sent.",
        )
    })
}

/// The paired session (the store read once), then its page key in
/// [`PAGE_KEY_HEADER`]: `missing` answers a request without one.
fn read_with(
    state: &ConsoleState,
    headers: &HeaderMap,
    missing: fn() -> Response,
) -> Result<Paired, Rejection> {
    let session = paired(state, headers)?;
    let mut presented = headers.get_all(PAGE_KEY_HEADER).iter();
    match (presented.next(), presented.next()) {
        (None, _) => Err(Box::new(missing())),
        (Some(key), None) => {
            session.check_page_key(key.to_str().ok())?;
            Ok(session)
        }
        (Some(_), Some(_)) => session.check_page_key(None).map(|()| session),
    }
}

/// The page a navigation gets: nothing of the console's state, and the
/// script that loads the page with the key (or, without JavaScript, why
/// it cannot be read).
pub(crate) fn shell() -> Response {
    let body = html! {
        p #load role="status" { "Loading…" }
        noscript { p.message { (SHELL_MESSAGE) } }
    };
    html_response(StatusCode::OK, page("Loading", None, false, body))
}

/// The pairing page, for a browser without a valid session.
pub(crate) fn unpaired(state: &ConsoleState, why: SessionRefusal) -> Response {
    let approver = state.sessions.approver().as_str();
    let command = if approver == countersign_identity::DEV_NAMED_APPROVERS[0] {
        "countersign console pair".to_owned()
    } else {
        format!("countersign console pair --as {approver}")
    };
    let body = html! {
        h1 { "Pair this browser" }
        p.message role="status" { (why.to_string()) "." }
        p { "A browser becomes trusted only through a one-time pairing link. At your terminal, run:" }
        pre.block { (command) }
        p { "and open the link it prints in this browser, or paste its code here:" }
        form method="post" action="/pair" {
            label for="code" { "Pairing code" }
            input #code name="code" autocomplete="off" spellcheck="false" required;
            button type="submit" { "Pair" }
        }
    };
    let mut response = html_response(StatusCode::UNAUTHORIZED, page("Pair", None, false, body));
    if why != SessionRefusal::Invalid {
        clear_cookie(&mut response, approver);
    }
    response
}

/// A page that says what was refused.
pub(crate) fn refusal(status: StatusCode, message: &str) -> Response {
    html_response(
        status,
        page(
            "Refused",
            None,
            false,
            notice("Refused", message, Some(("/", "Back to the console"))),
        ),
    )
}

/// An HTML response with `status`.
pub(crate) fn html_response(status: StatusCode, markup: maud::Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Set the session cookie of `approver`'s console: `__Host-` (Secure,
/// Path=/, no Domain), HttpOnly, SameSite=Strict, expiring with the session.
pub(crate) fn set_cookie(response: &mut Response, approver: &str, secret: &str) {
    let value = format!(
        "{}={secret}; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        cookie_name(approver),
        SESSION_TTL.whole_seconds(),
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().append(SET_COOKIE, value);
    }
}

/// Tell the browser to forget the session cookie of `approver`'s console.
pub(crate) fn clear_cookie(response: &mut Response, approver: &str) {
    let value = format!(
        "{}=; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        cookie_name(approver)
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().append(SET_COOKIE, value);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn exactly_one_session_cookie_of_this_approver_is_read() {
        let name = cookie_name("alice");
        let mut h = HeaderMap::new();
        h.append(
            COOKIE,
            "a=1; __Host-countersign-bob=z; __Host-countersign-alice=x"
                .parse()
                .unwrap(),
        );
        assert_eq!(session_cookie(&h, &name).as_deref(), Some("x"));
        assert_eq!(
            session_cookie(&h, &cookie_name("bob")).as_deref(),
            Some("z")
        );
        h.append(COOKIE, "__Host-countersign-alice=y".parse().unwrap());
        assert_eq!(session_cookie(&h, &name), None);
        assert_eq!(session_cookie(&HeaderMap::new(), &name), None);
    }
}
