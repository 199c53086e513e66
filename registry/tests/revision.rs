//! Contract revisions: stable across TOML formatting and key order, changed
//! by any change of meaning.
#![allow(clippy::unwrap_used)]

use countersign_registry::Registry;

const BASE: &str = r#"
[[operation]]
name = "thing.do"
description = "Do a thing"
class = "write"
replay_safe = false
lifetime_secs = 120
preview = "Do {target}"
unverified_fields = ["text"]

[operation.effect]
kind = "command"
program = "/bin/true"
args = ["--flag"]
timeout_secs = 5

[operation.schema]
type = "object"
additionalProperties = false
required = ["target"]

[operation.schema.properties.target]
type = "string"
maxLength = 10

[operation.schema.properties.text]
type = "string"
"#;

/// The same definition: inline tables, other key order, comments, spacing.
const REFORMATTED: &str = r#"
# same operation, written differently
[[operation]]
unverified_fields = [ "text", ]
preview     = 'Do {target}'
schema = { properties = { text = { type = "string" }, target = { maxLength = 10, type = "string" } }, required = ["target"], additionalProperties = false, type = "object" }
effect = { timeout_secs = 5, args = ["--flag"], program = "/bin/true", kind = "command" }
lifetime_secs = 120
replay_safe = false
class = "write"
description = "Do a thing"
name = "thing.do"
"#;

fn revision(text: &str) -> String {
    let registry = Registry::from_toml_str(text).unwrap();
    registry
        .get("thing.do")
        .unwrap()
        .contract_revision()
        .to_owned()
}

#[test]
fn revision_is_lowercase_sha256_hex() {
    let rev = revision(BASE);
    assert_eq!(rev.len(), 64);
    assert!(
        rev.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    );
}

#[test]
fn reformatting_the_toml_keeps_the_revision() {
    assert_eq!(revision(BASE), revision(REFORMATTED));
}

#[test]
fn writing_a_default_explicitly_keeps_the_revision() {
    let without = BASE.replace("unverified_fields = [\"text\"]\n", "");
    let with_empty = BASE.replace("unverified_fields = [\"text\"]", "unverified_fields = []");
    assert_eq!(revision(&without), revision(&with_empty));
    let no_args = BASE.replace("args = [\"--flag\"]\n", "");
    let empty_args = BASE.replace("args = [\"--flag\"]", "args = []");
    assert_eq!(revision(&no_args), revision(&empty_args));
}

#[test]
fn changing_any_field_changes_the_revision() {
    let base = revision(BASE);
    let changes = [
        (
            "description = \"Do a thing\"",
            "description = \"Do another thing\"",
        ),
        ("class = \"write\"", "class = \"read\""),
        ("replay_safe = false", "replay_safe = true"),
        ("lifetime_secs = 120", "lifetime_secs = 121"),
        ("lifetime_secs = 120\n", ""),
        (
            "preview = \"Do {target}\"",
            "preview = \"Do it to {target}\"",
        ),
        ("unverified_fields = [\"text\"]", "unverified_fields = []"),
        ("program = \"/bin/true\"", "program = \"/bin/false\""),
        ("args = [\"--flag\"]", "args = [\"--other\"]"),
        ("args = [\"--flag\"]", "args = [\"--flag\", \"x\"]"),
        ("timeout_secs = 5", "timeout_secs = 6"),
        ("required = [\"target\"]", "required = []"),
        ("maxLength = 10", "maxLength = 11"),
        ("maxLength = 10", "maxLength = 10\nminLength = 1"),
    ];
    for (from, to) in changes {
        assert!(BASE.contains(from), "{from}");
        let changed = BASE.replace(from, to);
        assert_ne!(revision(&changed), base, "{from} -> {to}");
    }
    let renamed = BASE.replace("thing.do", "thing.other");
    let registry = Registry::from_toml_str(&renamed).unwrap();
    assert_ne!(
        registry.get("thing.other").unwrap().contract_revision(),
        base
    );
}

#[test]
fn requiring_a_passkey_changes_the_revision() {
    let base = revision(BASE);
    let required = BASE.replace(
        "replay_safe = false",
        "replay_safe = false\nrequire_passkey = true",
    );
    assert_ne!(revision(&required), base);
    let registry = Registry::from_toml_str(&required).unwrap();
    assert!(registry.get("thing.do").unwrap().requires_passkey());
    // Flipping it back is the old contract again.
    let flipped = required.replace("require_passkey = true", "require_passkey = false");
    assert_eq!(revision(&flipped), base);
}

#[test]
fn not_requiring_a_passkey_keeps_the_revision_it_had_before_the_field_existed() {
    // BASE's revision before `require_passkey` was part of the format: an
    // operation that does not set it keeps its contract, so proofs and
    // proposals made before an upgrade stay valid.
    let before = "2b3f6389a451de7bd44fc1cead161a4112910f15b543aae087b3e5c872219725";
    assert_eq!(revision(BASE), before);
    let explicit = BASE.replace(
        "replay_safe = false",
        "replay_safe = false\nrequire_passkey = false",
    );
    assert_eq!(revision(&explicit), before);
    let registry = Registry::from_toml_str(BASE).unwrap();
    assert!(!registry.get("thing.do").unwrap().requires_passkey());
}

#[test]
fn revisions_of_the_default_registry_differ_per_operation() {
    let registry = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let mut revisions: Vec<_> = registry
        .operations()
        .map(|o| o.contract_revision())
        .collect();
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), registry.operations().count());
}
