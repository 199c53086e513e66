//! `POST /v1/hooks/claude-code`: Claude Code's `type: "http"` hook, on the
//! API head. Claude Code posts the same JSON a command hook reads on stdin
//! and reads the answer from the response body, as a command hook's
//! stdout (a 2xx with an empty body is "no opinion"; any other status is a
//! failed hook, which `onFailure: "block"` turns into a block).
//!
//! The request needs an API credential like every data route; the call is
//! proposed in the agent's session (`claude-code:<session id>`), waited
//! for up to `?wait_secs=N` (default 300, at most 3600; this route has no
//! 30-second limit), and answered through the service's one hook flow
//! ([`countersign_service::hook`]). An input that does not parse, is larger
//! than [`MAX_INPUT_BYTES`] or cannot be read is a deny in Claude Code's
//! shape with status 200, as the command hook answers it, never an error
//! status: an agent that treats a failed hook as "no opinion" would run the
//! call with nobody asked.
//!
//! Must not: run the call, or answer anything but Claude Code's hook.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use countersign_hook::{Agent, Answer, MAX_INPUT_BYTES, Rendered, render};
use countersign_service::hook::{DEFAULT_WAIT, answer};
use http_body_util::BodyExt as _;
use serde_json::json;

use crate::ApiState;
use crate::request;
use crate::respond::ApiError;
use crate::routes;

/// The route of Claude Code's http hook.
pub(crate) const CLAUDE_CODE_HOOK_PATH: &str = "/v1/hooks/claude-code";

/// The most bytes of a body read at all (what is over [`MAX_INPUT_BYTES`] is
/// dropped as it is read); past this the deny is sent without reading on.
const MAX_DRAINED_BYTES: usize = 16 * MAX_INPUT_BYTES;

/// The longest wait a request may ask for, in seconds.
const MAX_WAIT_SECS: u64 = 3600;

/// Answer one Claude Code hook call.
pub(crate) async fn claude_code(State(state): State<Arc<ApiState>>, req: Request) -> Response {
    match respond(&state, req).await {
        Ok(response) => response,
        Err(e) => e.into_response(),
    }
}

async fn respond(state: &ApiState, req: Request) -> Result<Response, ApiError> {
    let (parts, body): (_, Body) = req.into_parts();
    request::refuse_misplaced_secrets(&parts)?;
    routes::authenticate(state, &parts.headers)?;
    let wait = wait_of(parts.uri.query())?;
    let rendered = match read_input(body).await {
        Err(e) => render(
            Agent::ClaudeCode,
            None,
            &Answer::deny(format!("countersign could not read the hook input: {e}")),
        ),
        Ok(bytes) => match countersign_hook::parse(Agent::ClaudeCode, &bytes) {
            Err(e) => countersign_hook::refusal(Agent::ClaudeCode, &e),
            Ok(call) => {
                let gate = state.parts.gate.clone().answering_hooks();
                let mut head = state.parts.head.clone();
                let answered = answer(&mut head, async || Ok(gate), &call, wait, || {}).await;
                render(Agent::ClaudeCode, Some(call.event()), &answered)
            }
        },
    };
    Ok(body_of(&rendered))
}

/// The body, cut to one byte more than [`MAX_INPUT_BYTES`] (so that the
/// parse refuses it as too large, in the command hook's words); the rest
/// is read and dropped, up to [`MAX_DRAINED_BYTES`], so that the client,
/// still writing, reads the deny rather than a reset connection.
async fn read_input(mut body: Body) -> Result<Vec<u8>, axum::Error> {
    let keep = MAX_INPUT_BYTES.saturating_add(1);
    let mut bytes = Vec::new();
    let mut seen = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers carry no input
        };
        let room = keep.saturating_sub(bytes.len());
        bytes.extend_from_slice(&data[..data.len().min(room)]);
        seen = seen.saturating_add(data.len());
        if seen > MAX_DRAINED_BYTES {
            break;
        }
    }
    Ok(bytes)
}

/// `?wait_secs=N`, or the default wait.
fn wait_of(query: Option<&str>) -> Result<Duration, ApiError> {
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        return Ok(DEFAULT_WAIT);
    };
    let bad = || {
        ApiError::BadRequest(format!(
            "the query must be wait_secs=N, 1 to {MAX_WAIT_SECS}"
        ))
    };
    let secs = query
        .strip_prefix("wait_secs=")
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| (1..=MAX_WAIT_SECS).contains(n))
        .ok_or_else(bad)?;
    Ok(Duration::from_secs(secs))
}

/// A command hook's answer as an http hook's response: its stdout as the
/// body; its exit-2 deny (stderr, for an event it could not read) as the
/// decision `block` with that reason, which is how an http hook blocks.
fn body_of(rendered: &Rendered) -> Response {
    let body = match rendered.exit_code {
        0 => rendered.stdout.clone(),
        _ => json!({"decision": "block", "reason": rendered.stderr.trim_end()}).to_string(),
    };
    let empty = body.is_empty();
    let mut response = (StatusCode::OK, body).into_response();
    if !empty {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_is_bounded_and_anything_else_in_the_query_is_refused() {
        assert_eq!(wait_of(None).ok(), Some(DEFAULT_WAIT));
        assert_eq!(
            wait_of(Some("wait_secs=5")).ok(),
            Some(Duration::from_secs(5))
        );
        for bad in [
            "wait_secs=0",
            "wait_secs=3601",
            "wait=5",
            "wait_secs=5&x=1",
            "token=abc",
        ] {
            assert!(wait_of(Some(bad)).is_err(), "{bad}");
        }
    }
}
