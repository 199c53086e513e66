//! Reading a hook input: the strict parse and typed field access.
//!
//! Owns: the size limit, the strict parse (the project's parser, never
//! `serde_json`'s, which keeps the last of duplicate keys), and the one
//! place a field's absence or type becomes a [`ParseError`].
//! Must not: know which fields an agent requires (the agent modules do).

use serde_json::{Map, Value};

use countersign_verifier::canonical;

use crate::agent::{Agent, HookEvent};
use crate::error::{ParseError, ParseErrorKind};

/// A JSON object.
pub(crate) type Object = Map<String, Value>;

/// `tool_input` is nested one level below the hook's own object: it gets
/// the same depth limit as an operation's arguments on their own.
const ENVELOPE_DEPTH: usize = 1;

/// Strictly parses `bytes` as one JSON object of at most
/// [`crate::MAX_INPUT_BYTES`].
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Object, ParseError> {
    let limit = crate::MAX_INPUT_BYTES;
    if bytes.len() > limit {
        return Err(ParseError::early(ParseErrorKind::TooLarge { limit }));
    }
    match canonical::parse_enclosing(bytes, limit, ENVELOPE_DEPTH) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ParseError::early(ParseErrorKind::NotAnObject)),
        Err(error) => Err(ParseError::early(ParseErrorKind::NotJson(error))),
    }
}

/// A hook input's fields, and its event once read.
pub(crate) struct Fields {
    object: Object,
    event: Option<HookEvent>,
}

impl Fields {
    /// Reads `hook_event_name`, which must be one of `agent`'s events.
    pub(crate) fn with_event(
        object: Object,
        agent: Agent,
    ) -> Result<(Self, HookEvent), ParseError> {
        let mut fields = Fields {
            object,
            event: None,
        };
        let name = fields.string("hook_event_name")?;
        let event = agent
            .event_named(&name)
            .ok_or_else(|| ParseError::unsupported_event(agent, &name))?;
        fields.event = Some(event);
        Ok((fields, event))
    }

    /// An error about this input (carrying its event once known).
    pub(crate) fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError::during(self.event, kind)
    }

    /// A required string field.
    pub(crate) fn string(&self, name: &'static str) -> Result<String, ParseError> {
        self.optional_string(name)?
            .ok_or_else(|| self.error(ParseErrorKind::Missing(name)))
    }

    /// An optional string field (absent or `null` is `None`).
    pub(crate) fn optional_string(&self, name: &'static str) -> Result<Option<String>, ParseError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(self.wrong_type(name, "a string")),
        }
    }

    /// An optional object field (absent or `null` is `None`).
    pub(crate) fn optional_object(
        &self,
        name: &'static str,
    ) -> Result<Option<&Object>, ParseError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(object)) => Ok(Some(object)),
            Some(_) => Err(self.wrong_type(name, "a JSON object")),
        }
    }

    /// The first element of an optional array-of-strings field, if any.
    pub(crate) fn first_of_strings(
        &self,
        name: &'static str,
    ) -> Result<Option<String>, ParseError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => {
                let mut strings = Vec::with_capacity(items.len());
                for item in items {
                    match item {
                        Value::String(text) => strings.push(text),
                        _ => return Err(self.wrong_type(name, "an array of strings")),
                    }
                }
                Ok(strings.first().map(|text| (*text).clone()))
            }
            Some(_) => Err(self.wrong_type(name, "an array of strings")),
        }
    }

    /// Takes a required object field out of the input, exactly as received.
    pub(crate) fn take_object(&mut self, name: &'static str) -> Result<Object, ParseError> {
        match self.object.remove(name) {
            None | Some(Value::Null) => Err(self.error(ParseErrorKind::Missing(name))),
            Some(Value::Object(object)) => Ok(object),
            Some(_) => Err(self.wrong_type(name, "a JSON object")),
        }
    }

    /// Takes a field out of the input as it is, if present.
    pub(crate) fn take(&mut self, name: &str) -> Option<Value> {
        self.object.remove(name)
    }

    /// A field of the wrong type.
    pub(crate) fn wrong_type(&self, field: &'static str, expected: &'static str) -> ParseError {
        self.error(ParseErrorKind::WrongType { field, expected })
    }
}
