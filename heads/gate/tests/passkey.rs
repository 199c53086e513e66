//! Operations that require a passkey (`require_passkey = true`): the gate
//! executes only a proof whose claims say the signer checked a passkey
//! assertion with user verification (`amr` containing `passkey-uv`), and
//! refuses any other genuine proof as `passkey_required` before consuming
//! anything. Proofs are signed here with a fixed test key, as a signer
//! would sign them, and recorded as issued in a real SQLite ledger.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use countersign_gate::{Gate, Outcome, Refused};
use countersign_ledger::{DispositionStatus, IssuanceRecord, Ledger, Proposal, ProposalStatus};
use countersign_registry::{CurrentRegistry, Registry};
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::claims::ISSUER;
use countersign_verifier::{
    AuthMethod, Claims, KeyRing, PasskeyAssurance, Principal, Proof, ProposalId, Session, key_id,
    paseto,
};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::json;
use time::OffsetDateTime;

const AUDIENCE: &str = "countersign-test";
const SESSION: &str = "session-1";

fn session() -> Session {
    Session::parse(SESSION).unwrap()
}
const OPERATION: &str = "schedule.create";

fn policy_revision() -> String {
    sha256_hex(b"policy revision")
}

fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[9u8; 32])
}

/// The default registry, with `schedule.create` requiring a passkey.
fn registry_requiring_a_passkey() -> String {
    let from = "replay_safe = true\npreview = \"Create schedule";
    let text = Registry::default_toml().replacen(
        from,
        "replay_safe = true\nrequire_passkey = true\npreview = \"Create schedule",
        1,
    );
    assert_ne!(text, Registry::default_toml(), "{from:?} not found");
    text
}

/// A gate over a fresh SQLite ledger and the registry `registry_text`.
struct Setup {
    _dir: tempfile::TempDir,
    ledger: Ledger,
    registry: Arc<Registry>,
    gate: Gate,
    principal: String,
}

impl Setup {
    async fn new(registry_text: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        let ledger = Ledger::open(&url).await.unwrap();
        let registry = Registry::from_toml_str(registry_text).unwrap();
        let current = Arc::new(CurrentRegistry::fixed(registry));
        let principal = Principal::from_random([0x11; 16]);
        let gate = Gate::new(
            ledger.clone(),
            Arc::clone(&current),
            KeyRing::from_keys([signing_key().verifying_key()]),
            principal.clone(),
            AUDIENCE.into(),
            policy_revision(),
            time::Duration::seconds(1800),
        );
        Setup {
            _dir: dir,
            ledger,
            registry: current.last_loaded(),
            principal: principal.as_str().to_owned(),
            gate,
        }
    }

    /// Proposal `n` of `schedule.create`, approved: the proposal and the
    /// issuance are recorded, and the proof (with `passkey`, if any) is
    /// returned with the proposal id.
    async fn approved(&self, n: u32, passkey: Option<PasskeyAssurance>) -> (ProposalId, Proof) {
        let args = json!({"name": format!("nightly-{n}"), "cron": "0 3 * * *"});
        let arguments_json = to_canonical(&args).unwrap();
        let now = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
        let operation = self.registry.get(OPERATION).unwrap();
        let proposal = Proposal {
            id: ProposalId::parse(format!("prop_{n:032x}")).unwrap(),
            principal: Principal::parse(self.principal.as_str()).unwrap(),
            session: session(),
            operation: OPERATION.into(),
            arguments_sha256: sha256_hex(arguments_json.as_bytes()),
            arguments_json,
            contract_revision: operation.contract_revision().to_owned(),
            policy_revision: policy_revision(),
            note: "note".into(),
            preview: "preview".into(),
            created_at: now,
            premise: None,
            decide_by: None,
            policy: None,
        };
        self.ledger.insert_proposal(&proposal).await.unwrap();
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            sub: proposal.principal.to_string(),
            sid: proposal.session.to_string(),
            pid: proposal.id.to_string(),
            op: proposal.operation.clone(),
            args,
            args_sha256: proposal.arguments_sha256.clone(),
            crev: proposal.contract_revision.clone(),
            prev: proposal.policy_revision.clone(),
            grant: None,
            prov: format!("human:cert:{}", proposal.principal),
            jti: format!("{n:0>42}A"),
            iat: now,
            nbf: now,
            exp: now + time::Duration::seconds(300),
            passkey,
            premise: None,
        };
        let proof = sign(&claims);
        self.ledger
            .record_approval(&IssuanceRecord::from_claims(&claims, &proof))
            .await
            .unwrap();
        (proposal.id, proof)
    }

    /// The kinds of the events recorded for `proposal_id`, oldest first.
    async fn event_kinds(&self, proposal_id: &str) -> Vec<String> {
        self.ledger
            .events()
            .await
            .unwrap()
            .into_iter()
            .filter(|e| e.proposal_id.as_deref() == Some(proposal_id))
            .map(|e| e.kind)
            .collect()
    }

    async fn status(&self, proposal_id: &str) -> ProposalStatus {
        self.ledger
            .proposal(proposal_id)
            .await
            .unwrap()
            .unwrap()
            .status
    }
}

fn sign(claims: &Claims) -> Proof {
    let key = signing_key();
    let payload = claims.to_canonical_json().unwrap();
    let footer = to_canonical(&json!({"kid": key_id(&key.verifying_key())})).unwrap();
    let signature = key
        .sign(&paseto::signing_input(
            payload.as_bytes(),
            footer.as_bytes(),
        ))
        .to_bytes();
    Proof::from_text(paseto::assemble(
        payload.as_bytes(),
        &signature,
        footer.as_bytes(),
    ))
    .unwrap()
}

fn passkey_uv() -> PasskeyAssurance {
    PasskeyAssurance::for_credential(vec![AuthMethod::PasskeyUv], b"test credential id").unwrap()
}

#[tokio::test]
async fn refuses_a_proof_without_passkey_assurance_and_consumes_nothing() {
    let s = Setup::new(&registry_requiring_a_passkey()).await;
    assert!(s.registry.get(OPERATION).unwrap().requires_passkey());
    let (id, proof) = s.approved(1, None).await;

    let outcome = s.gate.execute(&id, &session(), &proof).await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Refused(Refused::PasskeyRequired(OPERATION.into()))
    );
    let Outcome::Refused(refused) = &outcome else {
        unreachable!()
    };
    assert_eq!(refused.code(), "passkey_required");
    assert!(
        outcome.summary().ends_with("nothing was applied"),
        "{}",
        outcome.summary()
    );

    // Nothing consumed: the proposal is still approved (its nonce unburned),
    // no disposition, no intent or completion event, no schedule created.
    assert_eq!(s.status(&id).await, ProposalStatus::Approved);
    assert_eq!(s.ledger.disposition(&id).await.unwrap(), None);
    assert_eq!(s.event_kinds(&id).await, ["proposed", "approved"]);
    assert_eq!(s.ledger.state(&s.principal, "schedules").await.unwrap(), []);

    // Presenting it again gets the same refusal, not "already used".
    let again = s.gate.execute(&id, &session(), &proof).await.unwrap();
    assert_eq!(again, outcome);
    assert_eq!(s.status(&id).await, ProposalStatus::Approved);
}

#[tokio::test]
async fn applies_a_proof_with_passkey_uv_exactly_once() {
    let s = Setup::new(&registry_requiring_a_passkey()).await;
    let (id, proof) = s.approved(2, Some(passkey_uv())).await;

    let outcome = s.gate.execute(&id, &session(), &proof).await.unwrap();
    assert!(outcome.applied_now(), "{outcome:?}");
    assert_eq!(s.status(&id).await, ProposalStatus::Applied);
    let schedules = s.ledger.state(&s.principal, "schedules").await.unwrap();
    assert_eq!(schedules.len(), 1, "{schedules:?}");

    let again = s.gate.execute(&id, &session(), &proof).await.unwrap();
    let Outcome::Recorded(disposition) = again else {
        panic!("a second execution must answer the recorded result: {again:?}")
    };
    assert_eq!(disposition.status, DispositionStatus::Applied);
    let kinds = s.event_kinds(&id).await;
    assert_eq!(
        kinds.iter().filter(|k| *k == "intent").count(),
        1,
        "{kinds:?}"
    );
}

#[tokio::test]
async fn an_operation_that_does_not_require_a_passkey_accepts_either_proof() {
    let s = Setup::new(Registry::default_toml()).await;
    assert!(!s.registry.get(OPERATION).unwrap().requires_passkey());
    for (n, passkey) in [(3, None), (4, Some(passkey_uv()))] {
        let (id, proof) = s.approved(n, passkey).await;
        let outcome = s.gate.execute(&id, &session(), &proof).await.unwrap();
        assert!(outcome.applied_now(), "{n}: {outcome:?}");
    }
}
