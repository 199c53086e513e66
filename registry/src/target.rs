//! An operation's target: the one string argument a policy sees as the
//! request's resource (`target = "/tool_input/command"` in an
//! `[[operation]]` entry), named by an RFC 6901 JSON pointer.
//!
//! This module owns the load-time check of that pointer against the
//! operation's schema and reading the target out of arguments. It must not
//! touch the contract revision: the target shapes only the policy's view of
//! a request (the policy's schema digest covers it), never what a proof
//! binds.

use serde_json::{Map, Value};

/// Checks `pointer` against `schema` (the operation's arguments schema).
///
/// The pointer must be a valid, non-empty RFC 6901 pointer (`/a/b`, with
/// `~0` for `~` and `~1` for `/`). Each token must name a declared
/// property of an object schema, down to a property whose schema declares
/// `type = "string"`; or, once the walk reaches an object that declares no
/// such property and does not close itself (`additionalProperties` not
/// `false`, as `tool_input` of the agent operations), the rest of the
/// pointer goes inside that open object, where the schema cannot say what
/// is there: an argument there that is missing or not a string is then no
/// target ([`target_of`]). The error is a reason.
pub(crate) fn check(pointer: &str, schema: &Value) -> Result<(), String> {
    let tokens = tokens(pointer)?;
    let mut node = schema;
    for (depth, token) in tokens.iter().enumerate() {
        let Some(object) = node.as_object().filter(|o| declares_type(o, "object")) else {
            return Err(format!(
                "{:?} goes through a value the schema does not declare as an object",
                reassemble(&tokens[..depth])
            ));
        };
        match object
            .get("properties")
            .and_then(Value::as_object)
            .and_then(|p| p.get(token.as_str()))
        {
            Some(property) => node = property,
            None if object.get("additionalProperties") == Some(&Value::Bool(false)) => {
                return Err(format!(
                    "{:?} is not a property the schema declares",
                    reassemble(&tokens[..=depth])
                ));
            }
            // Inside an open object: what is there is known only at evaluation.
            None => return Ok(()),
        }
    }
    match node.as_object() {
        Some(object) if declares_type(object, "string") => Ok(()),
        _ => Err(format!(
            "{pointer:?} names an argument the schema does not declare as a string (`type = \"string\"`)"
        )),
    }
}

/// The target `pointer` names in `arguments`: the string there, or `None`
/// when nothing is there or it is not a string (possible only inside an
/// open object; [`check`] refuses a pointer that could name anything but a
/// string elsewhere).
pub(crate) fn target_of<'a>(pointer: &str, arguments: &'a Value) -> Option<&'a str> {
    arguments.pointer(pointer).and_then(Value::as_str)
}

/// Whether a schema object's `type` is exactly `name`.
fn declares_type(object: &Map<String, Value>, name: &str) -> bool {
    object.get("type").and_then(Value::as_str) == Some(name)
}

/// The unescaped reference tokens of an RFC 6901 pointer; refuses the empty
/// pointer (the whole arguments object is no string), a pointer not
/// starting with `/`, and a `~` not followed by `0` or `1`.
fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!(
            "{pointer:?} is not a JSON pointer to an argument (RFC 6901: it starts with `/`)"
        ));
    };
    rest.split('/')
        .map(|token| {
            let mut out = String::with_capacity(token.len());
            let mut chars = token.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    out.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => out.push('~'),
                    Some('1') => out.push('/'),
                    _ => {
                        return Err(format!(
                            "{pointer:?} is not a JSON pointer (RFC 6901): `~` must be followed by 0 or 1"
                        ));
                    }
                }
            }
            Ok(out)
        })
        .collect()
}

/// `tokens` as a pointer again, for errors.
fn reassemble(tokens: &[String]) -> String {
    tokens
        .iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::{check, target_of};

    fn schema() -> serde_json::Value {
        json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": { "type": "string" },
                "count": { "type": "integer" },
                "a/b": { "type": "string" },
                "input": { "type": "object" },
                "closed": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "name": { "type": "string" } }
                }
            }
        })
    }

    #[test]
    fn accepts_a_string_property_a_nested_one_and_one_inside_an_open_object() {
        for pointer in [
            "/path",
            "/closed/name",
            "/input/command",
            "/input/x/y",
            "/a~1b",
        ] {
            assert_eq!(check(pointer, &schema()), Ok(()), "{pointer}");
        }
    }

    #[test]
    fn refuses_pointers_that_are_not_rfc_6901() {
        for pointer in ["", "path", "/pa~2th", "/path~"] {
            let reason = check(pointer, &schema()).unwrap_err();
            assert!(reason.contains("JSON pointer"), "{pointer}: {reason}");
        }
    }

    #[test]
    fn refuses_a_pointer_to_something_not_declared_as_a_string() {
        assert_eq!(
            check("/count", &schema()),
            Err(
                "\"/count\" names an argument the schema does not declare as a string (`type = \"string\"`)"
                    .into()
            )
        );
        assert!(check("/closed", &schema()).is_err());
        assert_eq!(
            check("/closed/other", &schema()),
            Err("\"/closed/other\" is not a property the schema declares".into())
        );
        assert_eq!(
            check("/missing", &schema()),
            Err("\"/missing\" is not a property the schema declares".into())
        );
        assert_eq!(
            check("/path/deeper", &schema()),
            Err("\"/path\" goes through a value the schema does not declare as an object".into())
        );
    }

    #[test]
    fn reads_a_string_target_and_nothing_else() {
        let args = json!({ "input": { "command": "ls", "n": 3 }, "a/b": "slash" });
        assert_eq!(target_of("/input/command", &args), Some("ls"));
        assert_eq!(target_of("/a~1b", &args), Some("slash"));
        assert_eq!(target_of("/input/n", &args), None);
        assert_eq!(target_of("/input/missing", &args), None);
    }

    #[test]
    fn the_default_registry_names_the_agent_targets() {
        let registry = crate::Registry::from_toml_str(crate::Registry::default_toml()).unwrap();
        let target = |name: &str| registry.get(name).unwrap().target().map(str::to_owned);
        assert_eq!(
            target("agent.shell").as_deref(),
            Some("/tool_input/command")
        );
        assert_eq!(
            target("agent.edit").as_deref(),
            Some("/tool_input/file_path")
        );
        assert_eq!(
            target("agent.read").as_deref(),
            Some("/tool_input/file_path")
        );
        assert_eq!(target("schedule.create"), None);
    }

    const ONE: &str = r#"
[[operation]]
name = "files.remove"
description = "Remove a file"
class = "delete"
replay_safe = true
preview = "Remove {path}"
TARGET
[operation.effect]
kind = "command"
program = "/bin/true"
args = []
timeout_secs = 10
[operation.schema]
type = "object"
additionalProperties = false
required = ["path"]
properties = { path = { type = "string" }, count = { type = "integer" } }
"#;

    #[test]
    fn a_target_does_not_change_the_contract_revision() {
        let without = crate::Registry::from_toml_str(&ONE.replace("TARGET", "")).unwrap();
        let with =
            crate::Registry::from_toml_str(&ONE.replace("TARGET", "target = \"/path\"")).unwrap();
        let (without, with) = (
            without.get("files.remove").unwrap(),
            with.get("files.remove").unwrap(),
        );
        assert_eq!(with.target(), Some("/path"));
        assert_eq!(without.contract_revision(), with.contract_revision());
        assert_eq!(with.target_of(&json!({"path": "/tmp/x"})), Some("/tmp/x"));
        assert_eq!(without.target_of(&json!({"path": "/tmp/x"})), None);
    }

    #[test]
    fn refuses_a_registry_whose_target_is_not_a_string_argument() {
        let err = crate::Registry::from_toml_str(&ONE.replace("TARGET", "target = \"/count\""))
            .unwrap_err();
        assert_eq!(
            err,
            crate::RegistryError::InvalidField {
                operation: "files.remove".into(),
                field: "target".into(),
                reason: "\"/count\" names an argument the schema does not declare as a string (`type = \"string\"`)".into(),
            }
        );
    }
}
