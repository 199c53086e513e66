//! Converting a request's arguments into Cedar values, following the
//! typed view (`view.rs`) exactly.
//!
//! This module owns the exactness rule: a value the view types but Cedar
//! cannot hold exactly is refused with its JSON pointer and the reason,
//! never approximated. An integer outside Cedar's 64-bit signed range, a
//! number with a fraction where an integer is typed (or an integer written
//! as a float beyond 2^53, which JSON parsing may already have rounded),
//! an array whose items
//! collapse in a set (duplicates) are refused, as is a value of another
//! JSON type than the view's (the arguments were validated against the
//! operation's schema before: this is a second line, not the first).
//! Strings pass unchanged: Cedar holds any Unicode string, NUL included.
//! What the view leaves out is not converted at all. It must not read
//! anything but the arguments it is given.

use std::collections::{BTreeMap, BTreeSet};

use cedar_policy::RestrictedExpression;
use serde_json::Value;

use crate::RequestError;
use crate::view::{ArgType, RecordType};

/// A Cedar value built from arguments: comparable, so that a set's
/// duplicates are found before Cedar would collapse them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CedarValue {
    Bool(bool),
    Long(i64),
    String(String),
    Set(BTreeSet<CedarValue>),
    Record(BTreeMap<String, CedarValue>),
}

/// `arguments` as a record of the view `record`.
pub(crate) fn record(
    record: &RecordType,
    arguments: &Value,
) -> Result<BTreeMap<String, CedarValue>, RequestError> {
    match convert_record(record, arguments, "")? {
        CedarValue::Record(fields) => Ok(fields),
        // convert_record builds a record or refuses.
        _ => Err(not_representable("", "the arguments are not an object")),
    }
}

fn not_representable(pointer: &str, reason: &str) -> RequestError {
    RequestError::NotRepresentable {
        pointer: if pointer.is_empty() {
            "/".into()
        } else {
            pointer.into()
        },
        reason: reason.into(),
    }
}

/// RFC 6901 escaping of one reference token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn convert_record(
    record: &RecordType,
    value: &Value,
    at: &str,
) -> Result<CedarValue, RequestError> {
    let Value::Object(object) = value else {
        return Err(not_representable(at, "expected an object"));
    };
    let mut fields = BTreeMap::new();
    for (name, attribute) in &record.attributes {
        let pointer = format!("{at}/{}", escape(name));
        match object.get(name) {
            Some(value) => {
                fields.insert(name.clone(), convert(&attribute.ty, value, &pointer)?);
            }
            None if attribute.required => {
                return Err(not_representable(
                    &pointer,
                    "a required argument is missing",
                ));
            }
            None => {}
        }
    }
    Ok(CedarValue::Record(fields))
}

fn convert(ty: &ArgType, value: &Value, at: &str) -> Result<CedarValue, RequestError> {
    match (ty, value) {
        (ArgType::String, Value::String(s)) => Ok(CedarValue::String(s.clone())),
        (ArgType::Bool, Value::Bool(b)) => Ok(CedarValue::Bool(*b)),
        (ArgType::Long, Value::Number(n)) => {
            if let Some(i) = n.as_i64() {
                Ok(CedarValue::Long(i))
            } else if n.is_u64() {
                Err(not_representable(
                    at,
                    "an integer above 9223372036854775807: Cedar's Long is 64-bit signed",
                ))
            } else {
                float_as_long(n.as_f64(), at)
            }
        }
        (ArgType::Set(element), Value::Array(items)) => {
            let mut set = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let converted = convert(element, item, &format!("{at}/{i}"))?;
                if !set.insert(converted) {
                    return Err(not_representable(
                        &format!("{at}/{i}"),
                        "a duplicate item: Cedar holds an array as a set, which would collapse it",
                    ));
                }
            }
            Ok(CedarValue::Set(set))
        }
        (ArgType::Record(record), value) => convert_record(record, value, at),
        (ArgType::String, _) => Err(not_representable(at, "expected a string")),
        (ArgType::Bool, _) => Err(not_representable(at, "expected a boolean")),
        (ArgType::Long, _) => Err(not_representable(at, "expected an integer")),
        (ArgType::Set(_), _) => Err(not_representable(at, "expected an array")),
    }
}

/// Largest integer every float below it holds exactly (2^53).
const EXACT_FLOAT_LIMIT: f64 = 9_007_199_254_740_992.0;

/// A number JSON wrote with a fraction or an exponent, where an integer is
/// typed: a whole number the float holds exactly (`3.0`, `1e3`) is that
/// Long; a fraction would be rounded, and a float beyond 2^53 may already
/// have been (and 1e300 is beyond Cedar's range), so both are refused.
fn float_as_long(float: Option<f64>, at: &str) -> Result<CedarValue, RequestError> {
    match float {
        Some(f) if f.fract() == 0.0 && f.abs() <= EXACT_FLOAT_LIMIT => {
            // Whole and within ±2^53: the cast is exact.
            #[allow(clippy::cast_possible_truncation)]
            Ok(CedarValue::Long(f as i64))
        }
        Some(f) if f.is_finite() && f.fract() == 0.0 => Err(not_representable(
            at,
            "an integer written as a float beyond 2^53: its exact value is unknown, or outside Cedar's 64-bit Long",
        )),
        _ => Err(not_representable(
            at,
            "a number with a fraction where an integer is typed: Cedar would round it",
        )),
    }
}

impl CedarValue {
    /// The value as a Cedar restricted expression.
    pub(crate) fn into_expression(self) -> Result<RestrictedExpression, RequestError> {
        Ok(match self {
            CedarValue::Bool(b) => RestrictedExpression::new_bool(b),
            CedarValue::Long(i) => RestrictedExpression::new_long(i),
            CedarValue::String(s) => RestrictedExpression::new_string(s),
            CedarValue::Set(items) => RestrictedExpression::new_set(
                items
                    .into_iter()
                    .map(CedarValue::into_expression)
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            CedarValue::Record(fields) => record_expression(fields)?,
        })
    }
}

/// A record of converted values as a Cedar record expression.
pub(crate) fn record_expression(
    fields: BTreeMap<String, CedarValue>,
) -> Result<RestrictedExpression, RequestError> {
    let fields = fields
        .into_iter()
        .map(|(k, v)| Ok((k, v.into_expression()?)))
        .collect::<Result<Vec<_>, RequestError>>()?;
    RestrictedExpression::new_record(fields).map_err(|e| RequestError::Cedar(e.to_string()))
}
