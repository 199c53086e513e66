//! Turning one HTTP request into the flat parameter object of one data
//! operation, strictly: path parameters, then the query (only for `GET`,
//! only declared names, each once), then the body (only for `POST`,
//! `application/json`, at most [`crate::MAX_BODY_BYTES`], no duplicate
//! keys, only declared names), then the operation's JSON Schema.
//!
//! A proof is accepted only as the body's `proof` field: one anywhere in
//! the URL or a header is refused before anything else looks at it.
//! Messages name fields, never values.

use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{Method, header};
use countersign_registry::{Operation as RegistryOperation, Registry, terminal_safe};
use countersign_service::ParamsError;
use countersign_surface::operations::DataOperation;
use countersign_verifier::canonical::{self, CanonicalError};
use serde_json::{Map, Value};

use crate::respond::ApiError;

const PROOF_MARK: &str = "v4.public.";

/// A field name, safe and short enough for a message.
fn name(text: &str) -> String {
    let safe = terminal_safe(text);
    let mut cut: String = safe.chars().take(64).collect();
    if safe.chars().count() > 64 {
        cut.push('…');
    }
    format!("{cut:?}")
}

/// Refuse a proof or a bearer credential anywhere but where it belongs.
pub(crate) fn refuse_misplaced_secrets(parts: &Parts) -> Result<(), ApiError> {
    let target = parts
        .uri
        .path_and_query()
        .map(|pq| pq.as_str())
        .unwrap_or_default();
    let decoded = percent_decode(target).unwrap_or_else(|| target.to_string());
    let query_names_proof = parts.uri.query().is_some_and(|q| {
        q.split('&').any(|pair| {
            pair.split('=')
                .next()
                .is_some_and(|k| k.eq_ignore_ascii_case("proof"))
        })
    });
    if decoded.contains(PROOF_MARK) || query_names_proof {
        return Err(ApiError::BadRequest(
            "a proof travels only in the `proof` field of a JSON request body, never in a URL or query string; nothing was applied".into(),
        ));
    }
    if decoded.contains(crate::tokens::TOKEN_PREFIX) {
        return Err(ApiError::BadRequest(
            "a bearer credential travels only in the Authorization header, never in a URL".into(),
        ));
    }
    if parts
        .headers
        .values()
        .any(|v| String::from_utf8_lossy(v.as_bytes()).contains(PROOF_MARK))
    {
        return Err(ApiError::BadRequest(
            "a proof travels only in the `proof` field of a JSON request body, never in a header; nothing was applied".into(),
        ));
    }
    Ok(())
}

/// The parameter object of a request to a route whose path parameters are
/// `path` and whose parameter schema is `schema`.
pub(crate) async fn parameters(
    parts: &Parts,
    body: Body,
    path: &[(String, String)],
    schema: &Value,
) -> Result<Map<String, Value>, ApiError> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut params = Map::new();
    for (key, value) in path {
        if props.contains_key(key) {
            params.insert(key.clone(), Value::String(value.clone()));
        }
    }
    let declared = |key: &str| props.contains_key(key) && !path.iter().any(|(k, _)| k == key);
    if parts.method == Method::GET {
        for (key, value) in query_pairs(parts.uri.query().unwrap_or_default())? {
            if !declared(&key) {
                return Err(ApiError::BadRequest(format!(
                    "unknown query parameter {}",
                    name(&key)
                )));
            }
            if params.contains_key(&key) {
                return Err(ApiError::BadRequest(format!(
                    "query parameter {} appears more than once",
                    name(&key)
                )));
            }
            let typed = if props[&key]["type"] == "integer" {
                value
                    .parse::<i64>()
                    .ok()
                    .filter(|_| !value.starts_with('+'))
                    .map(Value::from)
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!(
                            "query parameter {} must be an integer",
                            name(&key)
                        ))
                    })?
            } else {
                Value::String(value)
            };
            params.insert(key, typed);
        }
    } else {
        if parts.uri.query().is_some_and(|q| !q.is_empty()) {
            return Err(ApiError::BadRequest(
                "this route takes no query parameters; send them in the JSON body".into(),
            ));
        }
        for (key, value) in body_object(parts, body).await? {
            if !declared(&key) {
                return Err(ApiError::BadRequest(format!(
                    "unknown field {}",
                    name(&key)
                )));
            }
            params.insert(key, value);
        }
    }
    Ok(params)
}

/// Check `params` against the operation's schema, compiled once in the
/// service; the message lists up to four problems, each as
/// `<path>: <message with values masked>`.
pub(crate) fn validate(
    service: &countersign_service::Service,
    registry: &Arc<Registry>,
    op: &DataOperation,
    registry_op: Option<&RegistryOperation>,
    params: &Map<String, Value>,
) -> Result<(), ApiError> {
    match service
        .schemas()
        .check(registry, op, registry_op, &Value::Object(params.clone()))
    {
        Ok(()) => Ok(()),
        Err(invalid @ ParamsError::Invalid(_)) => Err(ApiError::BadRequest(format!(
            "invalid parameters: {invalid}"
        ))),
        Err(fault @ ParamsError::Schema { .. }) => Err(ApiError::Internal(fault.to_string())),
    }
}

async fn body_object(parts: &Parts, body: Body) -> Result<Map<String, Value>, ApiError> {
    let limit = crate::MAX_BODY_BYTES;
    let declared_length = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared_length.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::PayloadTooLarge(limit));
    }
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| ApiError::PayloadTooLarge(limit))?;
    // No body, or only JSON whitespace (RFC 8259: space, tab, LF, CR), means
    // no parameters. `u8::is_ascii_whitespace` would also let a form feed
    // through, which is not JSON.
    if bytes
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        return Ok(Map::new());
    }
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::UnsupportedMediaType);
    }
    let value = canonical::parse(&bytes, limit).map_err(|e| {
        ApiError::BadRequest(match e {
            CanonicalError::DuplicateKey(key) => {
                format!("duplicate key {} in the body", name(&key))
            }
            other => format!("the body is not acceptable JSON: {other}"),
        })
    })?;
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::BadRequest(
            "the body must be a JSON object of the declared parameters".into(),
        )),
    }
}

/// `application/x-www-form-urlencoded`-style pairs, strictly decoded.
fn query_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    let mut pairs = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_decode(&s.replace('+', " ")).ok_or_else(|| {
                ApiError::BadRequest("the query string is not valid percent-encoded UTF-8".into())
            })
        };
        pairs.push((decode(k)?, decode(v)?));
    }
    Ok(pairs)
}

/// Percent-decode `text`; `None` for a bad escape or invalid UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_is_strict() {
        assert_eq!(percent_decode("a%20b").as_deref(), Some("a b"));
        assert_eq!(
            percent_decode("v4%2Epublic%2E").as_deref(),
            Some("v4.public.")
        );
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%+f"), None);
    }
}
