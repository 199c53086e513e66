//! Policy values, their revision, proof lifetimes and decision windows.
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
        decision_window_secs: 3600,
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
        decision_window_secs: 3600,
    };
    assert_eq!(p.revision(), "invalid-policy");
}

#[test]
fn the_decision_window_is_the_operations_else_the_policys_and_binds_no_revision() {
    let toml = Registry::default_toml().replacen(
        "replay_safe = true\n",
        "replay_safe = true\ndecision_window_secs = 900\n",
        1,
    );
    let windowed = Registry::from_toml_str(&toml).unwrap();
    let plain = Registry::from_toml_str(Registry::default_toml()).unwrap();
    let short = windowed.get("schedule.create").unwrap();
    let other = windowed.get("schedule.pause").unwrap();
    assert_eq!(short.decision_window_secs, Some(900));
    let p = policy(300, 1800);
    assert_eq!(p.decision_window_secs, Policy::DEFAULT_DECISION_WINDOW_SECS);
    assert_eq!(Policy::DEFAULT_DECISION_WINDOW_SECS, 3600);
    assert_eq!(p.decision_window_for(short), 900);
    assert_eq!(p.decision_window_for(other), 3600);
    let hour_and_a_half = p.clone().with_decision_window(5400).unwrap();
    assert_eq!(hour_and_a_half.decision_window_for(other), 5400);
    assert_eq!(hour_and_a_half.decision_window_for(short), 900);
    // A window shapes no proof: neither the policy's revision nor the
    // operation's contract revision moves with it.
    assert_eq!(hour_and_a_half.revision(), p.revision());
    assert_eq!(
        short.contract_revision(),
        plain.get("schedule.create").unwrap().contract_revision()
    );
}

#[test]
fn refuses_a_decision_window_of_zero_or_over_seven_days() {
    for secs in [0, 604_801] {
        assert_eq!(
            policy(300, 1800).with_decision_window(secs).unwrap_err(),
            PolicyError::DecisionWindowOutOfRange {
                value: secs,
                cap: 604_800
            }
        );
        let toml = Registry::default_toml().replacen(
            "replay_safe = true\n",
            &format!("replay_safe = true\ndecision_window_secs = {secs}\n"),
            1,
        );
        let refused = Registry::from_toml_str(&toml).unwrap_err().to_string();
        assert!(
            refused.contains("decision_window_secs") && refused.contains("outside 1..=604800"),
            "{refused}"
        );
    }
    assert!(policy(300, 1800).with_decision_window(604_800).is_ok());
}
