//! The `webhook` effect in the registry: a valid definition loads with its
//! defaults, and every refusal names the operation, the field and the reason.
#![allow(clippy::unwrap_used)]

use countersign_registry::{
    DEFAULT_ACCEPT_STATUS, Effect, Registry, RegistryError, WebhookUrl, effect,
};

fn registry(effect: &str) -> String {
    format!(
        r#"
[[operation]]
name = "hook.send"
description = "Send a hook"
class = "write"
replay_safe = true
preview = "Send {{target}}"

[operation.effect]
kind = "webhook"
{effect}

[operation.schema]
type = "object"
additionalProperties = false

[operation.schema.properties.target]
type = "string"
"#
    )
}

const HTTPS: &str = "url = \"https://hooks.example.com/approved\"\ntimeout_secs = 5\ntrust_roots = \"/etc/countersign/receiver-ca.pem\"";

fn refusal(effect: &str) -> (String, String) {
    match Registry::from_toml_str(&registry(effect)) {
        Err(RegistryError::InvalidField {
            operation,
            field,
            reason,
        }) => {
            assert_eq!(operation, "hook.send");
            (field, reason)
        }
        other => panic!("expected an InvalidField refusal, got {other:?}"),
    }
}

#[test]
fn a_valid_https_webhook_loads_with_the_default_statuses() {
    let registry = Registry::from_toml_str(&registry(HTTPS)).unwrap();
    let op = registry.get("hook.send").unwrap();
    let Effect::Webhook(effect::Webhook {
        url,
        timeout_secs,
        accept_status,
        trust_roots,
        allow_plain_http_loopback,
    }) = &op.effect
    else {
        panic!("a webhook effect");
    };
    assert_eq!(url, "https://hooks.example.com/approved");
    assert_eq!(*timeout_secs, 5);
    assert_eq!(accept_status, &DEFAULT_ACCEPT_STATUS.to_vec());
    assert_eq!(
        trust_roots.as_deref(),
        Some(std::path::Path::new("/etc/countersign/receiver-ca.pem"))
    );
    assert!(!allow_plain_http_loopback);
}

#[test]
fn omitting_the_default_statuses_does_not_change_the_contract_revision() {
    let implicit = Registry::from_toml_str(&registry(HTTPS)).unwrap();
    let explicit = Registry::from_toml_str(&registry(&format!(
        "{HTTPS}\naccept_status = [200, 201, 202, 204]"
    )))
    .unwrap();
    let other =
        Registry::from_toml_str(&registry(&format!("{HTTPS}\naccept_status = [200]"))).unwrap();
    let rev = |r: &Registry| r.get("hook.send").unwrap().contract_revision().to_owned();
    assert_eq!(rev(&implicit), rev(&explicit));
    assert_ne!(rev(&implicit), rev(&other));
}

#[test]
fn plain_http_loads_only_to_loopback_and_only_when_allowed() {
    for url in [
        "http://127.0.0.1:8080/hook",
        "http://127.0.0.2/hook",
        "http://[::1]:9000/",
    ] {
        let effect = format!("url = \"{url}\"\ntimeout_secs = 5\nallow_plain_http_loopback = true");
        assert!(
            Registry::from_toml_str(&registry(&effect)).is_ok(),
            "{url} should load"
        );
    }
}

#[test]
fn refuses_plain_http_without_the_loopback_flag() {
    let (field, reason) = refusal("url = \"http://127.0.0.1:8080/hook\"\ntimeout_secs = 5");
    assert_eq!(field, "effect.url");
    assert!(reason.contains("allow_plain_http_loopback"), "{reason}");
}

#[test]
fn refuses_plain_http_to_a_host_that_is_not_loopback() {
    let (field, reason) = refusal(
        "url = \"http://hooks.example.com/hook\"\ntimeout_secs = 5\nallow_plain_http_loopback = true",
    );
    assert_eq!(field, "effect.url");
    assert_eq!(
        reason,
        "plain http:// is allowed only to a loopback IP address (127.0.0.1 or [::1]), not \"hooks.example.com\""
    );
}

/// `localhost` is a name the system resolver answers: where it answers
/// `::1` first, another local user listening on `[::1]:<port>` gets the
/// request and its proof. Only a loopback IP literal is a loopback target.
#[test]
fn refuses_plain_http_to_localhost_naming_the_loopback_address_to_write() {
    for host in ["localhost", "LOCALHOST", "localhost.", "hooks.localhost"] {
        let (field, reason) = refusal(&format!(
            "url = \"http://{host}:8080/hook?x=1\"\ntimeout_secs = 5\nallow_plain_http_loopback = true"
        ));
        assert_eq!(field, "effect.url");
        assert_eq!(
            reason,
            format!(
                "plain http:// to {host:?} is refused: a name goes to the system resolver, and another local user listening on the address it answers (such as [::1]:8080) would receive the request; write the loopback address, http://127.0.0.1:8080/hook?x=1 (or http://[::1]:8080/hook?x=1 if the receiver listens there)"
            )
        );
    }
    for literal in ["127.0.0.1", "127.0.0.2", "[::1]"] {
        let url = WebhookUrl::parse(&format!("http://{literal}:8080/hook")).unwrap();
        assert!(url.is_loopback(), "{literal}");
        assert_eq!(url.plain_http_refusal(), None, "{literal}");
    }
    assert!(
        !WebhookUrl::parse("http://localhost:8080/")
            .unwrap()
            .is_loopback()
    );
}

#[test]
fn refuses_the_loopback_flag_on_an_https_url() {
    let (field, _) = refusal(&format!("{HTTPS}\nallow_plain_http_loopback = true"));
    assert_eq!(field, "effect.allow_plain_http_loopback");
}

#[test]
fn refuses_https_without_trust_roots() {
    let (field, reason) = refusal("url = \"https://hooks.example.com/\"\ntimeout_secs = 5");
    assert_eq!(field, "effect.trust_roots");
    assert!(reason.contains("required"), "{reason}");
}

#[test]
fn refuses_relative_trust_roots() {
    let (field, reason) =
        refusal("url = \"https://hooks.example.com/\"\ntimeout_secs = 5\ntrust_roots = \"ca.pem\"");
    assert_eq!(field, "effect.trust_roots");
    assert!(reason.contains("not an absolute path"), "{reason}");
}

#[test]
fn refuses_trust_roots_on_plain_http() {
    let (field, reason) = refusal(
        "url = \"http://127.0.0.1/\"\ntimeout_secs = 5\nallow_plain_http_loopback = true\ntrust_roots = \"/ca.pem\"",
    );
    assert_eq!(field, "effect.trust_roots");
    assert!(reason.contains("only to an https URL"), "{reason}");
}

#[test]
fn refuses_webhook_timeouts_outside_one_to_three_hundred() {
    for secs in [0, 301] {
        let (field, reason) = refusal(&format!(
            "url = \"https://h.example/\"\ntimeout_secs = {secs}\ntrust_roots = \"/ca.pem\""
        ));
        assert_eq!(field, "effect.timeout_secs");
        assert_eq!(reason, format!("{secs} is outside 1..=300"));
    }
}

#[test]
fn refuses_empty_duplicate_and_non_success_statuses() {
    for (statuses, expected) in [
        ("[]", "must name at least one status"),
        ("[200, 200]", "200 is listed twice"),
        ("[500]", "500 is outside 200..=299"),
        ("[302]", "302 is outside 200..=299"),
    ] {
        let (field, reason) = refusal(&format!("{HTTPS}\naccept_status = {statuses}"));
        assert_eq!(field, "effect.accept_status");
        assert_eq!(reason, expected);
    }
}

#[test]
fn refuses_unknown_and_missing_webhook_keys() {
    for effect in [
        format!("{HTTPS}\nheaders = {{}}"),
        "timeout_secs = 5\ntrust_roots = \"/ca.pem\"".to_owned(),
        "url = \"https://h.example/\"\ntrust_roots = \"/ca.pem\"".to_owned(),
    ] {
        let err = Registry::from_toml_str(&registry(&effect)).unwrap_err();
        assert!(matches!(err, RegistryError::Toml(_)), "{err:?}");
    }
}

#[test]
fn refuses_malformed_urls_with_a_reason() {
    for (url, expected) in [
        ("ftp://h.example/", "must start with https://"),
        ("HTTPS://h.example/", "must start with https://"),
        ("https://user:pw@h.example/", "user information"),
        ("https://h.example/#frag", "fragment"),
        ("https:///path", "has no host"),
        ("https://h.example:0/", "port \"0\" is not 1..=65535"),
        ("https://h.example:99999/", "is not 1..=65535"),
        ("https://h.example:8a/", "is not 1..=65535"),
        ("https://h_x!.example/", "is not a DNS name"),
        ("https://[::1/", "unclosed ["),
        ("https://[zz]/", "is not an IPv6 address"),
        ("https://h.example/a b", "whitespace or control character"),
        ("https://h.example/é", "non-ASCII"),
    ] {
        let (field, reason) = refusal(&format!(
            "url = \"{url}\"\ntimeout_secs = 5\ntrust_roots = \"/ca.pem\""
        ));
        assert_eq!(field, "effect.url", "{url}");
        assert!(reason.contains(expected), "{url}: {reason}");
    }
    let long = format!("https://h.example/{}", "a".repeat(2048));
    assert!(
        WebhookUrl::parse(&long)
            .unwrap_err()
            .contains("longer than")
    );
}

#[test]
fn a_parsed_url_knows_its_parts() {
    let url = WebhookUrl::parse("https://hooks.example.com/a/b?x=1").unwrap();
    assert!(url.is_https());
    assert_eq!(url.host(), "hooks.example.com");
    assert_eq!(url.port(), 443);
    assert_eq!(url.path_and_query(), "/a/b?x=1");
    assert_eq!(url.authority(), "hooks.example.com:443");
    assert!(!url.is_loopback());

    let url = WebhookUrl::parse("http://[::1]:8080?q").unwrap();
    assert_eq!(url.host(), "::1");
    assert_eq!(url.port(), 8080);
    assert_eq!(url.path_and_query(), "/?q");
    assert_eq!(url.authority(), "[::1]:8080");
    assert!(url.is_loopback());
}

#[test]
fn a_webhook_call_leads_with_its_method_url_and_exact_body() {
    let registry = Registry::from_toml_str(&registry(HTTPS)).unwrap();
    let op = registry.get("hook.send").unwrap();
    let args = op
        .validate_arguments(br#"{"target":"db\nPOST https://evil.example"}"#)
        .unwrap();
    let action = op.action(&args);
    assert_eq!(action.summary, "POST https://hooks.example.com/approved");
    let parts: Vec<(&str, &str)> = action
        .parts
        .iter()
        .map(|p| (p.label.as_str(), p.text.as_str()))
        .collect();
    assert_eq!(
        parts,
        [
            ("Method", "POST"),
            ("URL", "https://hooks.example.com/approved"),
            // The body is the canonical JSON sent, escapes and all.
            ("Body", r#"{"target":"db\nPOST https://evil.example"}"#),
        ]
    );
    assert!(action.parts.iter().all(|p| !p.model_supplied));
}
