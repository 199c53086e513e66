//! Runs one case of tests/vectors/countersign-v1.json through `verify`.
//! Shared (via `#[path]`) by the verifier's vector test and the signer's generator,
//! so the file is read back exactly the way it is checked.

use countersign_verifier::{Expectations, KeyRing, Proof, Refusal, timestamp, verify};
use ed25519_dalek::VerifyingKey;
use serde_json::Value;
use time::Duration;

/// The case's result: `Ok(())` or the refusal. A case that names
/// `passkey_verified` must verify with exactly that passkey assurance.
pub(crate) fn run(case: &Value) -> Result<(), Refusal> {
    let pk: [u8; 32] = hex::decode(case["public_key"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let keys = KeyRing::from_keys([VerifyingKey::from_bytes(&pk).unwrap()]);
    let e = &case["expectations"];
    let s = |k: &str| e[k].as_str().unwrap();
    let expect = Expectations {
        audience: s("audience"),
        principal: s("principal"),
        session: s("session"),
        proposal_id: s("proposal_id"),
        operation: s("operation"),
        arguments_sha256: s("arguments_sha256"),
        contract_revision: s("contract_revision"),
        policy_revision: s("policy_revision"),
        now: timestamp::parse(s("now")).unwrap(),
        max_lifetime: Duration::seconds(e["max_lifetime_secs"].as_i64().unwrap()),
    };
    let proof = Proof::from_text(case["token"].as_str().unwrap().to_owned()).unwrap();
    let verified = verify(&proof, &keys, &expect)?;
    if let Some(passkey_verified) = case.get("passkey_verified") {
        assert_eq!(
            Some(verified.claims().passkey_verified()),
            passkey_verified.as_bool(),
            "{}",
            case["name"]
        );
    }
    Ok(())
}

/// The result a case's `expected` field names.
pub(crate) fn expected(case: &Value) -> Result<(), Refusal> {
    match case["expected"].as_str().unwrap() {
        "ok" => Ok(()),
        code => Err(Refusal::from_code(code).unwrap()),
    }
}
