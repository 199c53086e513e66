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

/// A definition of each effect kind, with every optional field written.
const EVERY_KIND: &str = r#"
[[operation]]
name = "hook.send"
description = "Send a hook"
class = "write"
replay_safe = true
preview = "Send it"
[operation.effect]
kind = "webhook"
url = "https://hooks.example.com/approved"
timeout_secs = 5
accept_status = [200, 204]
trust_roots = "/etc/countersign/receiver-ca.pem"
[operation.schema]
type = "object"
additionalProperties = false

[[operation]]
name = "hook.local"
description = "Send a hook to this host"
class = "write"
replay_safe = false
preview = "Send it here"
[operation.effect]
kind = "webhook"
url = "http://127.0.0.1:8080/hook"
timeout_secs = 7
allow_plain_http_loopback = true
[operation.schema]
type = "object"
additionalProperties = false
"#;

#[test]
fn every_effect_kind_keeps_the_revision_it_had_before_effects_were_modules() {
    // Pinned when each kind's definition moved into its own module: the
    // definition as hashed is unchanged, so no outstanding proof or
    // proposal is invalidated by that move.
    let defaults = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let every_kind = Registry::from_toml_str(EVERY_KIND).unwrap();
    let revisions: Vec<(&str, &str)> = defaults
        .operations()
        .chain(every_kind.operations())
        // The agent operations came after the move (kind `hook`).
        .filter(|o| !o.name.starts_with("agent."))
        .map(|o| (o.name.as_str(), o.contract_revision()))
        .collect();
    let pinned: &[(&str, &str)] = &[
        (
            "demo.echo",
            "729700630e31bd824db86ae42a126c2accb8cc475f45857ca983853e9fc9a63d",
        ),
        // Changed on purpose since: its schema accepts the argv test, then
        // a scope written in Cedar (`cedar`, with `constraints` optional).
        // A rule.create proposal made under an earlier schema is decided
        // `contract_changed`, as after any schema change.
        (
            "rule.create",
            "e078d7f1c91bc9164ad1185a01e0d0d3dfbb1b64e370e83cae6ae48af62443a9",
        ),
        (
            "schedule.activate",
            "79ebb6b1114708a933449c755279b42ddd4f10232e51bd411a403fb89b27a2e1",
        ),
        (
            "schedule.create",
            "c8b3b0e7272361247ed8553fb2c30702a51dd9b004e7a615b375770633288194",
        ),
        // Changed on purpose since: its class is `delete` (what approving
        // it risks). A proposal made under the earlier class is decided
        // `contract_changed`, as after any change of meaning.
        (
            "schedule.delete",
            "4fbe5112a821d0e723df1d7dc298bf46c73a25e2e8e81659af430be59fd98698",
        ),
        (
            "schedule.pause",
            "d16091285d7f020eee9ece4633425892e92a4081b38e1e26a3701100d5c67647",
        ),
        (
            "schedule.resume",
            "a83f1a3c673ca4b94e25967e222d80b5fd24e239d58755ef74f4677fc8d21580",
        ),
        (
            "hook.local",
            "e5d6619fae6a636ae716691b7774251f0c6ef8f9fe0186610b90f9615a6bea5c",
        ),
        (
            "hook.send",
            "f8f1f70ddce22ca60cbae823fc25d696b4462e2ccafb979c29130ba6e717ea39",
        ),
    ];
    assert_eq!(revisions, pinned);
}
