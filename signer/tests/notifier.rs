//! The notification outbox and the `notifier` role: with `[notify]` the
//! signer records a waiting proposal (and nothing without it), and serves
//! it to the notifier certificate only, which can acknowledge it and do
//! nothing else but list the console's Web Push devices. Every other RPC
//! refuses the notifier with PERMISSION_DENIED `role_not_allowed`, and
//! nothing it tries has an effect.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_proto::v1::outbox_notification::About;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    AckNotificationsRequest, BeginDecisionRequest, BeginEnrolmentRequest, BeginRemovalRequest,
    ClaimHandoffRequest, CreateRuleRequest, Delivery, EnrolRequest, GetProposalRequest,
    KeptPushDevice, ListPasskeysRequest, ListPendingRequest, ListProposalsRequest,
    ListRulesRequest, OutboxNotification, PendingNotificationsRequest, ProposalWaiting,
    PublicKeysRequest, PushDevicesRequest, ReissueForReconcileRequest, ReleaseHandoffRequest,
    RemovePasskeyRequest, ResolveUncertainRequest, ReviseRuleRequest, RevokeRequest,
    RevokeRuleRequest, SetPushDevicesRequest, WithdrawRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use support::{
    OTHER_PRINCIPAL, approve, approver, client_as, head, named_approver, propose, propose_request,
    reason_of,
};
use tonic::Code;
use tonic::transport::Channel;

/// A signer that records notifications (`[notify]` with no channel: the
/// channels are the notify process's).
async fn recording() -> TestSigner {
    TestSigner::start_configured(
        Registry::default_toml(),
        None,
        "\n[console]\naddr = \"127.0.0.1:7997\"\n[notify]\n",
    )
    .await
    .unwrap()
}

async fn notifier(signer: &TestSigner) -> SignerClient<Channel> {
    signer.client(Role::Notifier).await.unwrap()
}

/// What waits for `notifier` (at most `limit`; 0: 100).
async fn waiting_for(notifier: &mut SignerClient<Channel>, limit: u32) -> Vec<OutboxNotification> {
    notifier
        .pending_notifications(PendingNotificationsRequest { limit })
        .await
        .unwrap()
        .into_inner()
        .notifications
}

/// The exact refusal of a role on an RPC.
fn assert_role_refused(result: Result<(), tonic::Status>, role: &str, rpc: &str) {
    let status = result.unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{rpc}: {status:?}");
    assert_eq!(status.message(), format!("role {role} may not call {rpc}"));
    assert_eq!(reason_of(&status), "role_not_allowed", "{rpc}");
}

/// `Ok(())` or the status of one call.
macro_rules! call {
    ($client:expr, $rpc:ident($request:expr)) => {
        $client.$rpc($request).await.map(|_| ())
    };
}

#[tokio::test]
async fn a_waiting_proposal_is_recorded_for_the_notifier_and_acknowledged_once() {
    let signer = recording().await;
    let view = propose(&mut head(&signer).await).await;
    let mut notifier = notifier(&signer).await;

    let waiting = waiting_for(&mut notifier, 0).await;
    let [one] = waiting.as_slice() else {
        panic!("{waiting:?}")
    };
    assert_eq!(
        one.about,
        Some(About::Proposal(ProposalWaiting {
            proposal_id: view.id.clone(),
            operation: "schedule.create".into(),
            arguments_sha256: view.arguments_sha256.clone(),
            // The link is the notify process's to compose, from its own
            // `[console]` (this signer has one): none is recorded.
            console_url: String::new(),
            decide_by: time::OffsetDateTime::parse(
                &view.decide_by,
                &time::format_description::well_known::Rfc3339
            )
            .unwrap()
            .unix_timestamp(),
            escalation: None,
        }))
    );
    assert!(!format!("{one:?}").contains("v4.public."));

    // Still there for a restarted signer: the outbox is in the ledger.
    let signer = signer.restart().await.unwrap();
    let mut notifier = self::notifier(&signer).await;
    let again = waiting_for(&mut notifier, 1).await;
    assert_eq!(again, waiting);
    let acked = notifier
        .ack_notifications(AckNotificationsRequest {
            ids: vec![one.id.clone(), one.id.clone()],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(acked.acknowledged, 1);
    let after = waiting_for(&mut notifier, 0).await;
    assert!(after.is_empty(), "{after:?}");
}

#[tokio::test]
async fn without_a_notify_section_nothing_is_recorded() {
    let signer = TestSigner::start().await.unwrap();
    propose(&mut head(&signer).await).await;
    let waiting = waiting_for(&mut notifier(&signer).await, 0).await;
    assert!(waiting.is_empty(), "{waiting:?}");
}

#[tokio::test]
async fn refuses_an_acknowledgement_of_something_that_is_not_a_notification_id() {
    let signer = recording().await;
    propose(&mut head(&signer).await).await;
    let mut notifier = notifier(&signer).await;
    let refused = notifier
        .ack_notifications(AckNotificationsRequest {
            ids: vec!["prop_00".into()],
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(reason_of(&refused), "invalid_field");
    let refused = notifier
        .pending_notifications(PendingNotificationsRequest { limit: 101 })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert_eq!(reason_of(&refused), "invalid_field");
    // Nothing was removed.
    let waiting = waiting_for(&mut notifier, 0).await;
    assert_eq!(waiting.len(), 1);
}

/// The notifier certificate is refused by every RPC but its two, with the
/// role named, and none of its attempts changes anything: the proposal
/// stays pending, nothing is issued, withdrawn or revoked, and no rule or
/// passkey appears.
#[tokio::test]
async fn the_notifier_is_refused_by_every_other_rpc_and_changes_nothing() {
    let signer = recording().await;
    let view = propose(&mut head(&signer).await).await;
    let mut n = notifier(&signer).await;
    let id = || view.id.clone();
    let refusals = [
        ("Propose", call!(n, propose(propose_request("s")))),
        (
            "GetProposal",
            call!(n, get_proposal(GetProposalRequest { proposal_id: id() })),
        ),
        ("ListPending", call!(n, list_pending(ListPendingRequest {}))),
        (
            "ListProposals",
            call!(n, list_proposals(ListProposalsRequest::default())),
        ),
        (
            "Withdraw",
            call!(n, withdraw(WithdrawRequest { proposal_id: id() })),
        ),
        ("Decide", call!(n, decide(approve(&id(), Delivery::Direct)))),
        (
            "ClaimHandoff",
            call!(
                n,
                claim_handoff(ClaimHandoffRequest {
                    proposal_id: id(),
                    session: support::SESSION.into(),
                })
            ),
        ),
        (
            "ReleaseHandoff",
            call!(n, release_handoff(ReleaseHandoffRequest::default())),
        ),
        (
            "Revoke",
            call!(
                n,
                revoke(RevokeRequest {
                    proposal_id: id(),
                    reason: "x".into(),
                })
            ),
        ),
        (
            "ResolveUncertain",
            call!(
                n,
                resolve_uncertain(ResolveUncertainRequest {
                    proposal_id: id(),
                    applied: true,
                })
            ),
        ),
        (
            "ReissueForReconcile",
            call!(
                n,
                reissue_for_reconcile(ReissueForReconcileRequest::default())
            ),
        ),
        ("PublicKeys", call!(n, public_keys(PublicKeysRequest {}))),
        (
            "BeginDecision",
            call!(n, begin_decision(BeginDecisionRequest::default())),
        ),
        (
            "BeginEnrolment",
            call!(n, begin_enrolment(BeginEnrolmentRequest::default())),
        ),
        ("Enrol", call!(n, enrol(EnrolRequest::default()))),
        (
            "BeginRemoval",
            call!(n, begin_removal(BeginRemovalRequest::default())),
        ),
        (
            "RemovePasskey",
            call!(n, remove_passkey(RemovePasskeyRequest::default())),
        ),
        (
            "ListPasskeys",
            call!(n, list_passkeys(ListPasskeysRequest {})),
        ),
        (
            "CreateRule",
            call!(n, create_rule(CreateRuleRequest::default())),
        ),
        (
            "ReviseRule",
            call!(n, revise_rule(ReviseRuleRequest::default())),
        ),
        (
            "RevokeRule",
            call!(n, revoke_rule(RevokeRuleRequest::default())),
        ),
        (
            "ListRules",
            call!(n, list_rules(ListRulesRequest::default())),
        ),
    ];
    for (rpc, result) in refusals {
        assert_role_refused(result, "notifier", rpc);
    }

    let record = signer
        .state()
        .ledger()
        .proposal(&view.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "pending");
    assert_eq!(record.proposal.arguments_sha256, view.arguments_sha256);
    let still = approver(&signer)
        .await
        .list_pending(ListPendingRequest {})
        .await
        .unwrap()
        .into_inner()
        .proposals;
    assert_eq!(still.len(), 1);
    assert!(
        signer
            .state()
            .ledger()
            .passkeys(signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        signer
            .state()
            .ledger()
            .rules(signer.principal())
            .await
            .unwrap()
            .is_empty()
    );
}

/// The notifier's three RPCs refuse every other role, and a head or an
/// approver can neither read nor drop what waits for the person, nor
/// learn where the person's devices are.
#[tokio::test]
async fn the_notifier_rpcs_refuse_heads_and_approvers() {
    let signer = recording().await;
    propose(&mut head(&signer).await).await;
    for (role, mut client) in [
        ("head", head(&signer).await),
        ("approver", approver(&signer).await),
    ] {
        assert_role_refused(
            call!(
                client,
                pending_notifications(PendingNotificationsRequest::default())
            ),
            role,
            "PendingNotifications",
        );
        assert_role_refused(
            call!(
                client,
                ack_notifications(AckNotificationsRequest::default())
            ),
            role,
            "AckNotifications",
        );
        assert_role_refused(
            call!(
                client,
                push_devices(PushDevicesRequest {
                    operation: "schedule.pause".into(),
                    ..Default::default()
                })
            ),
            role,
            "PushDevices",
        );
        assert_role_refused(
            call!(
                client,
                audit_events(countersign_proto::v1::AuditEventsRequest::default())
            ),
            role,
            "AuditEvents",
        );
    }
    let waiting = waiting_for(&mut notifier(&signer).await, 0).await;
    assert_eq!(waiting.len(), 1);
}

const P256DH: &str =
    "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

/// The VAPID public key the consoles gave their browsers.
fn vapid_key() -> String {
    format!("B{}", "A".repeat(86))
}

/// A device of session `session` whose session ends in a day.
fn kept(approver: &str, session: &str) -> KeptPushDevice {
    KeptPushDevice {
        session_id: session.into(),
        endpoint: format!("https://push.example/{approver}"),
        p256dh: P256DH.into(),
        auth: AUTH.into(),
        application_server_key: vapid_key(),
        expires_at: (time::OffsetDateTime::now_utc() + time::Duration::days(1))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
    }
}

/// `approver`'s console records its devices through `signer`: one
/// subscribed session `<approver>-phone`, and one recorded and then
/// forgotten (its session revoked).
async fn subscribed(signer: &TestSigner, approver: &str) {
    let mut console = named_approver(signer, approver).await;
    let phone = format!("{approver}-phone");
    let lost = format!("{approver}-lost");
    let answer = console
        .set_push_devices(SetPushDevicesRequest {
            keep: vec![kept(approver, &phone), kept(approver, &lost)],
            remove: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.kept, answer.removed), (2, 0));
    let answer = console
        .set_push_devices(SetPushDevicesRequest {
            keep: Vec::new(),
            remove: vec![lost],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.kept, answer.removed), (0, 1));
}

/// The devices `notifier` is told of for `operation` (of `only`), as
/// `approver/session`.
async fn devices(
    notifier: &mut SignerClient<Channel>,
    operation: &str,
    only: &[&str],
) -> Vec<String> {
    let answer = notifier
        .push_devices(PushDevicesRequest {
            operation: operation.into(),
            approvers: only.iter().map(|a| (*a).to_owned()).collect(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    for d in &answer.devices {
        assert_eq!(
            (d.endpoint.as_str(), d.p256dh.as_str(), d.auth.as_str()),
            (
                format!("https://push.example/{}", d.approver).as_str(),
                P256DH,
                AUTH
            ),
            "passed on as the console recorded it"
        );
        assert_eq!(d.application_server_key, vapid_key());
        // Its Debug names the session, never where or how to push.
        let shown = format!("{d:?}");
        assert!(
            !shown.contains("push.example") && !shown.contains(AUTH),
            "{shown}"
        );
    }
    answer
        .devices
        .into_iter()
        .map(|d| format!("{}/{}", d.approver, d.session_id))
        .collect()
}

/// `PushDevices` answers the devices the consoles recorded in the ledger
/// for the notify process: not forgotten ones, of the approvers who can
/// decide the operation (a quorum's listed ones), of an escalation's
/// approvers when named; nothing of another principal's; bad requests
/// refused with their field.
#[tokio::test]
async fn the_notifier_is_told_the_subscribed_devices_of_those_who_can_decide() {
    let registry = Registry::default_toml().replacen(
        "name = \"schedule.create\"\n",
        "name = \"schedule.create\"\nquorum = { required = 1, approvers = [\"alice\", \"carol\"] }\n",
        1,
    );
    let signer = TestSigner::start_configured(
        &registry,
        None,
        "\n[console]\naddr = \"127.0.0.1:7997\"\n[notify]\n",
    )
    .await
    .unwrap();
    let mut notifier = notifier(&signer).await;
    // No console recorded a device yet.
    assert!(
        devices(&mut notifier, "schedule.pause", &[])
            .await
            .is_empty()
    );
    for approver in ["alice", "bob", "console"] {
        subscribed(&signer, approver).await;
    }
    assert_eq!(
        devices(&mut notifier, "schedule.pause", &[]).await,
        [
            "alice/alice-phone",
            "bob/bob-phone",
            "console/console-phone"
        ]
    );
    assert_eq!(
        devices(&mut notifier, "schedule.create", &[]).await,
        ["alice/alice-phone"]
    );
    // An escalation's approvers: their devices only, of those who can decide.
    assert_eq!(
        devices(&mut notifier, "schedule.pause", &["bob"]).await,
        ["bob/bob-phone"]
    );
    assert!(
        devices(&mut notifier, "schedule.create", &["bob"])
            .await
            .is_empty()
    );
    assert_eq!(
        devices(&mut notifier, "schedule.create", &["alice", "bob"]).await,
        ["alice/alice-phone"]
    );
    // Another principal's notifier is told of none of these devices.
    let mut theirs = client_as(&signer, Role::Notifier, OTHER_PRINCIPAL).await;
    assert!(devices(&mut theirs, "schedule.pause", &[]).await.is_empty());
    // Bad requests, each refused with its field.
    for (request, message) in [
        (
            PushDevicesRequest::default(),
            "invalid operation: must be 1..=256 bytes",
        ),
        (
            PushDevicesRequest {
                operation: "x".repeat(257),
                ..Default::default()
            },
            "invalid operation: must be 1..=256 bytes",
        ),
        (
            PushDevicesRequest {
                operation: "schedule.pause".into(),
                approvers: vec!["a".into(); 101],
                ..Default::default()
            },
            "invalid approvers: at most 100 names",
        ),
    ] {
        let status = notifier.push_devices(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(status.message(), message);
    }
}

/// `SetPushDevices` is a console's: a head or the notifier is refused, an
/// approver certificate naming no approver too (`unnamed_approver`); a
/// console forgets only its own approver's devices and records only
/// well-formed ones, each bad field refused by name with nothing
/// recorded; a device whose session has ended is forgotten.
#[tokio::test]
async fn a_console_records_and_forgets_only_its_own_approvers_devices() {
    let signer = recording().await;
    subscribed(&signer, "bob").await;
    let one = |d: KeptPushDevice| SetPushDevicesRequest {
        keep: vec![d],
        remove: Vec::new(),
    };
    for (role, mut client) in [
        ("head", head(&signer).await),
        ("notifier", notifier(&signer).await),
    ] {
        assert_role_refused(
            call!(client, set_push_devices(one(kept("mallory", "m1")))),
            role,
            "SetPushDevices",
        );
    }
    let status = approver(&signer)
        .await
        .set_push_devices(one(kept("mallory", "m1")))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert_eq!(
        status.message(),
        "SetPushDevices needs a named approver certificate (a console's); this one names no approver"
    );
    assert_eq!(reason_of(&status), "unnamed_approver");
    // Alice's console names bob's session: nothing is forgotten.
    let mut alice = named_approver(&signer, "alice").await;
    let answer = alice
        .set_push_devices(SetPushDevicesRequest {
            keep: Vec::new(),
            remove: vec!["bob-phone".into()],
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.kept, answer.removed), (0, 0));
    let mut notifier = notifier(&signer).await;
    assert_eq!(
        devices(&mut notifier, "schedule.pause", &[]).await,
        ["bob/bob-phone"]
    );
    // Each malformed field, refused by name; nothing recorded.
    let past = (time::OffsetDateTime::now_utc() - time::Duration::seconds(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let far = (time::OffsetDateTime::now_utc() + time::Duration::days(31))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let with = |change: &dyn Fn(&mut KeptPushDevice)| {
        let mut d = kept("alice", "a1");
        change(&mut d);
        one(d)
    };
    let cases: Vec<(SetPushDevicesRequest, &str)> = vec![
        (
            with(&|d| d.session_id = "a/1".into()),
            "invalid keep.session_id: must be 1..=64 bytes of [0-9A-Za-z_-]",
        ),
        (
            with(&|d| d.session_id = "a".repeat(65)),
            "invalid keep.session_id: must be 1..=64 bytes of [0-9A-Za-z_-]",
        ),
        (
            with(&|d| d.endpoint = "ftp://push.example/1".into()),
            "invalid keep.endpoint: must be an http(s) URL of at most 2048 bytes",
        ),
        (
            with(&|d| d.endpoint = format!("https://push.example/{}", "a".repeat(2048))),
            "invalid keep.endpoint: must be an http(s) URL of at most 2048 bytes",
        ),
        (
            with(&|d| d.p256dh = "not base64!".into()),
            "invalid keep.p256dh: must be 1..=128 bytes of base64url",
        ),
        (
            with(&|d| d.auth = String::new()),
            "invalid keep.auth: must be 1..=128 bytes of base64url",
        ),
        (
            with(&|d| d.application_server_key = "B".repeat(129)),
            "invalid keep.application_server_key: must be 1..=128 bytes of base64url",
        ),
        (
            with(&|d| d.expires_at = far.clone()),
            "invalid keep.expires_at: must be an RFC 3339 time at most 30 days ahead",
        ),
        (
            with(&|d| d.expires_at = "tomorrow".into()),
            "invalid keep.expires_at: must be an RFC 3339 time at most 30 days ahead",
        ),
        (
            SetPushDevicesRequest {
                keep: vec![kept("alice", "a1"); 501],
                remove: Vec::new(),
            },
            "invalid keep: at most 500 devices",
        ),
        (
            SetPushDevicesRequest {
                keep: Vec::new(),
                remove: vec!["a".into(); 501],
            },
            "invalid remove: at most 500 session ids",
        ),
        (
            SetPushDevicesRequest {
                keep: vec![kept("alice", "a1")],
                remove: vec![String::new()],
            },
            "invalid remove: must be 1..=64 bytes of [0-9A-Za-z_-]",
        ),
    ];
    for (request, message) in cases {
        let status = alice.set_push_devices(request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert_eq!(status.message(), message);
        assert_eq!(reason_of(&status), "invalid_field");
    }
    assert_eq!(
        devices(&mut notifier, "schedule.pause", &[]).await,
        ["bob/bob-phone"]
    );
    // A session that has ended by the signer's clock (the console's host
    // may run behind): its device is forgotten, not kept, and the rest of
    // the call stands.
    let answer = alice
        .set_push_devices(SetPushDevicesRequest {
            keep: vec![kept("alice", "a1"), kept("alice", "a2")],
            remove: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.kept, answer.removed), (2, 0));
    let answer = alice
        .set_push_devices(SetPushDevicesRequest {
            keep: vec![with(&|d| d.expires_at = past.clone()).keep.remove(0)],
            remove: Vec::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!((answer.kept, answer.removed), (0, 1));
    assert_eq!(
        devices(&mut notifier, "schedule.pause", &[]).await,
        ["alice/a2", "bob/bob-phone"]
    );
}

/// `AuditEvents`: every event of the caller's principal in leaf order,
/// sequenced at the call (no checkpoint needed first), each with its
/// proposal's operation; another principal's events are skipped, whoever
/// asks; a page goes on from the leaf after the last one, and a limit over
/// 500 is refused.
#[tokio::test]
async fn audit_events_answers_every_event_in_leaf_order_at_once() {
    let signer = recording().await;
    let first = propose(&mut head(&signer).await).await;
    let mut theirs = support::client_as(&signer, Role::Head, support::OTHER_PRINCIPAL).await;
    theirs.propose(propose_request("theirs")).await.unwrap();
    let second = propose(&mut head(&signer).await).await;
    let mut n = notifier(&signer).await;
    let page = |from_leaf, limit| countersign_proto::v1::AuditEventsRequest { from_leaf, limit };
    let all = n
        .audit_events(page(0, 0))
        .await
        .unwrap()
        .into_inner()
        .events;
    assert_eq!(all.len(), 2, "{all:?}");
    // Leaf 1 is the other principal's proposal.
    for (leaf, (event, view)) in [0, 2].into_iter().zip(all.iter().zip([&first, &second])) {
        assert_eq!(event.leaf_index, leaf);
        assert_eq!(event.kind, "proposed");
        assert_eq!(event.proposal_id, view.id);
        assert_eq!(event.operation, "schedule.create");
        let details: serde_json::Value = serde_json::from_str(&event.details_json).unwrap();
        assert_eq!(details["operation"], "schedule.create");
    }
    let ledger = signer.state().ledger().events().await.unwrap();
    assert_eq!(ledger.len(), 3);
    assert_eq!(all[0].hash, ledger[0].hash);
    let rest = n
        .audit_events(page(1, 1))
        .await
        .unwrap()
        .into_inner()
        .events;
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].hash, all[1].hash);
    // The other principal's notifier reads its own proposal only.
    let mut their_notifier =
        support::client_as(&signer, Role::Notifier, support::OTHER_PRINCIPAL).await;
    let theirs = their_notifier
        .audit_events(page(0, 0))
        .await
        .unwrap()
        .into_inner()
        .events;
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(theirs[0].leaf_index, 1);
    assert!(!theirs[0].proposal_id.is_empty());
    assert!(
        n.audit_events(page(3, 0))
            .await
            .unwrap()
            .into_inner()
            .events
            .is_empty()
    );
    let refused = n.audit_events(page(0, 501)).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
}

/// With the operator's policy naming the approvers of one proposal (its
/// `@approvers`), the notifier asking about that proposal is told of their
/// devices only, as the operation's own quorum would have it; about
/// another principal's proposal, or one that does not exist, it is
/// refused.
#[tokio::test]
async fn the_devices_of_a_proposal_are_those_its_policy_quorum_names() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.cedar");
    std::fs::write(
        &policy,
        "@id(\"two-named\")\n@require_approval\n@quorum(\"1\")\n@approvers(\"bob\")\n\
         permit (principal, action == Action::\"schedule.create\", resource);\n",
    )
    .unwrap();
    let config = format!(
        "\n[console]\naddr = \"127.0.0.1:7997\"\n[notify]\n[policy]\ncedar = \"{}\"\n",
        policy.display()
    );
    let signer = TestSigner::start_configured(Registry::default_toml(), None, &config)
        .await
        .unwrap();
    for approver in ["alice", "bob", "console"] {
        subscribed(&signer, approver).await;
    }
    let id = propose(&mut head(&signer).await).await.id;
    let mut notifier = notifier(&signer).await;
    let ask = |proposal_id: &str| PushDevicesRequest {
        operation: "schedule.create".into(),
        proposal_id: proposal_id.into(),
        ..Default::default()
    };
    let named: Vec<String> = notifier
        .push_devices(ask(&id))
        .await
        .unwrap()
        .into_inner()
        .devices
        .iter()
        .map(|d| format!("{}/{}", d.approver, d.session_id))
        .collect();
    assert_eq!(named, ["bob/bob-phone"]);
    // The operation alone: everyone who could decide it.
    let all = devices(&mut notifier, "schedule.create", &[]).await;
    assert_eq!(all.len(), 3, "{all:?}");
    // Another principal's proposal, or none: refused.
    let mut theirs = client_as(&signer, Role::Head, OTHER_PRINCIPAL).await;
    let other = theirs
        .propose(propose_request("theirs"))
        .await
        .unwrap()
        .into_inner()
        .id;
    for unknown in [other.as_str(), "prop_00000000000000000000000000000000"] {
        let status = notifier.push_devices(ask(unknown)).await.unwrap_err();
        assert_eq!(status.code(), Code::NotFound, "{status:?}");
    }
    let status = notifier.push_devices(ask("not-an-id")).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
}
