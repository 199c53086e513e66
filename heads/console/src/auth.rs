//! Who may see and change anything: the API's Host/Origin/Sec-Fetch-Site
//! guards on every request, a paired session's cookie on every page but
//! pairing, and the session's CSRF token on every POST.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::ConsoleState;
use crate::html::{notice, page};
use crate::sessions::{SESSION_TTL, SessionRecord, SessionRefusal, csrf_matches, csrf_token};

/// The page a request gets instead of what it asked for (boxed: a
/// response is large, and the happy path should not carry its size).
pub(crate) type Rejection = Box<Response>;

/// The cookie that carries a paired browser's session secret.
pub(crate) const COOKIE_NAME: &str = "countersign_console";

/// A paired browser, authenticated for this request.
pub(crate) struct Paired {
    /// The session's record.
    pub(crate) record: SessionRecord,
    /// The CSRF token its forms carry.
    pub(crate) csrf: String,
    secret: String,
}

impl Paired {
    /// Refuses a form whose CSRF token is not this session's.
    pub(crate) fn check_csrf(&self, presented: Option<&str>) -> Result<(), Rejection> {
        match presented {
            Some(token) if csrf_matches(&self.secret, token) => Ok(()),
            _ => Err(Box::new(refusal(
                StatusCode::FORBIDDEN,
                "The form's CSRF token is missing or wrong; nothing was done. Reload the page and try again.",
            ))),
        }
    }
}

/// The session cookie's value, if exactly one was sent.
fn session_cookie(headers: &HeaderMap) -> Option<String> {
    let mut found = None;
    for value in headers.get_all(COOKIE) {
        let text = value.to_str().ok()?;
        for pair in text.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=')
                && name == COOKIE_NAME
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
    let cookie = session_cookie(headers);
    match state.sessions.authenticate(cookie.as_deref()) {
        Ok(Ok(record)) => {
            let secret = cookie.unwrap_or_default();
            Ok(Paired {
                record,
                csrf: csrf_token(&secret),
                secret,
            })
        }
        Ok(Err(why)) => Err(Box::new(unpaired(why))),
        Err(e) => {
            tracing::error!(error = %e, "the console session store failed");
            Err(Box::new(refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be read; see the console's log.",
            )))
        }
    }
}

/// The pairing page, for a browser without a valid session.
pub(crate) fn unpaired(why: SessionRefusal) -> Response {
    let body = html! {
        h1 { "Pair this browser" }
        p.message role="status" { (why.to_string()) "." }
        p { "A browser becomes trusted only through a one-time pairing link. At your terminal, run:" }
        pre.block { "countersign console pair" }
        p { "and open the link it prints in this browser, or paste its code here:" }
        form method="post" action="/pair" {
            label for="code" { "Pairing code" }
            input #code name="code" autocomplete="off" spellcheck="false" required;
            button type="submit" { "Pair" }
        }
    };
    let mut response = html_response(StatusCode::UNAUTHORIZED, page("Pair", None, false, body));
    if why != SessionRefusal::Invalid {
        clear_cookie(&mut response);
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

/// Set the session cookie: HttpOnly, SameSite=Strict, Path=/, Secure when
/// the console is served over TLS, and expiring with the session.
pub(crate) fn set_cookie(response: &mut Response, secret: &str, secure: bool) {
    let value = format!(
        "{COOKIE_NAME}={secret}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}{}",
        SESSION_TTL.whole_seconds(),
        if secure { "; Secure" } else { "" }
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().append(SET_COOKIE, value);
    }
}

/// Tell the browser to forget its session cookie.
pub(crate) fn clear_cookie(response: &mut Response) {
    response.headers_mut().append(
        SET_COOKIE,
        HeaderValue::from_static(
            "countersign_console=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        ),
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn exactly_one_session_cookie_is_read() {
        let mut h = HeaderMap::new();
        h.append(COOKIE, "a=1; countersign_console=x".parse().unwrap());
        assert_eq!(session_cookie(&h).as_deref(), Some("x"));
        h.append(COOKIE, "countersign_console=y".parse().unwrap());
        assert_eq!(session_cookie(&h), None);
        assert_eq!(session_cookie(&HeaderMap::new()), None);
    }
}
