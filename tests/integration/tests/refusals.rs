//! Every way a proof can be wrong, presented through the CLI's `exec` code
//! path against a real signer: each asserts the exact refusal, that the
//! command exits with the refusal code, and that the state store and the
//! effect log are unchanged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_identity::Role;
use countersign_identity::pki::{CaMaterial, issue_client_cert};
use countersign_registry::Registry;
use support::{
    Backend, CREATE_NIGHTLY, Harness, Person, assert_refused, create_approvals_live_one_second,
    forge,
};

/// A harness with one approved proposal whose proof is in a file, nothing applied yet.
async fn approved() -> (Harness, String, std::path::PathBuf) {
    let h = Harness::start().await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    (h, id, proof)
}

/// Present `proof_text` for `id` and assert the exact refusal with nothing applied.
async fn assert_exec_refused(h: &Harness, id: &str, proof_text: &str, extra: &[&str], code: &str) {
    let before = (h.schedules().await, h.effects_run().await);
    let path = h.proof_file(&format!("presented-{code}"), proof_text);
    let run = h.exec(id, &path, extra).await;
    assert_refused(&run, code);
    assert_eq!(
        (h.schedules().await, h.effects_run().await),
        before,
        "something was applied"
    );
}

#[tokio::test]
async fn refuses_a_proof_with_a_forged_signature() {
    let (h, id, proof) = approved().await;
    let forged = forge::forged(&std::fs::read_to_string(&proof).unwrap());
    assert_exec_refused(&h, &id, &forged, &[], "bad_signature").await;
}

#[tokio::test]
async fn refuses_a_proof_signed_by_an_unknown_key() {
    let (h, id, proof) = approved().await;
    let token = forge::signed_by_unknown_key(&std::fs::read_to_string(&proof).unwrap());
    assert_exec_refused(&h, &id, &token, &[], "unknown_key_id").await;
}

#[tokio::test]
async fn refuses_a_proof_whose_arguments_were_altered() {
    let (h, id, proof) = approved().await;
    let altered = forge::with_altered_arguments(&std::fs::read_to_string(&proof).unwrap());
    assert_exec_refused(&h, &id, &altered, &[], "bad_signature").await;
}

#[tokio::test]
async fn refuses_a_proof_presented_for_another_proposal() {
    let (h, id, proof) = approved().await;
    let other = h
        .propose("schedule.create", r#"{"name":"other","cron":"0 4 * * *"}"#)
        .await;
    let text = std::fs::read_to_string(&proof).unwrap();
    assert_exec_refused(&h, &other, &text, &[], "proposal_mismatch").await;
    // The genuine proposal still executes with it.
    assert_eq!(h.exec(&id, &proof, &[]).await.json()["applied"], true);
}

#[tokio::test]
async fn refuses_a_proof_presented_from_another_session() {
    let (h, id, proof) = approved().await;
    let text = std::fs::read_to_string(&proof).unwrap();
    assert_exec_refused(
        &h,
        &id,
        &text,
        &["--session", "someone-else"],
        "wrong_session",
    )
    .await;
}

#[tokio::test]
async fn refuses_a_proof_presented_by_another_principal() {
    let (h, id, proof) = approved().await;
    let other_home = h.another_principal();

    let before = (h.schedules().await, h.effects_run().await);
    let path = proof.to_str().unwrap();
    let run = h
        .cli_as(
            &other_home,
            &["--json", "exec", &id, "--proof-file", path],
            "",
            Person::NoTerminal,
        )
        .await;
    assert_refused(&run, "wrong_principal");
    // Nor can it read the proposal through the signer.
    let show = h
        .cli_as(&other_home, &["show", &id], "", Person::NoTerminal)
        .await;
    assert!(
        matches!(show.result, Err(CliError::Refused(_))),
        "{:?}",
        show.result
    );
    assert_eq!((h.schedules().await, h.effects_run().await), before);
}

/// On a ledger shared by two principals, `exec ID --handoff` from the other
/// principal answers exactly as `result` does: no such proposal for it. It
/// neither reads the recorded result of an executed proposal nor claims the
/// approval of one still waiting, which the owner then applies once.
async fn a_handoff_of_another_principals_proposal_is_refused_as_unknown(backend: Backend) {
    let h = Harness::start_on(backend, Registry::default_toml()).await;
    let other_home = h.another_principal();
    let as_other = |args: &'static [&'static str], id: String| {
        let home = other_home.clone();
        let h = &h;
        async move {
            let mut argv: Vec<&str> = args.to_vec();
            argv.insert(2, &id);
            h.cli_as(&home, &argv, "", Person::NoTerminal).await
        }
    };

    // Executed: its recorded result stays the owner's.
    let done = h
        .propose_in("schedule.create", CREATE_NIGHTLY, "agent-1")
        .await;
    h.approve_for_mcp(&done).await;
    assert_eq!(
        h.exec_handoff(&done, "agent-1").await.json()["applied"],
        true
    );
    let result = as_other(&["--json", "result"], done.clone()).await;
    assert!(
        matches!(&result.result, Err(CliError::Refused(m)) if m.contains("no proposal")),
        "{:?}",
        result.result
    );
    let run = as_other(
        &["--json", "exec", "--handoff", "--session", "agent-1"],
        done.clone(),
    )
    .await;
    assert_refused(&run, "unknown_proposal");
    assert_eq!(run.json().get("recorded_status"), None, "{}", run.stdout);
    assert_eq!(run.json().get("result"), None, "{}", run.stdout);

    // Approved and waiting: the other principal claims nothing.
    let waiting = h
        .propose_in(
            "schedule.create",
            r#"{"name":"other","cron":"0 4 * * *"}"#,
            "agent-1",
        )
        .await;
    h.approve_for_mcp(&waiting).await;
    let before = (h.schedules().await, h.effects_run().await);
    let run = as_other(
        &["--json", "exec", "--handoff", "--session", "agent-1"],
        waiting.clone(),
    )
    .await;
    assert_refused(&run, "unknown_proposal");
    assert_eq!((h.schedules().await, h.effects_run().await), before);
    let show = h.cli(&["--json", "show", &waiting]).await;
    assert_eq!(show.json()["handoff_waiting"], true, "{}", show.stdout);
    assert_eq!(
        h.exec_handoff(&waiting, "agent-1").await.json()["applied"],
        true
    );
    assert_eq!(h.schedules().await.len(), 2);
}

#[tokio::test]
async fn a_handoff_of_another_principals_proposal_is_refused_as_unknown_on_sqlite() {
    a_handoff_of_another_principals_proposal_is_refused_as_unknown(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_handoff_of_another_principals_proposal_is_refused_as_unknown_on_postgres() {
    a_handoff_of_another_principals_proposal_is_refused_as_unknown(Backend::Postgres).await;
}

#[tokio::test]
async fn refuses_an_expired_proof() {
    let registry = create_approvals_live_one_second();
    let h = Harness::start_with_registry(&registry).await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    let proof = h.approve_to_file(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_exec_refused(
        &h,
        &id,
        &std::fs::read_to_string(&proof).unwrap(),
        &[],
        "expired",
    )
    .await;
}

/// An approval handed over to the proposing session that expired unused
/// is refused `expired` by `exec --handoff`, saying it cannot be renewed,
/// and nothing runs (the MCP head's `execute_approved` is tested the same
/// way in gateway_flow.py; the API's in api_refusals.rs).
#[tokio::test]
async fn an_approval_that_expired_unused_is_refused_by_exec_handoff() {
    let registry = create_approvals_live_one_second();
    let h = Harness::start_with_registry(&registry).await;
    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    h.approve_for_mcp(&id).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let before = (h.schedules().await, h.effects_run().await);
    let run = h.exec_handoff(&id, "cli").await;
    assert_refused(&run, "expired");
    assert_eq!(
        run.json()["message"],
        format!(
            "refused: the approval of {id} expired before it was executed. An expired approval cannot be used or renewed: propose the action again for a person to approve; nothing was applied"
        )
    );
    assert_eq!((h.schedules().await, h.effects_run().await), before);
}

#[tokio::test]
async fn refuses_a_revoked_proof_and_revocation_after_use_reports_it() {
    let (h, id, proof) = approved().await;
    let revoked = h.cli(&["revoke", &id]).await;
    assert_eq!(revoked.result, Ok(()), "{}", revoked.stdout);
    assert_exec_refused(
        &h,
        &id,
        &std::fs::read_to_string(&proof).unwrap(),
        &[],
        "revoked",
    )
    .await;
    assert_eq!(
        h.cli(&["--json", "show", &id]).await.json()["status"],
        "revoked"
    );

    let used = h
        .propose("schedule.create", r#"{"name":"used","cron":"0 5 * * *"}"#)
        .await;
    let used_proof = h.approve_to_file(&used).await;
    assert_eq!(h.exec(&used, &used_proof, &[]).await.result, Ok(()));
    let late = h.cli(&["revoke", &used]).await;
    assert_eq!(
        late.result,
        Err(CliError::Refused(format!(
            "the proof of {used} was already used; nothing was revoked"
        )))
    );
}

#[tokio::test]
async fn refuses_a_proof_issued_under_an_older_contract() {
    let (h, id, proof) = approved().await;
    h.change_the_create_contract();
    assert_exec_refused(
        &h,
        &id,
        &std::fs::read_to_string(&proof).unwrap(),
        &[],
        "contract_revision_mismatch",
    )
    .await;
}

#[tokio::test]
async fn refuses_text_that_is_not_a_proof() {
    let (h, id, _) = approved().await;
    assert_exec_refused(&h, &id, "v4.public.bm90IGEgcHJvb2Y", &[], "malformed").await;
    assert_exec_refused(&h, &id, "v3.public.bm90IGEgcHJvb2Y", &[], "wrong_version").await;
    assert_exec_refused(&h, &id, "v4.local.bm90IGEgcHJvb2Y", &[], "wrong_purpose").await;
}

#[tokio::test]
async fn refuses_a_head_whose_certificate_has_the_wrong_role() {
    let h = Harness::start().await;
    let home = h.signer.home();
    // The head's certificate replaced by the approver's: the signer reads the
    // role from the certificate, so Propose is denied.
    for (from, to) in [
        (
            home.client_cert_path(Role::Approver),
            home.client_cert_path(Role::Head),
        ),
        (
            home.client_key_path(Role::Approver),
            home.client_key_path(Role::Head),
        ),
    ] {
        std::fs::copy(from, to).unwrap();
    }
    let run = h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            CREATE_NIGHTLY,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Refused(message)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(
        message.contains("approver") && message.contains("Propose"),
        "{message}"
    );
    assert!(h.nothing_pending().await, "a proposal was recorded");
}

#[tokio::test]
async fn refuses_a_head_whose_certificate_comes_from_another_ca() {
    let h = Harness::start().await;
    let home = h.signer.home();
    let rogue = CaMaterial::generate("rogue CA").unwrap();
    let now = time::OffsetDateTime::now_utc();
    let cert = issue_client_cert(
        &rogue,
        Role::Head,
        h.signer.principal(),
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    std::fs::write(home.client_cert_path(Role::Head), cert.cert_pem.as_bytes()).unwrap();
    std::fs::write(home.client_key_path(Role::Head), cert.key_pem.as_bytes()).unwrap();
    let run = h
        .cli_with(
            &["propose", "schedule.create", "--args-file", "-"],
            CREATE_NIGHTLY,
            Person::NoTerminal,
        )
        .await;
    let Err(CliError::Error(message)) = &run.result else {
        panic!("{:?}", run.result)
    };
    assert!(
        message.ends_with("received fatal alert: UnknownCA"),
        "{message}"
    );
    assert!(h.nothing_pending().await, "a proposal was recorded");
}

#[tokio::test]
async fn an_operation_that_requires_a_passkey_is_not_approved_at_a_terminal() {
    // The installation configures no passkeys; the operation requires one.
    // The signer issues no proof without a passkey assertion, so `approve`
    // (to a file, or for the MCP head) is refused before the person is
    // asked, and nothing is recorded. (A head's own refusal of a proof
    // without `amr` is `heads/gate/tests/passkey.rs`.)
    let registry = Registry::default_toml().replacen(
        "replay_safe = true\npreview = \"Create schedule",
        "replay_safe = true\nrequire_passkey = true\npreview = \"Create schedule",
        1,
    );
    assert_ne!(registry, Registry::default_toml());
    let h = Harness::start_with_registry(&registry).await;
    let listed = h.cli(&["--json", "ops", "list"]).await.json();
    let create = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|op| op["name"] == "schedule.create")
        .unwrap();
    assert_eq!(create["require_passkey"], true, "{create}");

    let id = h.propose("schedule.create", CREATE_NIGHTLY).await;
    for args in [
        vec!["approve", id.as_str(), "--for-mcp"],
        vec!["approve", id.as_str()],
    ] {
        let run = h.cli_with(&args, "", Person::TypesTheChallenge).await;
        let Err(CliError::Refused(message)) = &run.result else {
            panic!("{:?}", run.result);
        };
        assert_eq!(
            message,
            &format!(
                "{id} needs a passkey to be approved (passkey_required); approve it in the console (`countersign console`; no [console] section is configured). Nothing was approved."
            )
        );
        assert_eq!(run.shown, "", "the person was asked nothing");
    }
    let show = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(show["status"], "pending", "{show}");
    assert_eq!(show["passkey_required"], true, "{show}");
    assert!(h.schedules().await.is_empty());

    // A proof without passkey assurance, signed with the signer's own key
    // and recorded as issued (as a signer from before passkeys would
    // have): the CLI head refuses it, nothing consumed or applied.
    let proof = issued_without_passkey(&h, &id).await;
    assert_exec_refused(&h, &id, &proof, &[], "passkey_required").await;
    let show = h.cli(&["--json", "show", &id]).await.json();
    assert_eq!(show["status"], "approved", "{show}");
}

/// Signs claims for proposal `id` with the signer's key file, without
/// `amr`/`pkh`, and records the issuance; returns the proof text.
async fn issued_without_passkey(h: &Harness, id: &str) -> String {
    use countersign_registry::CanonicalArgs;
    use countersign_signer::issue::sign_claims;
    use countersign_signer::key::ProofKey;
    use countersign_verifier::Claims;
    use countersign_verifier::claims::ISSUER;

    let record = h.ledger().proposal(id).await.unwrap().unwrap();
    let p = &record.proposal;
    let args = CanonicalArgs::from_stored(&p.arguments_json).unwrap();
    let now =
        time::OffsetDateTime::from_unix_timestamp(time::OffsetDateTime::now_utc().unix_timestamp())
            .unwrap();
    let claims = Claims {
        iss: ISSUER.to_owned(),
        aud: h.signer.state().policy().audience.clone(),
        sub: p.principal.to_string(),
        sid: p.session.to_string(),
        pid: p.id.to_string(),
        op: p.operation.clone(),
        args: args.value().clone(),
        args_sha256: p.arguments_sha256.clone(),
        crev: p.contract_revision.clone(),
        prev: p.policy_revision.clone(),
        grant: None,
        prov: format!("human:cert:{}", p.principal),
        passkey: None,
        premise: None,
        jti: "A".repeat(43),
        iat: now,
        nbf: now,
        exp: now + time::Duration::seconds(300),
    };
    let key = ProofKey::load_file(&h.signer.home().signing_key_path()).unwrap();
    let proof = sign_claims(&key, &claims).unwrap();
    h.ledger()
        .record_approval(&countersign_ledger::IssuanceRecord::from_claims(
            &claims, &proof,
        ))
        .await
        .unwrap();
    proof.expose_secret().to_owned()
}

/// A malformed proposal id is refused where the CLI reads it (a usage
/// error, exit 2, before the signer or the ledger is asked), by every
/// command that takes one, and nothing is applied.
#[tokio::test]
async fn a_malformed_proposal_id_is_refused_by_every_cli_command_that_takes_one() {
    let h = Harness::start().await;
    let before = (h.schedules().await, h.effects_run().await);
    for args in [
        &["show", "prop_x"][..],
        &["withdraw", "prop_x"],
        &["result", "prop_x"],
        &["exec", "prop_x", "--handoff"],
        &["approve", "prop_x"],
        &["deny", "prop_x", "--reason", "no"],
        &["revoke", "prop_x"],
    ] {
        let out = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
            .arg("--home")
            .arg(h.home())
            .args(args)
            .output()
            .await
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(
            said.contains("expected a proposal id (prop_ followed by 32 lowercase hex digits) or its start (at least 4 of those digits)"),
            "{args:?}: {said}"
        );
    }
    assert_eq!((h.schedules().await, h.effects_run().await), before);
}
