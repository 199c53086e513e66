//! Generates tests/vectors/countersign-v1.json: countersign's own proof
//! vectors, from fixed keys, times and nonces. One valid case plus at least
//! one case per refusal kind, each checked against `verify` before writing.
//!
//! `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-signer --test countersign_vectors`
//! rewrites the file; without it this test FAILS if regeneration would change it.
#![allow(clippy::unwrap_used)]

#[path = "../../verifier/tests/support/countersign_case.rs"]
mod countersign_case;

use countersign_signer::issue::{footer, sign_claims};
use countersign_signer::key::ProofKey;
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::claims::ISSUER;
use countersign_verifier::{AuthMethod, Claims, PasskeyAssurance, Refusal, paseto, timestamp};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use time::{Duration, OffsetDateTime};

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/vectors/countersign-v1.json"
);
const SEED: [u8; 32] = *b"countersign test vector key #1!!";
const STRANGER_SEED: [u8; 32] = *b"countersign test vector stranger";
const MAX_LIFETIME_SECS: i64 = 1800;

fn t(s: &str) -> OffsetDateTime {
    timestamp::parse(s).unwrap()
}

fn base_claims() -> Claims {
    let args = json!({"cron": "0 3 * * *", "description": "nightly backup", "name": "backup"});
    Claims {
        iss: ISSUER.into(),
        aud: "countersign-test".into(),
        sub: "pr_00112233445566778899aabbccddeeff".into(),
        sid: "session-1".into(),
        pid: "prop_ffeeddccbbaa99887766554433221100".into(),
        op: "schedule.create".into(),
        args_sha256: sha256_hex(to_canonical(&args).unwrap().as_bytes()),
        args,
        crev: sha256_hex(b"contract revision"),
        prev: sha256_hex(b"policy revision"),
        grant: None,
        prov: "human:cert:pr_00112233445566778899aabbccddeeff".into(),
        jti: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8".into(),
        iat: t("2026-01-01T00:00:00Z"),
        nbf: t("2026-01-01T00:00:00Z"),
        exp: t("2026-01-01T00:05:00Z"),
        passkey: None,
        premise: None,
    }
}

/// `base_claims()` with passkey assurance: `amr` `["passkey-uv"]` and the
/// hash of a fixed credential id as `pkh`.
fn passkey_claims() -> Claims {
    let mut c = base_claims();
    c.passkey = Some(
        PasskeyAssurance::for_credential(
            vec![AuthMethod::PasskeyUv],
            b"countersign test vector credential",
        )
        .unwrap(),
    );
    c
}

/// The verifier's side of a case, as stored in the file.
fn expectations_json(c: &Claims, now: OffsetDateTime) -> Value {
    json!({
        "audience": c.aud, "principal": c.sub, "session": c.sid, "proposal_id": c.pid,
        "operation": c.op, "arguments_sha256": c.args_sha256, "contract_revision": c.crev,
        "policy_revision": c.prev, "now": timestamp::format(now).unwrap(),
        "max_lifetime_secs": MAX_LIFETIME_SECS,
    })
}

/// Signs arbitrary payload/footer bytes with a fixed test key (for crafted cases).
fn raw_token(seed: &[u8; 32], payload: &[u8], footer: &[u8]) -> String {
    let sig = SigningKey::from_bytes(seed).sign(&paseto::signing_input(payload, footer));
    paseto::assemble(payload, &sig.to_bytes(), footer)
}

fn signed(c: &Claims) -> String {
    sign_claims(&ProofKey::from_seed(&SEED), c)
        .unwrap()
        .expose_secret()
        .to_owned()
}

fn generate() -> String {
    let key = ProofKey::from_seed(&SEED);
    let base = base_claims();
    let good = signed(&base);
    let now = base.iat + Duration::seconds(60);
    let exp = |c: &Claims| expectations_json(c, now);
    let payload = base.to_canonical_json().unwrap();
    let kid_footer = footer(&key).unwrap();
    let mut cases: Vec<(&str, String, Value, Option<Refusal>)> =
        vec![("valid", good.clone(), exp(&base), None)];
    let mut add = |name, token, e, r| cases.push((name, token, e, Some(r)));
    // Cases added later go at the end: earlier cases stay byte for byte.
    let mut appended: Vec<(&str, String, Value, Option<Refusal>)> = Vec::new();

    add(
        "malformed_body_too_short",
        "v4.public.AAAA".into(),
        exp(&base),
        Refusal::Malformed,
    );
    add(
        "malformed_missing_footer",
        raw_token(&SEED, payload.as_bytes(), b""),
        exp(&base),
        Refusal::Malformed,
    );
    let mut extra: Value = serde_json::from_str(&payload).unwrap();
    extra["extra"] = json!(1);
    let extra = to_canonical(&extra).unwrap();
    add(
        "malformed_unknown_claim",
        raw_token(&SEED, extra.as_bytes(), kid_footer.as_bytes()),
        exp(&base),
        Refusal::Malformed,
    );
    add(
        "wrong_version_v3",
        good.replacen("v4.", "v3.", 1),
        exp(&base),
        Refusal::WrongVersion,
    );
    add(
        "wrong_purpose_local",
        good.replacen(".public.", ".local.", 1),
        exp(&base),
        Refusal::WrongPurpose,
    );
    let stranger_footer = format!(
        r#"{{"kid":"{}"}}"#,
        countersign_verifier::key_id(&SigningKey::from_bytes(&STRANGER_SEED).verifying_key())
    );
    add(
        "unknown_key_id",
        raw_token(
            &STRANGER_SEED,
            payload.as_bytes(),
            stranger_footer.as_bytes(),
        ),
        exp(&base),
        Refusal::UnknownKeyId,
    );
    add(
        "bad_signature_other_signer",
        raw_token(&STRANGER_SEED, payload.as_bytes(), kid_footer.as_bytes()),
        exp(&base),
        Refusal::BadSignature,
    );
    let spaced = payload.replacen(':', ": ", 1);
    add(
        "non_canonical_claims_whitespace",
        raw_token(&SEED, spaced.as_bytes(), kid_footer.as_bytes()),
        exp(&base),
        Refusal::NonCanonicalClaims,
    );
    let dup = payload.replacen('{', r#"{"aud":"countersign-test","#, 1);
    add(
        "non_canonical_claims_duplicate_key",
        raw_token(&SEED, dup.as_bytes(), kid_footer.as_bytes()),
        exp(&base),
        Refusal::NonCanonicalClaims,
    );

    let mismatch = |f: fn(&mut Claims)| {
        let mut c = base_claims();
        f(&mut c);
        exp(&c)
    };
    add(
        "wrong_audience",
        good.clone(),
        mismatch(|c| c.aud = "elsewhere".into()),
        Refusal::WrongAudience,
    );
    add(
        "wrong_principal",
        good.clone(),
        mismatch(|c| c.sub = "pr_ffffffffffffffffffffffffffffffff".into()),
        Refusal::WrongPrincipal,
    );
    add(
        "wrong_session",
        good.clone(),
        mismatch(|c| c.sid = "session-2".into()),
        Refusal::WrongSession,
    );
    add(
        "proposal_mismatch",
        good.clone(),
        mismatch(|c| c.pid = "prop_00000000000000000000000000000000".into()),
        Refusal::ProposalMismatch,
    );
    add(
        "operation_mismatch",
        good.clone(),
        mismatch(|c| c.op = "schedule.delete".into()),
        Refusal::OperationMismatch,
    );
    add(
        "arguments_mismatch",
        good.clone(),
        mismatch(|c| c.args_sha256 = sha256_hex(b"{}")),
        Refusal::ArgumentsMismatch,
    );
    add(
        "contract_revision_mismatch",
        good.clone(),
        mismatch(|c| c.crev = sha256_hex(b"other")),
        Refusal::ContractRevisionMismatch,
    );
    add(
        "policy_revision_mismatch",
        good.clone(),
        mismatch(|c| c.prev = sha256_hex(b"other")),
        Refusal::PolicyRevisionMismatch,
    );
    let mut tampered_args = base_claims();
    tampered_args.args =
        json!({"cron": "* * * * *", "description": "nightly backup", "name": "backup"});
    add(
        "arguments_not_matching_their_hash",
        signed(&tampered_args),
        exp(&base),
        Refusal::ArgumentsMismatch,
    );

    add(
        "expired_at_exp",
        good.clone(),
        expectations_json(&base, base.exp),
        Refusal::Expired,
    );
    let mut long = base_claims();
    long.exp = long.iat + Duration::seconds(MAX_LIFETIME_SECS + 61);
    add(
        "lifetime_too_long",
        signed(&long),
        exp(&long),
        Refusal::LifetimeTooLong,
    );
    let mut later = base_claims();
    later.nbf = later.iat + Duration::seconds(120);
    add(
        "not_yet_valid",
        signed(&later),
        exp(&later),
        Refusal::NotYetValid,
    );

    // Passkey assurance: the optional `amr` and `pkh` claims, together.
    let passkey = passkey_claims();
    appended.push(("valid_with_passkey", signed(&passkey), exp(&passkey), None));
    let passkey_payload: Value =
        serde_json::from_str(&passkey.to_canonical_json().unwrap()).unwrap();
    let crafted = |edit: fn(&mut Value)| {
        let mut payload = passkey_payload.clone();
        edit(&mut payload);
        let payload = to_canonical(&payload).unwrap();
        raw_token(&SEED, payload.as_bytes(), kid_footer.as_bytes())
    };
    appended.push((
        "malformed_amr_without_pkh",
        crafted(|p| drop(p.as_object_mut().unwrap().remove("pkh"))),
        exp(&passkey),
        Some(Refusal::Malformed),
    ));
    appended.push((
        "malformed_amr_unknown_method",
        crafted(|p| p["amr"] = json!(["passkey-uv", "otp"])),
        exp(&passkey),
        Some(Refusal::Malformed),
    ));
    cases.extend(appended);

    let public_key = hex::encode(key.verifying_key().as_bytes());
    let mut out = Vec::new();
    for (name, token, expectations, refusal) in cases {
        let mut case = json!({
            "name": name,
            "token": token,
            "public_key": public_key,
            "expectations": expectations,
            "expected": refusal.map_or("ok", |r| r.code()),
        });
        if name == "valid_with_passkey" {
            case["passkey_verified"] = json!(true);
        }
        assert_eq!(
            countersign_case::expected(&case),
            refusal.map_or(Ok(()), Err)
        );
        assert_eq!(
            countersign_case::run(&case),
            countersign_case::expected(&case),
            "case {name} does not give its expected result"
        );
        out.push(case);
    }
    let doc = json!({
        "description": "countersign proof v1 vectors: PASETO v4.public proofs with canonical-JSON claims; `expected` is `ok` or a Refusal::code(); `passkey_verified`, where present, is whether the verified claims carry `amr` with `passkey-uv`. Generated by signer/tests/countersign_vectors.rs.",
        "key_id": key.key_id(),
        "cases": out,
    });
    format!("{}\n", serde_json::to_string_pretty(&doc).unwrap())
}

#[test]
fn vectors_cover_every_refusal_kind() {
    let doc: Value = serde_json::from_str(&generate()).unwrap();
    let codes: Vec<&str> = doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["expected"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"ok"));
    for r in Refusal::ALL {
        assert!(codes.contains(&r.code()), "no vector for {}", r.code());
    }
}

#[test]
fn committed_vectors_match_the_generator() {
    let fresh = generate();
    if std::env::var("COUNTERSIGN_REGENERATE").as_deref() == Ok("1") {
        std::fs::write(PATH, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        committed == fresh,
        "{PATH} is stale or missing; regenerate with \
         COUNTERSIGN_REGENERATE=1 cargo test -p countersign-signer --test countersign_vectors"
    );
}
