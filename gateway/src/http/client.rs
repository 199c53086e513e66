//! rmcp's [`StreamableHttpClient`] over [`HttpClient`]: the requests of the
//! streamable HTTP transport (POST a message, GET the server's stream,
//! DELETE the session) and the reading of their answers, bounded.
//!
//! This module owns the mapping between HTTP and the transport's answers.
//! It must not send anywhere but the configured URL (a request for another
//! URI is refused unsent) and must not read an unbounded body or event.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use tokio_stream::{Stream, StreamExt as _};

use super::{HttpClient, HttpError};

type Answer<T> = Result<T, StreamableHttpError<HttpError>>;
type SseItems = std::pin::Pin<Box<dyn Stream<Item = Result<Sse, sse_stream::Error>> + Send>>;

/// Headers the transport may not set itself: this client sets them.
const RESERVED: [&str; 8] = [
    "host",
    "authorization",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "accept",
    "mcp-session-id",
];
/// The largest SSE event read, in bytes (rmcp's own default).
const MAX_SSE_EVENT: usize = 16 * 1024 * 1024;
/// The most of an error body quoted, in bytes.
const MAX_ERROR_QUOTE: usize = 1024;

fn client_error(error: HttpError) -> StreamableHttpError<HttpError> {
    StreamableHttpError::Client(error)
}

impl HttpClient {
    /// A request to the configured URL with the headers every request has.
    fn request(
        &self,
        method: Method,
        uri: &str,
        bearer: Option<String>,
        session: Option<&str>,
        custom: HashMap<HeaderName, HeaderValue>,
    ) -> Answer<hyper::http::request::Builder> {
        if uri != self.shared.uri {
            return Err(client_error(HttpError::NotSent(
                "the transport asked for another URL than the configured one".into(),
            )));
        }
        let mut builder = Request::builder()
            .method(method)
            .uri(self.shared.url.path_and_query())
            .header(header::HOST, self.shared.host.clone())
            .header(
                header::ACCEPT,
                format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
            );
        if let Some(token) = bearer {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                client_error(HttpError::NotSent(
                    "the bearer file is not a valid header value".into(),
                ))
            })?;
            value.set_sensitive(true);
            builder = builder.header(header::AUTHORIZATION, value);
        }
        if let Some(session) = session {
            builder = builder.header(HEADER_SESSION_ID, session);
        }
        for (name, value) in custom {
            if RESERVED.contains(&name.as_str()) {
                return Err(StreamableHttpError::ReservedHeaderConflict(
                    name.to_string(),
                ));
            }
            builder = builder.header(name, value);
        }
        Ok(builder)
    }

    async fn exchange(
        &self,
        builder: hyper::http::request::Builder,
        body: Bytes,
    ) -> Answer<Response<Incoming>> {
        let request = builder
            .body(Full::new(body))
            .map_err(|e| client_error(HttpError::NotSent(e.to_string())))?;
        self.send(request).await.map_err(client_error)
    }
}

fn media_type_is(value: Option<&HeaderValue>, expected: &str) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(expected))
}

/// The whole body, at most `limit` bytes; a longer or broken one is an
/// exchange error (the request was sent).
async fn read_body(body: Incoming, limit: usize) -> Answer<Bytes> {
    Limited::new(body, limit)
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(|e| client_error(HttpError::Exchange(format!("reading the answer: {e}"))))
}

/// The events of an SSE body, each at most [`MAX_SSE_EVENT`] bytes.
fn sse_events(body: Incoming, max_event: usize) -> SseItems {
    let mut since_blank_line = 0usize;
    let mut line_empty = true;
    let bytes = body.into_data_stream().map(move |chunk| {
        let chunk = chunk.map_err(|e| EventError(e.to_string()))?;
        for byte in chunk.iter() {
            match *byte {
                b'\n' if line_empty => since_blank_line = 0,
                b'\n' => line_empty = true,
                b'\r' => {}
                _ => line_empty = false,
            }
            since_blank_line += 1;
            if since_blank_line > max_event {
                return Err(EventError(format!(
                    "an event is larger than {max_event} bytes"
                )));
            }
        }
        Ok(chunk)
    });
    Box::pin(SseStream::from_bytes_stream(bytes))
}

/// Why an SSE body stopped.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct EventError(String);

fn unexpected(status: StatusCode, body: &[u8]) -> StreamableHttpError<HttpError> {
    let quoted = String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_QUOTE)]);
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!("HTTP {status}: {quoted}")))
}

impl StreamableHttpClient for HttpClient {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Answer<StreamableHttpPostResponse> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Answer<StreamableHttpPostResponse> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Answer<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)
            .map_err(|e| client_error(HttpError::NotSent(e.to_string())))?;
        let builder = self
            .request(
                Method::POST,
                &uri,
                auth_token,
                session_id.as_deref(),
                custom_headers,
            )?
            .header(header::CONTENT_TYPE, JSON_MIME_TYPE);
        let response = self.exchange(builder, Bytes::from(body)).await?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        let session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        let is_json = media_type_is(content_type.as_ref(), JSON_MIME_TYPE);
        if !status.is_success() {
            let body = read_body(response.into_body(), limits.max_json_response_size).await?;
            // A JSON-RPC error answer (e.g. 400 with an error object) is the
            // upstream's answer to the request, not a transport failure.
            if is_json
                && let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            return Err(unexpected(status, &body));
        }
        if media_type_is(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            let events = sse_events(response.into_body(), limits.max_sse_event_size);
            return Ok(StreamableHttpPostResponse::Sse(events, session));
        }
        if is_json {
            let body = read_body(response.into_body(), limits.max_json_response_size).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, session)),
                Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                    format!("the answer is not a JSON-RPC message: {e}"),
                ))),
            };
        }
        if awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(StreamableHttpError::UnexpectedContentType(
            content_type.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Answer<()> {
        let builder = self.request(
            Method::DELETE,
            &uri,
            auth_token,
            Some(&session_id),
            custom_headers,
        )?;
        let response = self.exchange(builder, Bytes::new()).await?;
        let status = response.status();
        // Draining the (small) body lets the connection be reused.
        let body = read_body(response.into_body(), MAX_ERROR_QUOTE * 64).await?;
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(unexpected(status, &body))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Answer<SseItems> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            MAX_SSE_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Answer<SseItems> {
        let mut builder = self.request(
            Method::GET,
            &uri,
            auth_token,
            session_id.as_deref(),
            custom_headers,
        )?;
        if let Some(last) = last_event_id {
            builder = builder.header(HEADER_LAST_EVENT_ID, last);
        }
        let response = self.exchange(builder, Bytes::new()).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            let body = read_body(response.into_body(), MAX_ERROR_QUOTE)
                .await
                .unwrap_or_default();
            return Err(unexpected(status, &body));
        }
        let content_type = response.headers().get(header::CONTENT_TYPE).cloned();
        if !media_type_is(content_type.as_ref(), EVENT_STREAM_MIME_TYPE) {
            return Err(StreamableHttpError::UnexpectedContentType(
                content_type.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
            ));
        }
        Ok(sse_events(response.into_body(), max_sse_event_size))
    }
}
