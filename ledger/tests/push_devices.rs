//! The consoles' Web Push devices in the ledger (schema version 17), on
//! both backends: a console's changes to its approver's devices commit
//! together, never touch another approver's or principal's device, and a
//! device is not read once its session has ended.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Kind, TestLedger};
use countersign_ledger::{ApproverDevice, PushDevice};
use time::{Duration, OffsetDateTime};

const ALICE: &str = "pr_00000000000000000000000000000001";
const BOB: &str = "pr_00000000000000000000000000000002";

fn device(session: &str, ends_in: Duration) -> PushDevice {
    let at = OffsetDateTime::now_utc() + ends_in;
    PushDevice {
        session_id: session.into(),
        endpoint: format!("https://push.example/{session}"),
        p256dh: "BKey".into(),
        auth: "auth".into(),
        application_server_key: "BVapid".into(),
        expires_at: at.replace_nanosecond(0).unwrap(),
    }
}

fn named(devices: &[ApproverDevice]) -> Vec<String> {
    devices
        .iter()
        .map(|d| format!("{}/{}", d.approver, d.device.session_id))
        .collect()
}

on_both_backends!(a_console_keeps_and_forgets_its_own_approvers_devices_only);
async fn a_console_keeps_and_forgets_its_own_approvers_devices_only(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let day = Duration::days(1);
    let l = &t.ledger;
    assert_eq!(
        l.set_push_devices(
            ALICE,
            "console",
            &[device("s1", day), device("s2", day)],
            &[]
        )
        .await
        .unwrap(),
        (2, 0)
    );
    l.set_push_devices(ALICE, "alice", &[device("s1", day)], &[])
        .await
        .unwrap();
    l.set_push_devices(BOB, "console", &[device("s9", day)], &[])
        .await
        .unwrap();
    let read = l.push_devices(ALICE).await.unwrap();
    assert_eq!(named(&read), ["alice/s1", "console/s1", "console/s2"]);
    assert_eq!(read[1].device, device("s1", day));
    // A subscription again: the session's device is replaced, not doubled.
    let mut again = device("s2", day);
    again.endpoint = "https://push.example/renewed".into();
    l.set_push_devices(ALICE, "console", &[again.clone()], &[])
        .await
        .unwrap();
    let read = l.push_devices(ALICE).await.unwrap();
    assert_eq!(read.len(), 3);
    assert_eq!(read[2].device, again);
    // Forgetting names the approver: alice's s1 stays when console's goes,
    // an unknown session counts nothing, another principal is untouched.
    assert_eq!(
        l.set_push_devices(ALICE, "console", &[], &["s1".into(), "nope".into()])
            .await
            .unwrap(),
        (0, 1)
    );
    assert_eq!(
        named(&l.push_devices(ALICE).await.unwrap()),
        ["alice/s1", "console/s2"]
    );
    assert_eq!(named(&l.push_devices(BOB).await.unwrap()), ["console/s9"]);
    // Its Debug names the session, never where or how to push.
    let shown = format!("{:?}", read[0]);
    assert!(
        shown.contains("s1") && !shown.contains("push.example") && !shown.contains("auth\""),
        "{shown}"
    );
}

on_both_backends!(a_device_whose_session_ended_is_not_read_and_goes_at_the_next_write);
async fn a_device_whose_session_ended_is_not_read_and_goes_at_the_next_write(kind: Kind) {
    let t = TestLedger::on(kind).await;
    let l = &t.ledger;
    l.set_push_devices(
        ALICE,
        "console",
        &[
            device("old", -Duration::seconds(1)),
            device("new", Duration::hours(1)),
        ],
        &[],
    )
    .await
    .unwrap();
    assert_eq!(
        named(&l.push_devices(ALICE).await.unwrap()),
        ["console/new"]
    );
    assert_eq!(t.count("push_devices").await, 2);
    l.set_push_devices(ALICE, "alice", &[], &[]).await.unwrap();
    assert_eq!(t.count("push_devices").await, 1);
}
