//! Loading the registry: the shipped default, and every refusal naming the
//! operation and field.
#![allow(clippy::unwrap_used)]

use countersign_registry::{
    BuiltinEffect, Class, Effect, Registry, RegistryError, Schemas, effect,
};

/// A valid one-operation registry; `extra` is spliced into the operation
/// table, `schema_extra` into its schema table.
fn one(extra: &str, effect: &str, schema_extra: &str) -> String {
    format!(
        r#"
[[operation]]
name = "thing.do"
description = "Do a thing"
class = "write"
replay_safe = false
preview = "Do {{target}}"
{extra}

[operation.effect]
{effect}

[operation.schema]
type = "object"
additionalProperties = false
{schema_extra}

[operation.schema.properties.target]
type = "string"

[operation.schema.properties.text]
type = "string"
"#
    )
}

const BUILTIN: &str = "kind = \"builtin\"\nname = \"schedule.create\"";
const COMMAND: &str = "kind = \"command\"\nprogram = \"/bin/true\"\ntimeout_secs = 5";

fn load(text: &str) -> Result<Registry, RegistryError> {
    Registry::from_toml_str(text)
}

#[test]
fn default_registry_loads_with_all_builtins_and_a_command() {
    let registry = load(Registry::default_toml()).unwrap();
    for effect in BuiltinEffect::ALL {
        let name = effect.as_str();
        let op = registry.get(name).unwrap();
        let class = if name == "schedule.delete" {
            Class::Delete
        } else {
            Class::Write
        };
        assert_eq!(op.class, class);
        assert!(op.replay_safe);
        assert_eq!(
            op.effect,
            Effect::Builtin(effect::Builtin {
                name: name.to_owned()
            })
        );
    }
    let echo = registry.get("demo.echo").unwrap();
    assert!(!echo.replay_safe);
    assert!(matches!(&echo.effect, Effect::Command(command) if command.program.is_absolute()));
    assert_eq!(registry.get("rule.create").unwrap().effect, Effect::Rule);
    for name in effect::AGENT_OPERATIONS {
        let op = registry.get(name).unwrap();
        assert_eq!(op.effect, Effect::Hook, "{name}");
        assert!(op.replay_safe, "{name}");
        let class = match name {
            "agent.read" => Class::Read,
            "agent.shell" => Class::Exec,
            "agent.web" => Class::Network,
            _ => Class::Write,
        };
        assert_eq!(op.class, class, "{name}");
    }
    assert_eq!(registry.operations().count(), 13);
    let names: Vec<_> = registry.operations().map(|o| o.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn the_rule_effect_backs_exactly_rule_create_and_never_with_a_passkey() {
    let rule_create = |name: &str, kind: &str, passkey: bool| {
        format!(
            "[[operation]]\nname = \"{name}\"\ndescription = \"d\"\nclass = \"write\"\nreplay_safe = false\nrequire_passkey = {passkey}\npreview = \"p\"\n[operation.effect]\nkind = \"{kind}\"\n{}[operation.schema]\ntype = \"object\"\nadditionalProperties = false\n",
            if kind == "builtin" {
                "name = \"schedule.create\"\n"
            } else {
                ""
            }
        )
    };
    assert!(load(&rule_create("rule.create", "rule", false)).is_ok());
    for (name, kind, passkey) in [
        ("rule.other", "rule", false),
        ("rule.create", "rule", true),
        ("rule.create", "builtin", false),
    ] {
        assert!(
            matches!(
                load(&rule_create(name, kind, passkey)),
                Err(RegistryError::InvalidField { .. } | RegistryError::UnknownBuiltin { .. })
            ),
            "{name} {kind} {passkey}"
        );
    }
}

#[test]
fn the_hook_effect_backs_exactly_the_agent_operations() {
    let operation = |name: &str, kind: &str| {
        format!(
            "[[operation]]\nname = \"{name}\"\ndescription = \"d\"\nclass = \"write\"\nreplay_safe = true\npreview = \"p\"\n[operation.effect]\nkind = \"{kind}\"\n{}[operation.schema]\ntype = \"object\"\nadditionalProperties = false\n",
            if kind == "command" {
                "program = \"/bin/true\"\ntimeout_secs = 5\n"
            } else {
                ""
            }
        )
    };
    assert!(load(&operation("agent.shell", "hook")).is_ok());
    let expected = "the effect kind \"hook\" backs exactly the operations agent.shell, agent.edit, agent.read, agent.web, agent.mcp, agent.other";
    for (name, kind) in [("agent.deploy", "hook"), ("agent.shell", "command")] {
        match load(&operation(name, kind)) {
            Err(RegistryError::InvalidField {
                operation,
                field,
                reason,
            }) => {
                assert_eq!((operation.as_str(), field.as_str()), (name, "effect.kind"));
                assert_eq!(reason, expected);
            }
            other => panic!("{name} {kind}: {other:?}"),
        }
    }
}

#[test]
fn load_reads_a_file_and_reports_a_missing_one() {
    let dir = std::env::temp_dir().join(format!("countersign-registry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("operations.toml");
    std::fs::write(&path, Registry::default_toml()).unwrap();
    assert!(Registry::load(&path).is_ok());
    std::fs::remove_file(&path).unwrap();
    assert!(matches!(
        Registry::load(&path),
        Err(RegistryError::Io { .. })
    ));
    std::fs::remove_dir(&dir).unwrap();
}

#[test]
fn a_valid_command_operation_loads() {
    let registry = load(&one("", COMMAND, "")).unwrap();
    assert!(registry.get("thing.do").is_some());
    assert!(registry.get("thing.undo").is_none());
}

#[test]
fn refuses_unknown_keys_anywhere() {
    for text in [
        one("colour = \"red\"", COMMAND, ""),
        one("", &format!("{COMMAND}\nshell = true"), ""),
        one(
            "",
            "kind = \"builtin\"\nname = \"schedule.create\"\nx = 1",
            "",
        ),
        format!("version = 2\n{}", one("", COMMAND, "")),
    ] {
        let err = load(&text).unwrap_err();
        assert!(
            matches!(&err, RegistryError::Toml(m) if m.contains("unknown field")),
            "{err}"
        );
    }
}

#[test]
fn refuses_missing_required_keys() {
    let text = one("", COMMAND, "").replace("replay_safe = false\n", "");
    let err = load(&text).unwrap_err();
    assert!(
        matches!(&err, RegistryError::Toml(m) if m.contains("replay_safe")),
        "{err}"
    );
}

#[test]
fn require_passkey_is_an_optional_boolean_defaulting_to_false() {
    let op = |text: &str| load(text).map(|r| r.get("thing.do").unwrap().requires_passkey());
    assert_eq!(op(&one("", COMMAND, "")), Ok(false));
    assert_eq!(op(&one("require_passkey = false", COMMAND, "")), Ok(false));
    assert_eq!(op(&one("require_passkey = true", COMMAND, "")), Ok(true));
    for wrong in ["\"true\"", "1", "[]"] {
        let err = load(&one(&format!("require_passkey = {wrong}"), COMMAND, "")).unwrap_err();
        assert!(
            matches!(&err, RegistryError::Toml(m) if m.contains("require_passkey")),
            "{wrong}: {err}"
        );
    }
    let default = load(Registry::default_toml()).unwrap();
    assert!(default.operations().all(|o| !o.requires_passkey()));
}

#[test]
fn refuses_an_empty_registry() {
    assert_eq!(load("").unwrap_err(), RegistryError::NoOperations);
}

#[test]
fn refuses_duplicate_operation_names() {
    let text = format!("{}{}", one("", COMMAND, ""), one("", COMMAND, ""));
    assert_eq!(
        load(&text).unwrap_err(),
        RegistryError::DuplicateOperation("thing.do".into())
    );
}

#[test]
fn refuses_invalid_operation_names() {
    for bad in [
        "Thing.do",
        "thing..do",
        "thing.",
        ".thing",
        "1thing",
        "thing-do",
        "thing.do!",
    ] {
        let text = one("", COMMAND, "").replace("\"thing.do\"", &format!("{bad:?}"));
        assert_eq!(
            load(&text).unwrap_err(),
            RegistryError::InvalidName(bad.into())
        );
    }
}

#[test]
fn refuses_a_relative_command_program() {
    let effect = COMMAND.replace("/bin/true", "bin/true");
    let err = load(&one("", &effect, "")).unwrap_err();
    assert_eq!(
        err,
        RegistryError::RelativeProgram {
            operation: "thing.do".into(),
            program: "bin/true".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "operation `thing.do`: field `effect.program`: \"bin/true\" is not an absolute path"
    );
}

#[test]
fn refuses_command_timeouts_outside_one_to_three_hundred() {
    for t in ["0", "301"] {
        let effect = COMMAND.replace("= 5", &format!("= {t}"));
        let err = load(&one("", &effect, "")).unwrap_err();
        assert!(
            matches!(&err, RegistryError::InvalidField { operation, field, .. }
                if operation == "thing.do" && field == "effect.timeout_secs"),
            "{err}"
        );
    }
}

#[test]
fn refuses_unknown_builtins_and_builtins_under_another_name() {
    let err = load(&one("", "kind = \"builtin\"\nname = \"rm.rf\"", "")).unwrap_err();
    assert!(
        matches!(&err, RegistryError::UnknownBuiltin { operation, reason }
            if operation == "thing.do" && reason.contains("\"rm.rf\" is not a builtin")),
        "{err}"
    );
    let err = load(&one("", BUILTIN, "")).unwrap_err();
    assert!(
        matches!(&err, RegistryError::UnknownBuiltin { reason, .. }
            if reason.contains("same name")),
        "{err}"
    );
}

#[test]
fn refuses_placeholders_that_are_not_properties() {
    let text = one("", COMMAND, "").replace("Do {target}", "Do {target} {missing}");
    assert_eq!(
        load(&text).unwrap_err(),
        RegistryError::BadPlaceholder {
            operation: "thing.do".into(),
            placeholder: "missing".into(),
            reason: "is not a property of the schema".into()
        }
    );
}

#[test]
fn refuses_placeholders_naming_unverified_fields() {
    let text =
        one("unverified_fields = [\"text\"]", COMMAND, "").replace("Do {target}", "Do {text}");
    assert!(matches!(
        load(&text).unwrap_err(),
        RegistryError::BadPlaceholder { placeholder, .. } if placeholder == "text"
    ));
}

#[test]
fn refuses_malformed_templates() {
    for bad in ["Do {target", "Do target}", "Do {}", "Do {a{b}"] {
        let text = one("", COMMAND, "").replace("Do {target}", bad);
        let err = load(&text).unwrap_err();
        assert!(
            matches!(&err, RegistryError::InvalidField { field, .. } if field == "preview"),
            "{bad}: {err}"
        );
    }
    let text = one("", COMMAND, "").replace("Do {target}", "Literal {{braces}} {target}");
    assert!(load(&text).is_ok());
}

#[test]
fn refuses_control_characters_in_description_and_preview() {
    let text = one("", COMMAND, "").replace("Do a thing", "Do\\u001b[2J a thing");
    let err = load(&text).unwrap_err();
    assert!(
        matches!(&err, RegistryError::InvalidField { field, reason, .. }
            if field == "description" && reason.contains("U+001B")),
        "{err}"
    );
    let text = one("", COMMAND, "").replace("Do {target}", "Do \\u202e{target}");
    assert!(matches!(
        load(&text).unwrap_err(),
        RegistryError::InvalidField { field, .. } if field == "preview"
    ));
}

#[test]
fn refuses_unverified_fields_that_are_not_properties() {
    let text = one("unverified_fields = [\"nope\"]", COMMAND, "");
    assert_eq!(
        load(&text).unwrap_err(),
        RegistryError::UnknownUnverifiedField {
            operation: "thing.do".into(),
            field: "nope".into()
        }
    );
}

#[test]
fn refuses_lifetimes_outside_one_to_eighteen_hundred() {
    for (secs, ok) in [("0", false), ("1", true), ("1800", true), ("1801", false)] {
        let result = load(&one(&format!("lifetime_secs = {secs}"), COMMAND, ""));
        assert_eq!(result.is_ok(), ok, "{secs}");
        if let Err(err) = result {
            assert!(
                matches!(err, RegistryError::InvalidField { field, .. } if field == "lifetime_secs")
            );
        }
    }
}

fn schema_reason(text: &str) -> String {
    match load(text).unwrap_err() {
        RegistryError::BadSchema { operation, reason } => {
            assert_eq!(operation, "thing.do");
            reason
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn refuses_schemas_that_are_not_closed_objects() {
    let open = one("", COMMAND, "").replace("additionalProperties = false\n", "");
    assert!(schema_reason(&open).contains("additionalProperties = false"));
    let open = one("", COMMAND, "").replace(
        "additionalProperties = false",
        "additionalProperties = true",
    );
    assert!(schema_reason(&open).contains("additionalProperties = false"));
    let not_object = one("", COMMAND, "").replace("type = \"object\"", "type = \"array\"");
    assert!(schema_reason(&not_object).contains("type = \"object\""));
    let patterned = one(
        "",
        COMMAND,
        "[operation.schema.patternProperties.\"^x\"]\ntype = \"string\"",
    );
    assert!(schema_reason(&patterned).contains("patternProperties"));
}

#[test]
fn refuses_remote_references_and_invalid_schemas() {
    let remote = one("", COMMAND, "")
        + "[operation.schema.properties.other]\n\"$ref\" = \"https://example.com/s.json\"\n";
    let text = remote.replace("Do {target}", "Do {target} {other}");
    assert!(schema_reason(&text).starts_with("does not compile"));
    let file = one("", COMMAND, "")
        + "[operation.schema.properties.other]\n\"$ref\" = \"file:///etc/passwd\"\n";
    assert!(schema_reason(&file).starts_with("does not compile"));
    let invalid = one("", COMMAND, "minProperties = \"three\"");
    let reason = schema_reason(&invalid);
    assert!(
        reason.starts_with("does not compile (at /minProperties)"),
        "{reason}"
    );
    let draft = one(
        "",
        COMMAND,
        "\"$schema\" = \"http://json-schema.org/draft-04/schema#\"",
    );
    assert!(schema_reason(&draft).contains("$schema"));
}

#[test]
fn refuses_unknown_formats() {
    let text =
        one("", COMMAND, "") + "[operation.schema.properties.when]\nformat = \"moonphase\"\n";
    assert!(schema_reason(&text).starts_with("does not compile"));
}

#[test]
fn refuses_toml_datetimes_in_schemas() {
    let text = one("", COMMAND, "default = 1979-05-27T07:32:00Z");
    assert!(schema_reason(&text).contains("datetime"));
}

#[test]
fn schemas_compiled_on_first_use_validate_as_those_compiled_at_load() {
    let text = one("", COMMAND, "required = [\"target\"]");
    let compiled = Registry::parse(&text, Schemas::Compiled).unwrap();
    let deferred = Registry::parse(&text, Schemas::OnFirstUse).unwrap();
    let (now, later) = (
        compiled.get("thing.do").unwrap(),
        deferred.get("thing.do").unwrap(),
    );
    assert_eq!(now.contract_revision(), later.contract_revision());
    for args in [
        &br#"{"target":"a"}"#[..],
        br#"{"text":"no target"}"#,
        br#"{"target":3}"#,
        br#"{"target":"a","extra":1}"#,
    ] {
        let (a, b) = (now.validate_arguments(args), later.validate_arguments(args));
        assert_eq!(a.is_ok(), b.is_ok(), "{}", String::from_utf8_lossy(args));
        if let (Err(a), Err(b)) = (a, b) {
            assert_eq!(a.to_string(), b.to_string());
        }
    }
}

#[test]
fn a_schema_that_does_not_compile_refuses_the_registry_or_its_first_arguments() {
    let invalid = one("", COMMAND, "minProperties = \"three\"");
    assert!(matches!(
        Registry::parse(&invalid, Schemas::Compiled),
        Err(RegistryError::BadSchema { .. })
    ));
    // Every other check still runs at load.
    let unknown_placeholder = invalid.replace("Do {target}", "Do {nothing}");
    assert!(matches!(
        Registry::parse(&unknown_placeholder, Schemas::OnFirstUse),
        Err(RegistryError::BadPlaceholder { .. })
    ));
    let deferred = Registry::parse(&invalid, Schemas::OnFirstUse).unwrap();
    let op = deferred.get("thing.do").unwrap();
    for _ in 0..2 {
        let refused = op.validate_arguments(br#"{"target":"a"}"#).unwrap_err();
        assert!(
            refused.to_string().starts_with(
                "arguments do not match the schema: the schema does not compile (at /minProperties)"
            ),
            "{refused}"
        );
    }
}

#[test]
fn each_default_operation_risks_what_it_does_and_agent_calls_by_tool_class() {
    let registry = load(Registry::default_toml()).unwrap();
    let risk = |name: &str| registry.get(name).unwrap().risk().as_str();
    assert_eq!(risk("schedule.create"), "write");
    assert_eq!(risk("schedule.delete"), "delete");
    assert_eq!(risk("agent.shell"), "exec");
    assert_eq!(risk("agent.edit"), "write");
    assert_eq!(risk("agent.read"), "read");
    assert_eq!(risk("agent.web"), "network");
    // A registry file written before these classes (agent.shell "write")
    // still shows an agent call's tool class.
    let old = Registry::default_toml().replace(
        "name = \"agent.shell\"\ndescription = \"A coding agent's shell command: its hook asks before the agent runs it.\"\nclass = \"exec\"",
        "name = \"agent.shell\"\ndescription = \"A coding agent's shell command: its hook asks before the agent runs it.\"\nclass = \"write\"",
    );
    assert_ne!(old, Registry::default_toml());
    let old = load(&old).unwrap();
    assert_eq!(old.get("agent.shell").unwrap().risk(), Class::Exec);
    assert_eq!(old.get("agent.shell").unwrap().class, Class::Write);
}
