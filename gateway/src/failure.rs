//! Why a request to an upstream has no answer, in the gate's terms
//! ([`CallFailure`]) and the listing's ([`UpstreamError`]).
//!
//! This module owns the one decision the gate's uncertainty rests on:
//! whether a failed call can have reached the upstream. Only what proves
//! the request never left is `NotSent`; a JSON-RPC error answer is
//! `Rejected`; everything else after the request was queued is
//! `Unanswered`. It must not turn an uncertain failure into a certain one.

use countersign_gate::mcp::CallFailure;
use rmcp::ServiceError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use crate::UpstreamError;
use crate::http::HttpError;

/// How an upstream is reached, for what a send error proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A child's stdin: a failed write means the child never read a whole
    /// message (its end of the pipe is gone).
    Stdio,
    /// HTTP: a failed send proves nothing unless the client says so.
    Http,
}

/// True when `error` (a transport send error) proves nothing was sent.
fn proves_not_sent(kind: Kind, error: &(dyn std::error::Error + 'static)) -> bool {
    match kind {
        Kind::Stdio => true,
        Kind::Http => {
            let mut source = Some(error);
            while let Some(current) = source {
                if let Some(StreamableHttpError::Client(http)) =
                    current.downcast_ref::<StreamableHttpError<HttpError>>()
                {
                    return matches!(http, HttpError::NotSent(_));
                }
                if let Some(http) = current.downcast_ref::<HttpError>() {
                    return matches!(http, HttpError::NotSent(_));
                }
                source = current.source();
            }
            false
        }
    }
}

/// The failure of a tools/call that was queued on the session.
pub(crate) fn call_failure(upstream: &str, kind: Kind, error: ServiceError) -> CallFailure {
    match error {
        ServiceError::McpError(error) => CallFailure::Rejected(format!(
            "upstream {upstream:?} answered with error {}: {}",
            error.code.0, error.message
        )),
        ServiceError::TransportSend(error) if proves_not_sent(kind, error.error.as_ref()) => {
            CallFailure::NotSent(format!("upstream {upstream:?}: {}", error.error))
        }
        ServiceError::Timeout { timeout } => CallFailure::Unanswered(format!(
            "upstream {upstream:?} did not answer within {timeout:?}"
        )),
        other => CallFailure::Unanswered(format!(
            "upstream {upstream:?} may have received the call: {other}"
        )),
    }
}

/// The failure of a tools/list.
pub(crate) fn list_error(upstream: &str, error: ServiceError) -> UpstreamError {
    match error {
        ServiceError::McpError(error) => UpstreamError::Protocol {
            upstream: upstream.to_owned(),
            reason: format!(
                "tools/list answered error {}: {}",
                error.code.0, error.message
            ),
        },
        ServiceError::UnexpectedResponse => UpstreamError::Protocol {
            upstream: upstream.to_owned(),
            reason: "tools/list answered something else than a tool list".into(),
        },
        other => UpstreamError::Unavailable {
            upstream: upstream.to_owned(),
            reason: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorCode, ErrorData};
    use rmcp::transport::DynamicTransportError;

    use super::*;

    fn send_error(error: Box<dyn std::error::Error + Send + Sync>) -> ServiceError {
        ServiceError::TransportSend(DynamicTransportError::from_parts(
            "test",
            std::any::TypeId::of::<()>(),
            error,
        ))
    }

    #[test]
    fn a_json_rpc_error_answer_is_rejected() {
        let error = ServiceError::McpError(ErrorData::new(
            ErrorCode::INVALID_PARAMS,
            "Tool nope not found",
            None,
        ));
        assert_eq!(
            call_failure("files", Kind::Stdio, error),
            CallFailure::Rejected(
                "upstream \"files\" answered with error -32602: Tool nope not found".into()
            )
        );
    }

    #[test]
    fn an_http_failure_after_sending_is_unanswered_and_before_is_not_sent() {
        let after = send_error(Box::new(StreamableHttpError::Client(HttpError::Exchange(
            "reset".into(),
        ))));
        assert!(matches!(
            call_failure("web", Kind::Http, after),
            CallFailure::Unanswered(_)
        ));
        let before = send_error(Box::new(StreamableHttpError::Client(HttpError::NotSent(
            "refused".into(),
        ))));
        assert!(matches!(
            call_failure("web", Kind::Http, before),
            CallFailure::NotSent(_)
        ));
        let unknown = send_error("something".into());
        assert!(matches!(
            call_failure("web", Kind::Http, unknown),
            CallFailure::Unanswered(_)
        ));
    }

    #[test]
    fn a_closed_session_while_waiting_is_unanswered() {
        assert!(matches!(
            call_failure("files", Kind::Stdio, ServiceError::TransportClosed),
            CallFailure::Unanswered(_)
        ));
    }
}
