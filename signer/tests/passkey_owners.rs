//! A passkey belongs to the approver certificate that enrolled it: outside
//! any quorum too, an approval, a removal and a listing see only the
//! presenting approver's own passkeys; another approver's is refused
//! (`not_your_passkey`) with nothing issued or removed, and a challenge
//! drawn by one approver is not another's to answer.
#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginRemovalRequest, Delivery, ListPasskeysRequest, RemovePasskeyRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use support::passkey::{
    REQUIRED, challenge_for, code, code_for, decide_with, enrol_with, nothing_issued, refused,
    soft, wire,
};
use support::{approver, claims_of, head, named_approver, propose};
use tonic::Code;

fn id_of(key: &SoftAuthenticator) -> String {
    URL_SAFE_NO_PAD.encode(key.credential_id())
}

async fn start() -> TestSigner {
    TestSigner::start_configured(Registry::default_toml(), None, REQUIRED)
        .await
        .unwrap()
}

#[tokio::test]
async fn refuses_an_approval_made_with_another_approvers_passkey() {
    let signer = start().await;
    let (mut terminal, mut console) = (
        approver(&signer).await,
        named_approver(&signer, "console").await,
    );
    let (mut terminal_key, mut console_key) = (soft(1), soft(2));
    enrol_with(&mut terminal, &terminal_key, &code(&signer).await)
        .await
        .unwrap();
    enrol_with(
        &mut console,
        &console_key,
        &code_for(&signer, "console").await,
    )
    .await
    .unwrap();
    let pid = propose(&mut head(&signer).await).await.id;

    // The console's certificate is offered only the console's passkey.
    let offered = console
        .begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .allowed_credential_ids;
    assert_eq!(offered, [console_key.credential_id().to_vec()]);
    // The terminal's passkey over the console's challenge, through the console.
    let (cid, challenge) = challenge_for(&mut console, &pid, Delivery::Direct).await;
    refused(
        console
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, terminal_key.assert(&challenge))),
            ))
            .await,
        Code::PermissionDenied,
        "not_your_passkey",
    );
    // The terminal's own challenge and passkey, presented through the console.
    let (cid, challenge) = challenge_for(&mut terminal, &pid, Delivery::Direct).await;
    refused(
        console
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, terminal_key.assert(&challenge))),
            ))
            .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    nothing_issued(&signer, &pid).await;
    assert!(
        signer
            .state()
            .ledger()
            .verify_chain()
            .await
            .unwrap()
            .is_intact()
    );

    // The console with its own passkey: approved.
    let (cid, challenge) = challenge_for(&mut console, &pid, Delivery::Direct).await;
    let decided = console
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, console_key.assert(&challenge))),
        ))
        .await
        .unwrap()
        .into_inner();
    let claims = claims_of(&decided.proof);
    assert_eq!(
        claims["prov"],
        format!("human:cert:{}/console", signer.principal())
    );
}

#[tokio::test]
async fn another_approvers_passkeys_are_neither_listed_nor_removable() {
    let signer = start().await;
    let principal = signer.principal().to_owned();
    let (mut terminal, mut console) = (
        approver(&signer).await,
        named_approver(&signer, "console").await,
    );
    let (mut t1, t2) = (soft(1), soft(2));
    let (mut c1, c2) = (soft(3), soft(4));
    for key in [&t1, &t2] {
        enrol_with(&mut terminal, key, &code(&signer).await)
            .await
            .unwrap();
    }
    for key in [&c1, &c2] {
        enrol_with(&mut console, key, &code_for(&signer, "console").await)
            .await
            .unwrap();
    }
    let mine = |listed: countersign_proto::v1::ListPasskeysResponse| {
        let mut ids: Vec<(String, String)> = listed
            .passkeys
            .into_iter()
            .map(|p| (p.credential_id, p.enrolled_by))
            .collect();
        ids.sort();
        ids
    };
    let mut expected = vec![
        (id_of(&t1), principal.clone()),
        (id_of(&t2), principal.clone()),
    ];
    expected.sort();
    assert_eq!(
        mine(
            terminal
                .list_passkeys(ListPasskeysRequest {})
                .await
                .unwrap()
                .into_inner()
        ),
        expected
    );

    // The terminal may not start removing the console's passkey.
    refused(
        terminal
            .begin_removal(BeginRemovalRequest {
                credential_id: id_of(&c2),
            })
            .await,
        Code::PermissionDenied,
        "not_your_passkey",
    );
    // The console's removal challenge offers only the console's passkeys,
    // and the terminal's passkey cannot answer it.
    let r = console
        .begin_removal(BeginRemovalRequest {
            credential_id: id_of(&c2),
        })
        .await
        .unwrap()
        .into_inner();
    let mut offered = r.allowed_credential_ids.clone();
    offered.sort();
    let mut own = vec![c1.credential_id().to_vec(), c2.credential_id().to_vec()];
    own.sort();
    assert_eq!(offered, own);
    refused(
        console
            .remove_passkey(RemovePasskeyRequest {
                credential_id: id_of(&c2),
                authorization: Some(wire(&r.challenge_id, t1.assert(&r.challenge))),
            })
            .await,
        Code::PermissionDenied,
        "not_your_passkey",
    );
    let active = |signer: &TestSigner| {
        let ledger = signer.state().ledger().clone();
        let principal = principal.clone();
        async move {
            ledger
                .passkeys(&principal)
                .await
                .unwrap()
                .iter()
                .filter(|p| p.is_active())
                .count()
        }
    };
    assert_eq!(active(&signer).await, 4);

    // With its own: removed; then its last is the administrator's to remove,
    // however many the terminal still has.
    let r = console
        .begin_removal(BeginRemovalRequest {
            credential_id: id_of(&c2),
        })
        .await
        .unwrap()
        .into_inner();
    console
        .remove_passkey(RemovePasskeyRequest {
            credential_id: id_of(&c2),
            authorization: Some(wire(&r.challenge_id, c1.assert(&r.challenge))),
        })
        .await
        .unwrap();
    assert_eq!(active(&signer).await, 3);
    refused(
        console
            .begin_removal(BeginRemovalRequest {
                credential_id: id_of(&c1),
            })
            .await,
        Code::FailedPrecondition,
        "last_passkey",
    );
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
