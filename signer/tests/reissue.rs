//! `ReissueForReconcile`: the proof of an uncertain, replay-safe webhook
//! signed again with the issued claims and a fresh lifetime, and every
//! refusal with its exact reason, recording nothing. On PostgreSQL (the
//! one backend that allows it); its bounds are in `reissue/bounds.rs`.
#![allow(clippy::unwrap_used)]

#[path = "reissue/bounds.rs"]
mod bounds;
mod support;

use countersign_identity::Role;
use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{EffectOutcome, Intent};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{Delivery, ProposeRequest, ReissueForReconcileRequest};
use countersign_signer::testing::TestSigner;
use countersign_verifier::Claims;
use countersign_verifier::canonical::sha256_hex;
use time::{Duration, OffsetDateTime};
use tonic::Code;
use tonic::transport::Channel;

use support::{OTHER_PRINCIPAL, SESSION, approved, client_as, head, reason_of, verified};

/// An operation named `name` with `effect`, taking `{"text": ...}`.
fn operation(name: &str, replay_safe: bool, effect: &str) -> String {
    format!(
        r#"
[[operation]]
name = "{name}"
description = "A note for {name}."
class = "write"
replay_safe = {replay_safe}
preview = "Note {{text}}"

[operation.effect]
{effect}

[operation.schema]
type = "object"
additionalProperties = false
required = ["text"]

[operation.schema.properties.text]
type = "string"
maxLength = 100
"#
    )
}

const WEBHOOK: &str = "kind = \"webhook\"\nurl = \"http://127.0.0.1:9/hook\"\ntimeout_secs = 5\nallow_plain_http_loopback = true";
const COMMAND: &str = "kind = \"command\"\nprogram = \"/bin/true\"\ntimeout_secs = 5";
const ARGS: &str = r#"{"text":"deploy"}"#;

fn registry() -> String {
    [
        operation("hook.safe", true, WEBHOOK),
        operation("hook.unsafe", false, WEBHOOK),
        operation("note.command", true, COMMAND),
    ]
    .concat()
}

/// A signer on a fresh PostgreSQL database: re-issue is refused on SQLite
/// (`bounds::refuses_on_sqlite_where_the_ledger_rows_prove_nothing`). The
/// database is dropped with the returned handle.
async fn start() -> (TestSigner, TempPgDatabase) {
    start_configured("").await
}

async fn start_configured(extra_config: &str) -> (TestSigner, TempPgDatabase) {
    let db = TempPgDatabase::create().await.unwrap();
    let signer = TestSigner::start_configured(&registry(), Some(db.url()), extra_config)
        .await
        .unwrap();
    (signer, db)
}

async fn propose(head: &mut SignerClient<Channel>, operation: &str) -> String {
    head.propose(ProposeRequest {
        operation: operation.into(),
        arguments_json: ARGS.into(),
        session: SESSION.into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    })
    .await
    .unwrap()
    .into_inner()
    .id
}

/// Propose `operation`, approve it directly and record its intent with
/// `lease`, as a head that then lost track of the effect: uncertain.
/// Returns the id, the issued proof's claims and the intent.
async fn uncertain(
    signer: &TestSigner,
    operation: &str,
    lease: Duration,
) -> (String, Claims, Intent) {
    let id = propose(&mut head(signer).await, operation).await;
    let proof = approved(signer, &id, Delivery::Direct).await.proof;
    let verified = verified(signer, &id, &proof).await;
    let claims = verified.claims().clone();
    let intent = match signer
        .state()
        .ledger()
        .begin_consume(&verified, lease)
        .await
        .unwrap()
    {
        countersign_ledger::ConsumeStart::Fresh(intent) => intent,
        other => panic!("{other:?}"),
    };
    (id, claims, intent)
}

fn request(id: &str) -> ReissueForReconcileRequest {
    ReissueForReconcileRequest {
        proposal_id: id.into(),
    }
}

async fn reissued_events(signer: &TestSigner) -> usize {
    signer
        .state()
        .ledger()
        .events()
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == "proof_reissued")
        .count()
}

/// `head` asks for `id`'s proof again: refused with `code` and `grpc`,
/// nothing recorded.
async fn assert_refused(
    signer: &TestSigner,
    head: &mut SignerClient<Channel>,
    id: &str,
    grpc: Code,
    code: &str,
) -> String {
    let status = head.reissue_for_reconcile(request(id)).await.unwrap_err();
    assert_eq!(status.code(), grpc, "{status:?}");
    assert_eq!(reason_of(&status), code, "{status:?}");
    assert_eq!(reissued_events(signer).await, 0);
    status.message().to_owned()
}

#[tokio::test]
async fn reissues_the_issued_claims_with_a_fresh_lifetime_and_records_its_hash() {
    let (signer, _db) = start().await;
    let (id, issued, _intent) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    let issuance = signer
        .state()
        .ledger()
        .proposal(&id)
        .await
        .unwrap()
        .unwrap()
        .issuance
        .unwrap();
    // A second later, so the fresh iat differs from the issued one.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let response = head(&signer)
        .await
        .reissue_for_reconcile(request(&id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.proof_sha256, sha256_hex(response.proof.as_bytes()));
    assert_ne!(response.proof_sha256, issuance.proof_sha256);
    let again = verified(&signer, &id, &response.proof).await;
    let claims = again.claims();
    // Everything but the times is what was issued: the same jti, which
    // the receiver knows as the Idempotency-Key.
    assert_eq!(claims.jti, issued.jti);
    assert!(claims.iat > issued.iat, "{:?} {:?}", claims.iat, issued.iat);
    assert_eq!(claims.exp - claims.iat, issued.exp - issued.iat);
    let same_but_times = Claims {
        iat: issued.iat,
        nbf: issued.nbf,
        exp: issued.exp,
        ..claims.clone()
    };
    assert_eq!(same_but_times, issued);

    // Recorded: the new proof's hash, never the proof; the issuance, the
    // intent and the status are as they were.
    let events = signer.state().ledger().events().await.unwrap();
    let event = events.iter().find(|e| e.kind == "proof_reissued").unwrap();
    assert_eq!(event.proposal_id.as_deref(), Some(id.as_str()));
    assert_eq!(event.actor, signer.principal());
    assert_eq!(event.details["nonce"], issued.jti.as_str());
    assert_eq!(
        event.details["proof_sha256"],
        response.proof_sha256.as_str()
    );
    assert_eq!(event.details["expires_at"], response.expires_at.as_str());
    assert!(
        !format!("{events:?}").contains(&response.proof),
        "no proof in the log"
    );
    let record = signer
        .state()
        .ledger()
        .proposal(&id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "uncertain");
    assert_eq!(record.issuance.unwrap(), issuance);
    assert!(
        signer
            .state()
            .ledger()
            .verify_chain()
            .await
            .unwrap()
            .is_intact()
    );
}

#[tokio::test]
async fn refuses_a_proposal_whose_execution_is_not_uncertain() {
    let (signer, _db) = start().await;
    let mut head = head(&signer).await;
    // Pending: nothing issued.
    let pending = propose(&mut head, "hook.safe").await;
    let message = assert_refused(
        &signer,
        &mut head,
        &pending,
        Code::FailedPrecondition,
        "not_uncertain",
    )
    .await;
    assert_eq!(
        message,
        format!("proposal {pending} is not uncertain; there is nothing to resolve")
    );
    // Approved, never executed: the proof can still be used as issued.
    let approved_only = propose(&mut head, "hook.safe").await;
    approved(&signer, &approved_only, Delivery::Direct).await;
    assert_refused(
        &signer,
        &mut head,
        &approved_only,
        Code::FailedPrecondition,
        "not_uncertain",
    )
    .await;
    // Completed (applied): nothing to re-send.
    let (applied, _, intent) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    signer
        .state()
        .ledger()
        .complete(
            &intent,
            &EffectOutcome::Applied {
                result: serde_json::Value::Null,
            },
        )
        .await
        .unwrap();
    assert_refused(
        &signer,
        &mut head,
        &applied,
        Code::FailedPrecondition,
        "not_uncertain",
    )
    .await;
}

#[tokio::test]
async fn refuses_while_the_executions_lease_runs() {
    let (signer, _db) = start().await;
    let (id, _, _) = uncertain(&signer, "hook.safe", Duration::hours(1)).await;
    let message = assert_refused(
        &signer,
        &mut head(&signer).await,
        &id,
        Code::FailedPrecondition,
        "still_running",
    )
    .await;
    assert!(message.contains("may still be running"), "{message}");
}

#[tokio::test]
async fn refuses_an_operation_that_is_not_a_webhook() {
    let (signer, _db) = start().await;
    let (id, _, _) = uncertain(&signer, "note.command", Duration::ZERO).await;
    let message = assert_refused(
        &signer,
        &mut head(&signer).await,
        &id,
        Code::FailedPrecondition,
        "not_a_webhook",
    )
    .await;
    assert_eq!(
        message,
        "operation \"note.command\" is not a webhook: only a webhook's proof is re-issued for reconcile"
    );
}

#[tokio::test]
async fn refuses_a_webhook_that_is_not_replay_safe() {
    let (signer, _db) = start().await;
    let (id, _, _) = uncertain(&signer, "hook.unsafe", Duration::ZERO).await;
    let message = assert_refused(
        &signer,
        &mut head(&signer).await,
        &id,
        Code::FailedPrecondition,
        "not_replay_safe",
    )
    .await;
    assert_eq!(
        message,
        "operation \"hook.unsafe\" is not replay-safe: its proof is never re-issued, a person resolves it"
    );
}

#[tokio::test]
async fn refuses_a_webhook_whose_contract_changed_since_approval() {
    let (signer, _db) = start().await;
    let (id, _, _) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    let path = signer.home().registry_path();
    let changed = std::fs::read_to_string(&path).unwrap().replacen(
        "A note for hook.safe.",
        "A note for hook.safe, changed.",
        1,
    );
    std::fs::write(&path, changed).unwrap();
    assert_refused(
        &signer,
        &mut head(&signer).await,
        &id,
        Code::FailedPrecondition,
        "contract_changed",
    )
    .await;
}

#[tokio::test]
async fn refuses_another_principals_head_an_approver_and_an_unknown_proposal() {
    let (signer, _db) = start().await;
    let (id, _, _) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    let mut theirs = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    assert_refused(
        &signer,
        &mut theirs,
        &id,
        Code::PermissionDenied,
        "not_your_proposal",
    )
    .await;
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let message = assert_refused(
        &signer,
        &mut approver,
        &id,
        Code::PermissionDenied,
        "role_not_allowed",
    )
    .await;
    assert_eq!(message, "role approver may not call ReissueForReconcile");
    let unknown = format!("prop_{}", "0".repeat(32));
    assert_refused(
        &signer,
        &mut head(&signer).await,
        &unknown,
        Code::NotFound,
        "unknown_proposal",
    )
    .await;
    // Still re-issuable by its own head.
    head(&signer)
        .await
        .reissue_for_reconcile(request(&id))
        .await
        .unwrap();
    assert_eq!(reissued_events(&signer).await, 1);
}

/// A passkey-approved webhook: the re-issued proof asserts the same
/// passkey (`amr`, `pkh`), rebuilt from the assertion stored with the
/// approval, and nothing else changes but the times.
#[tokio::test]
async fn reissues_a_passkey_approval_with_its_passkey_assurance() {
    use countersign_proto::v1::{
        BeginDecisionRequest, BeginEnrolmentRequest, DecideRequest, EnrolRequest, PasskeyAssertion,
    };
    use countersign_signer::passkeys::code::EnrolmentCodes;
    use countersign_webauthn::testing::SoftAuthenticator;

    let (signer, _db) = start_configured(
        "[passkeys]\nrequired = true\norigins = [\"https://console.localhost:7444\"]\n",
    )
    .await;
    let mut approver = signer.client(Role::Approver).await.unwrap();
    let mut key = SoftAuthenticator::new(5, "console.localhost", "https://console.localhost:7444");
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    approver
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: "laptop".into(),
            attestation_object,
            client_data_json,
            enrolment_code: EnrolmentCodes::in_ledger(signer.state().ledger().clone())
                .issue(None, OffsetDateTime::now_utc())
                .await
                .unwrap()
                .0,
        })
        .await
        .unwrap();
    let id = propose(&mut head(&signer).await, "hook.safe").await;
    let c = approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: id.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    let a = key.assert(&c.challenge);
    let proof = approver
        .decide(DecideRequest {
            proposal_id: id.clone(),
            approve: true,
            delivery: Delivery::Direct.into(),
            passkey: Some(PasskeyAssertion {
                challenge_id: c.challenge_id,
                credential_id: a.credential_id,
                authenticator_data: a.authenticator_data,
                client_data_json: a.client_data_json,
                signature: a.signature,
            }),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .proof;
    let issued = verified(&signer, &id, &proof).await;
    assert!(issued.claims().passkey_verified());
    match signer
        .state()
        .ledger()
        .begin_consume(&issued, Duration::ZERO)
        .await
        .unwrap()
    {
        countersign_ledger::ConsumeStart::Fresh(_) => {}
        other => panic!("{other:?}"),
    }
    let response = head(&signer)
        .await
        .reissue_for_reconcile(request(&id))
        .await
        .unwrap()
        .into_inner();
    let again = verified(&signer, &id, &response.proof).await;
    assert_eq!(again.claims().passkey, issued.claims().passkey);
    assert_eq!(
        Claims {
            iat: issued.claims().iat,
            nbf: issued.claims().nbf,
            exp: issued.claims().exp,
            ..again.claims().clone()
        },
        *issued.claims()
    );
}
