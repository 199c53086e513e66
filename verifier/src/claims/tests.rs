//! Unit tests for the claims' canonical form and strict reading.
#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn sample() -> Claims {
    let args = json!({"name": "nightly", "cron": "0 3 * * *"});
    let args_text = canonical::to_canonical(&args).unwrap();
    Claims {
        iss: ISSUER.into(),
        aud: "countersign-local".into(),
        sub: "pr_0123456789abcdef0123456789abcdef".into(),
        sid: "sess-1".into(),
        pid: "prop_0123456789abcdef0123456789abcdef".into(),
        op: "schedule.create".into(),
        args_sha256: canonical::sha256_hex(args_text.as_bytes()),
        args,
        crev: "a".repeat(64),
        prev: "b".repeat(64),
        grant: None,
        prov: "human:cli".into(),
        jti: "A".repeat(43),
        iat: timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
        nbf: timestamp::parse("2026-01-01T00:00:00Z").unwrap(),
        exp: timestamp::parse("2026-01-01T00:05:00Z").unwrap(),
        passkey: None,
        premise: None,
    }
}

fn reread(c: &Claims) -> Result<Claims, Refusal> {
    Claims::from_canonical_json(c.to_canonical_json().unwrap().as_bytes())
}

fn edit(f: impl FnOnce(&mut Map<String, Value>)) -> Result<Claims, Refusal> {
    let text = sample().to_canonical_json().unwrap();
    let Value::Object(mut m) = serde_json::from_str(&text).unwrap() else {
        unreachable!()
    };
    f(&mut m);
    let edited = canonical::to_canonical(&Value::Object(m)).unwrap();
    Claims::from_canonical_json(edited.as_bytes())
}

#[test]
fn canonical_form_round_trips() {
    let c = sample();
    let text = c.to_canonical_json().unwrap();
    assert!(text.starts_with(r#"{"args":{"cron":"0 3 * * *","name":"nightly"},"args_sha256":""#));
    assert!(text.contains(r#""exp":"2026-01-01T00:05:00Z","grant":null,"#));
    assert_eq!(reread(&c).unwrap(), c);
    let mut g = sample();
    g.grant = Some(Grant {
        rule: "nightly-ok".into(),
        version: 3,
    });
    g.prov = "rule:nightly-ok@3".into();
    assert!(
        g.to_canonical_json()
            .unwrap()
            .contains(r#""grant":{"rule":"nightly-ok","version":3}"#)
    );
    assert_eq!(reread(&g).unwrap(), g);
}

#[test]
fn refuses_non_canonical_payload_bytes() {
    let text = sample().to_canonical_json().unwrap();
    let spaced = text.replacen(':', ": ", 1);
    assert_eq!(
        Claims::from_canonical_json(spaced.as_bytes()),
        Err(Refusal::NonCanonicalClaims)
    );
    let dup = text.replacen('{', r#"{"aud":"x","#, 1);
    assert_eq!(
        Claims::from_canonical_json(dup.as_bytes()),
        Err(Refusal::NonCanonicalClaims)
    );
    let newline = format!("{text}\n");
    assert_eq!(
        Claims::from_canonical_json(newline.as_bytes()),
        Err(Refusal::NonCanonicalClaims)
    );
    assert_eq!(
        Claims::from_canonical_json(b"not json"),
        Err(Refusal::NonCanonicalClaims)
    );
}

#[test]
fn refuses_unknown_missing_and_mistyped_fields() {
    assert_eq!(
        edit(|m| drop(m.insert("extra".into(), json!(1)))),
        Err(Refusal::Malformed)
    );
    assert_eq!(edit(|m| drop(m.remove("nbf"))), Err(Refusal::Malformed));
    assert_eq!(
        edit(|m| drop(m.insert("sid".into(), json!(5)))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("args".into(), json!([1])))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("iss".into(), json!("someone")))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("jti".into(), json!("short")))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("crev".into(), json!("A".repeat(64))))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("grant".into(), json!("x")))),
        Err(Refusal::Malformed)
    );
    assert_eq!(Claims::from_canonical_json(b"[]"), Err(Refusal::Malformed));
}

#[test]
fn refuses_a_key_that_is_no_claim_wherever_it_sorts_and_every_missing_claim() {
    // Before the first claim, between two, after the last, and a name
    // that is a claim's prefix or extension.
    for extra in ["aaa", "b", "zzz", "ar", "args_sha2566", "premise"] {
        assert_eq!(
            edit(|m| drop(m.insert(extra.into(), json!("x")))),
            Err(Refusal::Malformed),
            "{extra}"
        );
    }
    for claim in CLAIMS {
        if matches!(claim, "amr" | "pkh" | "prem") {
            continue;
        }
        assert_eq!(
            edit(|m| drop(m.remove(claim))),
            Err(Refusal::Malformed),
            "{claim}"
        );
    }
    // The list is walked in the map's order: it must be in byte order.
    assert!(CLAIMS.is_sorted_by(|a, b| a < b));
    assert!(edit(|_| ()).is_ok());
}

#[test]
fn refuses_timestamps_in_any_other_form() {
    let e = |v: &str| {
        let v = v.to_owned();
        edit(move |m| drop(m.insert("iat".into(), json!(v))))
    };
    assert_eq!(e("2026-01-01T00:00:00+00:00"), Err(Refusal::Malformed));
    assert_eq!(e("2026-01-01T00:00:00.0Z"), Err(Refusal::Malformed));
    assert_eq!(e("2026-01-01T00:00:00Z").unwrap(), sample());
}

#[test]
fn refuses_inconsistent_times() {
    let mut c = sample();
    c.nbf = c.iat - time::Duration::seconds(1);
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    let mut c = sample();
    c.exp = c.nbf;
    assert_eq!(reread(&c), Err(Refusal::Malformed));
}

#[test]
fn refuses_provenance_that_does_not_match_the_grant() {
    let mut c = sample();
    c.prov = "rule:x@1".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.grant = Some(Grant {
        rule: "x".into(),
        version: 2,
    });
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.prov = "human:web".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.grant = None;
    assert!(reread(&c).is_ok());
    c.prov = "human:api".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
}

#[test]
fn certificate_provenance_must_name_the_proofs_own_principal() {
    let mut c = sample();
    c.prov = format!("human:cert:{}", c.sub);
    assert!(reread(&c).is_ok());
    c.prov = "human:cert:pr_00000000000000000000000000000bad".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.prov = "human:cert:".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
}

#[test]
fn accepts_certificate_provenance_naming_a_valid_approver() {
    let mut c = sample();
    for name in ["console", "a", "0", "web-2", &"z".repeat(32)] {
        c.prov = format!("human:cert:{}/{name}", c.sub);
        assert!(reread(&c).is_ok(), "{name:?}");
    }
}

#[test]
fn refuses_certificate_provenance_with_a_bad_approver_name() {
    let mut c = sample();
    let too_long = "z".repeat(33);
    for name in [
        "",
        "-console",
        "Console",
        "con sole",
        "con_sole",
        "con\u{200b}sole",
        "a/b",
        &too_long,
    ] {
        c.prov = format!("human:cert:{}/{name}", c.sub);
        assert_eq!(reread(&c), Err(Refusal::Malformed), "{name:?}");
    }
    c.prov = format!("human:cert:{}console", c.sub);
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.prov = "human:cert:pr_00000000000000000000000000000bad/console".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
}

#[test]
fn accepts_quorum_provenance_naming_distinct_approvers_of_the_principal() {
    let mut c = sample();
    let names: Vec<ApproverName> = ["alice", "bob", "carol"]
        .into_iter()
        .map(|n| ApproverName::parse(n).unwrap())
        .collect();
    c.prov = quorum_provenance(&c.sub, &names);
    assert_eq!(
        c.prov,
        format!("human:quorum:{0}/alice,{0}/bob,{0}/carol", c.sub)
    );
    assert!(reread(&c).is_ok());
    c.prov = quorum_provenance(&c.sub, &names[..1]);
    assert!(reread(&c).is_ok());
    let many: Vec<ApproverName> = (0..MAX_QUORUM_APPROVERS)
        .map(|i| ApproverName::parse(format!("a{i}")).unwrap())
        .collect();
    c.prov = quorum_provenance(&c.sub, &many);
    assert!(reread(&c).is_ok());
}

#[test]
fn refuses_quorum_provenance_that_is_empty_repeated_foreign_or_too_long() {
    let mut c = sample();
    let sub = c.sub.clone();
    let too_many: Vec<String> = (0..=MAX_QUORUM_APPROVERS)
        .map(|i| format!("{sub}/a{i}"))
        .collect();
    for prov in [
        "human:quorum:".to_owned(),
        format!("human:quorum:{sub}/alice,{sub}/alice"),
        format!("human:quorum:{sub}/alice,"),
        format!("human:quorum:{sub}"),
        format!("human:quorum:{sub}/Alice"),
        format!("human:quorum:{sub}/alice,pr_00000000000000000000000000000bad/bob"),
        format!("human:quorum:{sub}/alice;{sub}/bob"),
        format!("human:quorum:{}", too_many.join(",")),
    ] {
        c.prov = prov.clone();
        assert_eq!(reread(&c), Err(Refusal::Malformed), "{prov:?}");
    }
}

#[test]
fn refuses_arguments_that_do_not_match_their_hash() {
    let mut c = sample();
    c.args = json!({"name": "other", "cron": "0 3 * * *"});
    assert_eq!(reread(&c), Err(Refusal::ArgumentsMismatch));
}

#[test]
fn refuses_to_write_fractional_timestamps() {
    let mut c = sample();
    c.exp += time::Duration::milliseconds(5);
    assert_eq!(c.to_canonical_json(), Err(CanonicalError::Timestamp));
}

fn with_passkey() -> Claims {
    let mut c = sample();
    c.passkey = Some(
        PasskeyAssurance::for_credential(vec![AuthMethod::PasskeyUv], b"credential id").unwrap(),
    );
    c
}

/// `with_passkey()`'s payload, edited as a JSON object and re-canonicalized.
fn edit_passkey(f: impl FnOnce(&mut Map<String, Value>)) -> Result<Claims, Refusal> {
    let text = with_passkey().to_canonical_json().unwrap();
    let Value::Object(mut m) = serde_json::from_str(&text).unwrap() else {
        unreachable!()
    };
    f(&mut m);
    let edited = canonical::to_canonical(&Value::Object(m)).unwrap();
    Claims::from_canonical_json(edited.as_bytes())
}

#[test]
fn claims_without_passkey_assurance_are_written_without_amr_or_pkh() {
    let c = sample();
    let text = c.to_canonical_json().unwrap();
    assert!(
        !text.contains("\"amr\"") && !text.contains("\"pkh\""),
        "{text}"
    );
    assert!(!c.passkey_verified());
    assert_eq!(reread(&c).unwrap().passkey, None);
}

#[test]
fn passkey_assurance_round_trips_in_canonical_order() {
    let c = with_passkey();
    let text = c.to_canonical_json().unwrap();
    let pkh = canonical::sha256_hex(b"credential id");
    assert!(
        text.contains(r#""aud":"countersign-local","crev":"#),
        "{text}"
    );
    assert!(
        text.starts_with(r#"{"amr":["passkey-uv"],"args":"#),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            r#""pid":"prop_0123456789abcdef0123456789abcdef","pkh":"{pkh}","prev":"#
        )),
        "{text}"
    );
    let again = reread(&c).unwrap();
    assert_eq!(again, c);
    assert!(again.passkey_verified());
    let passkey = again.passkey.unwrap();
    assert_eq!(passkey.methods(), [AuthMethod::PasskeyUv]);
    assert_eq!(passkey.credential_id_sha256(), pkh);
}

#[test]
fn refuses_amr_without_pkh_and_pkh_without_amr() {
    assert_eq!(
        edit_passkey(|m| drop(m.remove("pkh"))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit_passkey(|m| drop(m.remove("amr"))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("amr".into(), json!(["passkey-uv"])))),
        Err(Refusal::Malformed)
    );
    assert_eq!(
        edit(|m| drop(m.insert("pkh".into(), json!("a".repeat(64))))),
        Err(Refusal::Malformed)
    );
}

#[test]
fn refuses_passkey_assurance_with_an_extra_or_missing_core_claim() {
    assert_eq!(
        edit_passkey(|m| drop(m.insert("extra".into(), json!(1)))),
        Err(Refusal::Malformed)
    );
    // Eighteen fields, but one core claim traded for an unknown one.
    assert_eq!(
        edit_passkey(|m| {
            m.remove("nbf");
            m.insert("extra".into(), json!(1));
        }),
        Err(Refusal::Malformed)
    );
    // Sixteen fields, but two core claims traded for the pair.
    assert_eq!(
        edit_passkey(|m| {
            m.remove("nbf");
            m.remove("sid");
        }),
        Err(Refusal::Malformed)
    );
}

#[test]
fn refuses_amr_that_is_empty_unknown_duplicated_or_mistyped() {
    for amr in [
        json!([]),
        json!(["passkey"]),
        json!(["PASSKEY-UV"]),
        json!(["passkey-uv", "pwd"]),
        json!(["passkey-uv", "passkey-uv"]),
        json!([1]),
        json!([null]),
        json!([["passkey-uv"]]),
        json!("passkey-uv"),
        json!(null),
        json!({"passkey-uv": true}),
    ] {
        let shown = amr.to_string();
        assert_eq!(
            edit_passkey(move |m| drop(m.insert("amr".into(), amr))),
            Err(Refusal::Malformed),
            "{shown}"
        );
    }
}

#[test]
fn refuses_pkh_that_is_not_a_lowercase_sha256_hex() {
    for pkh in [
        json!("A".repeat(64)),
        json!("a".repeat(63)),
        json!("a".repeat(65)),
        json!(""),
        json!(format!("{}g", "a".repeat(63))),
        json!(1),
        json!(null),
    ] {
        let shown = pkh.to_string();
        assert_eq!(
            edit_passkey(move |m| drop(m.insert("pkh".into(), pkh))),
            Err(Refusal::Malformed),
            "{shown}"
        );
    }
}

#[test]
fn passkey_assurance_cannot_be_built_invalid() {
    let pkh = "c".repeat(64);
    assert_eq!(
        PasskeyAssurance::new(vec![], pkh.clone()),
        Err(InvalidPasskeyAssurance::NoMethods)
    );
    assert_eq!(
        PasskeyAssurance::new(vec![AuthMethod::PasskeyUv, AuthMethod::PasskeyUv], pkh),
        Err(InvalidPasskeyAssurance::DuplicateMethod(
            AuthMethod::PasskeyUv
        ))
    );
    assert_eq!(
        PasskeyAssurance::new(vec![AuthMethod::PasskeyUv], "C".repeat(64)),
        Err(InvalidPasskeyAssurance::CredentialHash)
    );
    for method in AuthMethod::ALL {
        assert_eq!(AuthMethod::from_name(method.as_str()), Some(*method));
    }
    assert_eq!(AuthMethod::from_name("passkey"), None);
}

fn with_premise(passkey: bool) -> Claims {
    let mut c = if passkey { with_passkey() } else { sample() };
    c.premise = Some(Premise::State(StatePremise {
        namespace: "schedules".into(),
        key: "nightly".into(),
        value: Some(json!({"state": "active"})),
        version: 12,
    }));
    c
}

#[test]
fn a_premise_round_trips_with_and_without_passkey_assurance() {
    for passkey in [false, true] {
        let c = with_premise(passkey);
        let text = c.to_canonical_json().unwrap();
        assert!(
            text.contains(r#""prem":{"key":"nightly","ns":"schedules","value":{"state":"active"},"version":12},"prev":"#),
            "{text}"
        );
        assert_eq!(reread(&c).unwrap(), c);
    }
    assert!(!sample().to_canonical_json().unwrap().contains("\"prem\""));
}

#[test]
fn refuses_a_malformed_premise_or_a_field_count_that_does_not_add_up() {
    let edit = |c: Claims, f: &dyn Fn(&mut Map<String, Value>)| {
        let text = c.to_canonical_json().unwrap();
        let Value::Object(mut m) = serde_json::from_str(&text).unwrap() else {
            unreachable!()
        };
        f(&mut m);
        let edited = canonical::to_canonical(&Value::Object(m)).unwrap();
        Claims::from_canonical_json(edited.as_bytes())
    };
    // A premise whose value is not an object or null.
    assert_eq!(
        edit(with_premise(false), &|m| {
            m["prem"]["value"] = Value::String("active".into());
        }),
        Err(Refusal::Malformed)
    );
    // A premise and one of the passkey pair: the count matches neither shape.
    assert_eq!(
        edit(with_premise(true), &|m| {
            m.remove("pkh");
        }),
        Err(Refusal::Malformed)
    );
    // Seventeen fields without `prem`.
    assert_eq!(
        edit(sample(), &|m| {
            m.insert("premise".into(), Value::Null);
        }),
        Err(Refusal::Malformed)
    );
}

#[test]
fn refuses_a_grant_with_passkey_assurance() {
    // A rule is not a person's passkey: the signer never writes both, and a
    // payload that has both is refused even under a valid signature.
    let mut c = with_passkey();
    c.grant = Some(Grant {
        rule: "rule_0123456789abcdef0123456789abcdef".into(),
        version: 1,
    });
    c.prov = "rule:rule_0123456789abcdef0123456789abcdef@1".into();
    assert_eq!(reread(&c), Err(Refusal::Malformed));
    c.passkey = None;
    assert_eq!(reread(&c).unwrap(), c);
}

#[test]
fn a_grant_is_read_back_from_exactly_its_provenance() {
    let grant = Grant {
        rule: "rule_0123456789abcdef0123456789abcdef".into(),
        version: 12,
    };
    assert_eq!(
        Grant::from_provenance(&grant.provenance()),
        Some(grant.clone())
    );
    for other in [
        "human:cli",
        "rule:",
        "rule:x@",
        "rule:@1",
        "rule:x@01",
        "rule:x@+1",
        "rule:x y@1",
        "rule:x@1@2",
        "rule:x@18446744073709551616",
    ] {
        assert_eq!(Grant::from_provenance(other), None, "{other:?}");
    }
}
