//! Screening of the raw MCP frames a client sends, before the MCP SDK sees
//! them: each line goes through the verifier's strict canonical parser, so
//! that duplicate keys, non-finite or unrepresentable numbers, lone
//! surrogates and excessive nesting are refused with their own error while
//! the original text still exists (a `serde_json::Value` built by the SDK
//! has already kept the last of two duplicate keys).
//!
//! Owns: the decision, per frame, to pass it on, answer it with a JSON-RPC
//! error, or drop it (a notification gets no answer), and the text of those
//! answers. Must not: hand the SDK a frame the strict parser refused, leave
//! a request with a readable id unanswered, or echo a frame's values in an
//! answer (messages name what is wrong, never what was sent).

use countersign_verifier::canonical::{self, CanonicalError};
use rmcp::RoleServer;
use rmcp::model::ErrorCode;
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};

/// The largest frame (one line) accepted, as the MCP SDK's own stdio
/// transport: 16 MiB.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// How deep a `tools/call` frame encloses an operation's arguments (the
/// frame, `params`, the tool's arguments): the strict parser allows the
/// arguments the same depth as on the CLI and the API.
const ENVELOPE_DEPTH: usize = 3;

/// What to do with one frame.
#[derive(Debug)]
pub enum Screened {
    /// Strict JSON and a JSON-RPC message: pass it to the MCP SDK.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Refused: write this JSON-RPC error response, pass nothing on.
    Answer(Value),
    /// Refused or empty, and nothing to answer (a blank line, or a
    /// notification, which JSON-RPC never answers).
    Ignore,
}

/// Screen one frame: a line without its `\n` (a trailing `\r` and a leading
/// UTF-8 byte order mark are ignored, as the MCP SDK ignores them).
pub fn screen_frame(line: &[u8]) -> Screened {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Screened::Ignore;
    }
    if let Err(refusal) = canonical::parse_enclosing(line, MAX_FRAME_BYTES, ENVELOPE_DEPTH) {
        return refused(line, &refusal);
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => Screened::Message(Box::new(message)),
        // Strict JSON that is not a message the SDK knows: a request is
        // answered, a notification (an unknown one, say) is dropped, as the
        // SDK drops it.
        Err(_) => match members(line) {
            Some(members) if !has(&members, "id") => Screened::Ignore,
            members => Screened::Answer(error_response(
                members.and_then(|m| request_id(line, &m)),
                ErrorCode::INVALID_REQUEST,
                "invalid request: not a JSON-RPC request, notification or response that this server understands",
            )),
        },
    }
}

/// The answer to a line longer than [`MAX_FRAME_BYTES`] (its id is not read).
pub(crate) fn oversized_answer() -> Value {
    error_response(
        None,
        ErrorCode::INVALID_REQUEST,
        &CanonicalError::TooLarge {
            limit: MAX_FRAME_BYTES,
        }
        .to_string(),
    )
}

/// A frame the strict parser refused: text that is not JSON is a parse
/// error (id null); JSON the strict parser refuses (a duplicate key, `1e400`,
/// a lone surrogate, too deep) is answered with its own message and the
/// request's id, as invalid params when the refusal is inside `params`.
fn refused(line: &[u8], refusal: &CanonicalError) -> Screened {
    let not_json = matches!(
        refusal,
        CanonicalError::Syntax { .. } | CanonicalError::Trailing | CanonicalError::InvalidUtf8
    );
    let members = members(line);
    let Some(members) = members.filter(|_| !not_json) else {
        return Screened::Answer(error_response(
            None,
            ErrorCode::PARSE_ERROR,
            &format!("parse error: {refusal}"),
        ));
    };
    if !has(&members, "id") {
        tracing::debug!("dropped a notification the strict parser refused: {refusal}");
        return Screened::Ignore;
    }
    let in_params = members.iter().any(|(key, span)| {
        key.as_deref() == Some("params")
            && canonical::parse_enclosing(&line[span.clone()], MAX_FRAME_BYTES, ENVELOPE_DEPTH - 1)
                .is_err()
    });
    let code = if in_params {
        ErrorCode::INVALID_PARAMS
    } else {
        ErrorCode::INVALID_REQUEST
    };
    Screened::Answer(error_response(
        request_id(line, &members),
        code,
        &refusal.to_string(),
    ))
}

/// A JSON-RPC 2.0 error response (`id` null when it could not be read).
fn error_response(id: Option<Value>, code: ErrorCode, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code.0, "message": message},
    })
}

/// One top-level member: its key (`None` if the key does not decode) and
/// the byte range of its value.
type Member = (Option<String>, std::ops::Range<usize>);

fn has(members: &[Member], key: &str) -> bool {
    members.iter().any(|(k, _)| k.as_deref() == Some(key))
}

/// The request's id, if it has exactly one that is a string or an integer.
fn request_id(text: &[u8], members: &[Member]) -> Option<Value> {
    let mut ids = members.iter().filter(|(k, _)| k.as_deref() == Some("id"));
    let (_, span) = ids.next()?;
    if ids.next().is_some() {
        return None;
    }
    let id: Value = serde_json::from_slice(text.get(span.clone())?).ok()?;
    (id.is_string() || id.is_i64() || id.is_u64()).then_some(id)
}

/// The members of a top-level JSON object, found by a lenient scan that
/// never recurses (so 10,000 levels of nesting cost nothing) and checks
/// only the structure: strings, brackets, colons and commas. `None` if the
/// text is not shaped like an object.
fn members(text: &[u8]) -> Option<Vec<Member>> {
    let mut scan = Scan { text, pos: 0 };
    let mut members = Vec::new();
    scan.ws();
    scan.eat(b'{')?;
    scan.ws();
    if scan.eat(b'}').is_some() {
        return scan.end().map(|()| members);
    }
    loop {
        scan.ws();
        let key_start = scan.pos;
        scan.string()?;
        let key = serde_json::from_slice::<String>(&text[key_start..scan.pos]).ok();
        scan.ws();
        scan.eat(b':')?;
        scan.ws();
        let start = scan.pos;
        scan.value()?;
        members.push((key, start..scan.pos));
        scan.ws();
        match scan.next()? {
            b',' => {}
            b'}' => return scan.end().map(|()| members),
            _ => return None,
        }
    }
}

struct Scan<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Scan<'_> {
    fn next(&mut self) -> Option<u8> {
        let byte = *self.text.get(self.pos)?;
        self.pos += 1;
        Some(byte)
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.text.get(self.pos) == Some(&byte)).then(|| self.pos += 1)
    }

    fn ws(&mut self) {
        while self.text.get(self.pos).is_some_and(u8::is_ascii_whitespace) {
            self.pos += 1;
        }
    }

    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.pos == self.text.len()).then_some(())
    }

    /// A string, from its opening quote to past its closing one.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// Any value: a string, a balanced run of brackets (counted, never
    /// recursed into), or a scalar up to the next delimiter.
    fn value(&mut self) -> Option<()> {
        match *self.text.get(self.pos)? {
            b'"' => self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *self.text.get(self.pos)? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth = depth.checked_sub(1)?,
                        _ => {}
                    }
                    self.pos += 1;
                    if depth == 0 {
                        return Some(());
                    }
                }
            }
            _ => {
                let start = self.pos;
                while self
                    .text
                    .get(self.pos)
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
                {
                    self.pos += 1;
                }
                (self.pos > start).then_some(())
            }
        }
    }
}

/// The fuzz target's body (`fuzz/fuzz_targets/mcp_frame.rs`), also run over
/// the committed seed corpus by a unit test: screening any bytes never
/// panics, passes only what the strict parser accepts, and answers only
/// with a JSON-RPC error that names a reason.
#[cfg(any(test, feature = "fuzzing"))]
pub fn fuzz_frame(data: &[u8]) {
    let Some(line) = data.split(|b| *b == b'\n').next() else {
        return;
    };
    match screen_frame(line) {
        Screened::Message(_) => {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
            assert!(
                canonical::parse_enclosing(line, MAX_FRAME_BYTES, ENVELOPE_DEPTH).is_ok(),
                "a frame the strict parser refuses reached the SDK"
            );
        }
        Screened::Answer(answer) => {
            assert_eq!(answer["jsonrpc"], "2.0");
            let id = &answer["id"];
            assert!(id.is_null() || id.is_string() || id.is_i64() || id.is_u64());
            let code = answer["error"]["code"].as_i64();
            assert!(
                matches!(code, Some(-32700 | -32600 | -32602)),
                "unexpected code {code:?}"
            );
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(!message.is_empty());
        }
        Screened::Ignore => {}
    }
}

#[cfg(test)]
mod tests;
