//! Policy values, their revision, and proof lifetimes.
#![allow(clippy::unwrap_used)]

use countersign_registry::{Policy, PolicyError, Registry};
use countersign_verifier::canonical;

fn policy(default: u64, max: u64) -> Policy {
    Policy::new("countersign-local", default, max).unwrap()
}

#[test]
fn revision_is_the_hash_of_the_canonical_policy_object() {
    let p = policy(300, 1800);
    let text =
        r#"{"audience":"countersign-local","default_lifetime_secs":300,"max_lifetime_secs":1800}"#;
    assert_eq!(p.revision(), canonical::sha256_hex(text.as_bytes()));
    assert_ne!(p.revision(), policy(301, 1800).revision());
    assert_ne!(p.revision(), policy(300, 1799).revision());
    let other = Policy::new("other", 300, 1800).unwrap();
    assert_ne!(p.revision(), other.revision());
}

#[test]
fn lifetime_is_the_operations_or_the_default_capped_at_the_maximum() {
    let toml = Registry::default_toml().replacen(
        "replay_safe = true\n",
        "replay_safe = true\nlifetime_secs = 900\n",
        1,
    );
    let registry = Registry::from_toml_str(&toml).unwrap();
    let long = registry.get("schedule.create").unwrap();
    let plain = registry.get("schedule.pause").unwrap();
    assert_eq!(long.lifetime_secs, Some(900));
    assert_eq!(policy(300, 1800).lifetime_for(long), 900);
    assert_eq!(policy(300, 600).lifetime_for(long), 600);
    assert_eq!(policy(300, 1800).lifetime_for(plain), 300);
    assert_eq!(policy(120, 1800).lifetime_for(plain), 120);
    let unchecked = Policy {
        audience: "a".into(),
        default_lifetime_secs: 5000,
        max_lifetime_secs: 9000,
    };
    assert_eq!(unchecked.lifetime_for(plain), 1800);
}

#[test]
fn refuses_zero_and_over_cap_lifetimes() {
    for (default, max, field, value) in [
        (0, 1800, "default_lifetime_secs", 0),
        (300, 0, "max_lifetime_secs", 0),
        (1801, 1801, "default_lifetime_secs", 1801),
        (300, 1801, "max_lifetime_secs", 1801),
    ] {
        assert_eq!(
            Policy::new("aud", default, max).unwrap_err(),
            PolicyError::LifetimeOutOfRange {
                field,
                value,
                cap: 1800
            }
        );
    }
    assert_eq!(
        Policy::new("aud", 600, 300).unwrap_err(),
        PolicyError::DefaultAboveMax {
            default: 600,
            max: 300
        }
    );
}

#[test]
fn refuses_bad_audiences() {
    for aud in ["", "has space", "tab\t", "é", &"a".repeat(257)] {
        assert_eq!(
            Policy::new(aud, 300, 1800).unwrap_err(),
            PolicyError::BadAudience
        );
    }
}

#[test]
fn an_out_of_range_policy_gets_a_revision_no_valid_policy_has() {
    let p = Policy {
        audience: "a".into(),
        default_lifetime_secs: u64::MAX,
        max_lifetime_secs: 1,
    };
    assert_eq!(p.revision(), "invalid-policy");
}
