//! `verify`: every refusal path that is about order, boundaries or footers.
//! (One case per refusal kind also lives in tests/vectors/countersign-v1.json.)
#![allow(clippy::unwrap_used)]

use countersign_verifier::canonical::sha256_hex;
use countersign_verifier::verify::DEFAULT_MAX_LIFETIME;
use countersign_verifier::{Claims, Expectations, KeyRing, Proof, Refusal, key_id, verify};
use ed25519_dalek::{SigningKey, VerifyingKey};
use time::{Duration, OffsetDateTime};

#[path = "support/fixture.rs"]
mod fixture;
use fixture::*;

fn sign(c: &Claims) -> Proof {
    let key = signing_key();
    let footer = kid_footer(&key.verifying_key());
    sign_raw(
        &key,
        c.to_canonical_json().unwrap().as_bytes(),
        footer.as_bytes(),
    )
}

fn ring() -> KeyRing {
    KeyRing::from_keys([signing_key().verifying_key()])
}

fn expect(c: &Claims, now: OffsetDateTime) -> Expectations<'_> {
    Expectations {
        audience: &c.aud,
        principal: &c.sub,
        session: &c.sid,
        proposal_id: &c.pid,
        operation: &c.op,
        arguments_sha256: &c.args_sha256,
        contract_revision: &c.crev,
        policy_revision: &c.prev,
        now,
        max_lifetime: DEFAULT_MAX_LIFETIME,
    }
}

fn check(proof: &Proof, now: OffsetDateTime) -> Result<(), Refusal> {
    verify(proof, &ring(), &expect(&claims(), now)).map(|_| ())
}

#[test]
fn accepts_a_valid_proof_and_exposes_its_claims_and_hash() {
    let c = claims();
    let proof = sign(&c);
    let v = verify(&proof, &ring(), &expect(&c, t0())).unwrap();
    assert_eq!(v.claims(), &c);
    assert_eq!(
        v.proof_sha256(),
        sha256_hex(proof.expose_secret().as_bytes())
    );
    assert_eq!(v.key_id(), key_id(&signing_key().verifying_key()));
    assert!(!format!("{v:?}").contains(proof.expose_secret()));
}

#[test]
fn key_id_matches_the_paserk_k4_pid_vectors() {
    let mut checked = 0;
    for (pk, pid) in [
        (
            "0000000000000000000000000000000000000000000000000000000000000000",
            "k4.pid.S_XQmeEwHbbvRmiyfXfHYpLGjXGzjTRSDoT1YtTakWFE",
        ),
        (
            "707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f",
            "k4.pid.9ShR3xc8-qVJ_di0tc9nx0IDIqbatdeM2mqLFBJsKRHs",
        ),
        (
            "707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e90",
            "k4.pid.-nyvbaTz8U6TQz7OZWW-iB3va31iAxIpUgzUcVQVmW9A",
        ),
    ] {
        let bytes: [u8; 32] = hex::decode(pk).unwrap().try_into().unwrap();
        // These vector keys are not necessarily valid curve points; skip any that is not.
        if let Ok(key) = VerifyingKey::from_bytes(&bytes) {
            assert_eq!(key_id(&key), pid);
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn expiry_is_strict_and_has_no_skew() {
    let proof = sign(&claims());
    let exp = claims().exp;
    assert_eq!(check(&proof, exp - Duration::seconds(1)), Ok(()));
    assert_eq!(check(&proof, exp), Err(Refusal::Expired));
    assert_eq!(
        check(&proof, exp + Duration::seconds(1)),
        Err(Refusal::Expired)
    );
}

#[test]
fn refuses_proof_used_before_not_before() {
    let mut c = claims();
    c.nbf = c.iat + Duration::seconds(10);
    let proof = sign(&c);
    let e = |now| verify(&proof, &ring(), &expect(&c, now)).map(|_| ());
    assert_eq!(e(c.nbf - Duration::seconds(1)), Err(Refusal::NotYetValid));
    assert_eq!(e(c.nbf), Ok(()));
}

#[test]
fn lifetime_ceiling_allows_sixty_seconds_of_skew_only() {
    let mut c = claims();
    c.exp = c.iat + DEFAULT_MAX_LIFETIME + Duration::seconds(60);
    let proof = sign(&c);
    assert!(verify(&proof, &ring(), &expect(&c, t0())).is_ok());
    c.exp += Duration::seconds(1);
    let proof = sign(&c);
    let refused = verify(&proof, &ring(), &expect(&c, t0()));
    assert_eq!(refused.unwrap_err(), Refusal::LifetimeTooLong);
    let mut tight = expect(&c, t0());
    tight.max_lifetime = Duration::seconds(60);
    let short = sign(&claims());
    assert_eq!(
        verify(&short, &ring(), &tight).unwrap_err(),
        Refusal::LifetimeTooLong
    );
}

#[test]
fn refuses_each_binding_mismatch_in_order() {
    let c = claims();
    let proof = sign(&c);
    let other = "x".repeat(64);
    type Set = fn(&mut Expectations<'_>, &'static str);
    let cases: [(Set, Refusal); 8] = [
        (|e, v| e.audience = v, Refusal::WrongAudience),
        (|e, v| e.principal = v, Refusal::WrongPrincipal),
        (|e, v| e.session = v, Refusal::WrongSession),
        (|e, v| e.proposal_id = v, Refusal::ProposalMismatch),
        (|e, v| e.operation = v, Refusal::OperationMismatch),
        (|e, v| e.arguments_sha256 = v, Refusal::ArgumentsMismatch),
        (
            |e, v| e.contract_revision = v,
            Refusal::ContractRevisionMismatch,
        ),
        (
            |e, v| e.policy_revision = v,
            Refusal::PolicyRevisionMismatch,
        ),
    ];
    let other: &'static str = Box::leak(other.into_boxed_str());
    for (set, refusal) in cases {
        let mut e = expect(&c, t0());
        set(&mut e, other);
        assert_eq!(verify(&proof, &ring(), &e).unwrap_err(), refusal);
    }
    // Several mismatches: the first in check order wins, and binding precedes time.
    let mut e = expect(&c, c.exp);
    e.session = other;
    e.policy_revision = other;
    assert_eq!(
        verify(&proof, &ring(), &e).unwrap_err(),
        Refusal::WrongSession
    );
}

#[test]
fn refuses_footers_other_than_exactly_one_canonical_kid() {
    let key = signing_key();
    let payload = claims().to_canonical_json().unwrap();
    let kid = key_id(&key.verifying_key());
    for footer in [
        String::new(),
        format!(r#"{{ "kid":"{kid}"}}"#),
        format!(r#"{{"kid":"{kid}","x":1}}"#),
        format!(r#"{{"kid":"{kid}","kid":"{kid}"}}"#),
        format!(r#"["{kid}"]"#),
        r#"{"kid":"zVhMiPBP9fRf2snEcT7gFTioeA9COcNy9DfgL1W60haN"}"#.to_owned(),
        kid.clone(),
    ] {
        let proof = sign_raw(&key, payload.as_bytes(), footer.as_bytes());
        assert_eq!(check(&proof, t0()), Err(Refusal::Malformed), "{footer}");
    }
}

#[test]
fn refuses_proof_signed_by_unknown_key() {
    let stranger = SigningKey::from_bytes(&[7u8; 32]);
    let footer = kid_footer(&stranger.verifying_key());
    let payload = claims().to_canonical_json().unwrap();
    let proof = sign_raw(&stranger, payload.as_bytes(), footer.as_bytes());
    assert_eq!(check(&proof, t0()), Err(Refusal::UnknownKeyId));
    assert_eq!(
        verify(&proof, &KeyRing::new(), &expect(&claims(), t0())).unwrap_err(),
        Refusal::UnknownKeyId
    );
}

#[test]
fn refuses_proof_naming_a_trusted_key_but_signed_by_another() {
    let stranger = SigningKey::from_bytes(&[7u8; 32]);
    let footer = kid_footer(&signing_key().verifying_key());
    let payload = claims().to_canonical_json().unwrap();
    let proof = sign_raw(&stranger, payload.as_bytes(), footer.as_bytes());
    assert_eq!(check(&proof, t0()), Err(Refusal::BadSignature));
}

#[test]
fn refuses_validly_signed_non_canonical_payload() {
    let key = signing_key();
    let footer = kid_footer(&key.verifying_key());
    let pretty = serde_json::to_string_pretty(
        &serde_json::from_str::<serde_json::Value>(&claims().to_canonical_json().unwrap()).unwrap(),
    )
    .unwrap();
    let proof = sign_raw(&key, pretty.as_bytes(), footer.as_bytes());
    assert_eq!(check(&proof, t0()), Err(Refusal::NonCanonicalClaims));
}

#[test]
fn key_ring_reports_its_ids() {
    let mut ring = KeyRing::new();
    assert!(ring.is_empty());
    let kid = ring.insert(signing_key().verifying_key());
    assert_eq!(ring.key_ids().collect::<Vec<_>>(), vec![kid.as_str()]);
    assert_eq!(ring.get(&kid), Some(&signing_key().verifying_key()));
    assert_eq!(ring.len(), 1);
}
