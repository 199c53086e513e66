//! The session store: pairing codes, sessions, devices' last use and
//! unpairing, and the store's format versions.
#![allow(clippy::unwrap_used)]

use super::*;

fn name(text: &str) -> ApproverName {
    ApproverName::parse(text).unwrap()
}

fn store() -> (tempfile::TempDir, SessionStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::for_approver(dir.path(), &name("console"));
    (dir, store)
}

fn store_file_of(dir: &tempfile::TempDir) -> std::path::PathBuf {
    dir.path().join(store_file(&name("console")))
}

#[test]
fn a_pairing_code_opens_exactly_one_session() {
    let (_dir, store) = store();
    let (code, _) = store.create_pairing().unwrap();
    let Redeemed {
        session: secret,
        page_key,
        record,
    } = store
        .redeem(code.expose_secret(), "Firefox on Linux")
        .unwrap()
        .unwrap();
    assert_eq!(record.device, "Firefox on Linux");
    assert_eq!(record.last_used_at, None);
    let used = store
        .authenticate(Some(secret.expose_secret()))
        .unwrap()
        .unwrap();
    assert_eq!(used.id, record.id);
    assert!(used.last_used_at.is_some(), "the first use is recorded");
    assert!(page_key_matches(&record, page_key.expose_secret()));
    // Neither the cookie nor another value is the page key.
    assert!(!page_key_matches(&record, secret.expose_secret()));
    assert!(!page_key_matches(&record, ""));
    assert_eq!(
        store
            .redeem(code.expose_secret(), "Firefox on Linux")
            .unwrap()
            .map(|_| ()),
        Err(PairingRefusal::Used)
    );
    assert_eq!(store.list().unwrap().len(), 1);
}

#[test]
fn unknown_forged_and_expired_codes_open_nothing() {
    let (dir, store) = store();
    let (code, _) = store.create_pairing().unwrap();
    let text = code.expose_secret();
    // The right id with another secret.
    let forged = format!(
        "{}{}",
        &text[..text.len() - 1],
        if text.ends_with('A') { 'B' } else { 'A' }
    );
    for bad in [forged.as_str(), "cp1_x", "", "cc1_0000000000000000_aaaa"] {
        assert_eq!(
            store.redeem(bad, "x").unwrap().map(|_| ()),
            Err(PairingRefusal::Invalid),
            "{bad}"
        );
    }
    // Backdate the code's expiry in the file.
    let path = store_file_of(&dir);
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    file["pairings"][0]["expires_at"] =
        rfc3339(OffsetDateTime::now_utc() - Duration::seconds(1)).into();
    std::fs::remove_file(&path).unwrap();
    countersign_identity::files::write_private_new(&path, file.to_string().as_bytes()).unwrap();
    assert_eq!(
        store.redeem(text, "x").unwrap().map(|_| ()),
        Err(PairingRefusal::Expired)
    );
    assert!(store.list().unwrap().is_empty());
}

#[test]
fn a_revoked_session_is_refused_and_the_store_holds_no_secret() {
    let (dir, store) = store();
    let (code, _) = store.create_pairing().unwrap();
    let Redeemed {
        session: secret,
        record,
        ..
    } = store
        .redeem(code.expose_secret(), "Firefox on Linux")
        .unwrap()
        .unwrap();
    store.revoke(&record.id).unwrap();
    assert_eq!(
        store.authenticate(Some(secret.expose_secret())).unwrap(),
        Err(SessionRefusal::Revoked)
    );
    assert_eq!(
        store.authenticate(None).unwrap(),
        Err(SessionRefusal::Invalid)
    );
    assert_eq!(
        store.revoke("0000000000000000"),
        Err(StoreError::UnknownId("0000000000000000".into()))
    );
    let text = std::fs::read_to_string(store_file_of(&dir)).unwrap();
    assert!(!text.contains(secret.expose_secret()));
    assert!(!text.contains(code.expose_secret()));
    assert!(format!("{secret:?}").starts_with("Secret("));
    assert!(!format!("{secret:?}").contains(&secret.expose_secret()[21..]));
}

#[test]
fn a_session_opens_only_the_console_of_its_own_approver() {
    let dir = tempfile::tempdir().unwrap();
    let alice = SessionStore::for_approver(dir.path(), &name("alice"));
    let bob = SessionStore::for_approver(dir.path(), &name("bob"));
    let (code, _) = alice.create_pairing().unwrap();
    // Bob's console does not redeem Alice's pairing code.
    assert_eq!(
        bob.redeem(code.expose_secret(), "x").unwrap().map(|_| ()),
        Err(PairingRefusal::Invalid)
    );
    let redeemed = alice.redeem(code.expose_secret(), "x").unwrap().unwrap();
    let cookie = redeemed.session.expose_secret();
    assert_eq!(redeemed.record.approver, "alice");
    assert_eq!(
        bob.authenticate(Some(cookie)).unwrap(),
        Err(SessionRefusal::Invalid)
    );
    // Even with Alice's record copied into Bob's store.
    let alice_file = std::fs::read(dir.path().join(store_file(&name("alice")))).unwrap();
    std::fs::remove_file(dir.path().join(store_file(&name("bob")))).unwrap();
    countersign_identity::files::write_private_new(
        &dir.path().join(store_file(&name("bob"))),
        &alice_file,
    )
    .unwrap();
    assert_eq!(
        bob.authenticate(Some(cookie)).unwrap(),
        Err(SessionRefusal::Invalid)
    );
    assert!(alice.authenticate(Some(cookie)).unwrap().is_ok());
}

/// Rewrites the store file with `change` applied to its JSON.
fn edit_file(dir: &tempfile::TempDir, change: impl FnOnce(&mut serde_json::Value)) {
    let path = store_file_of(dir);
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    change(&mut file);
    std::fs::remove_file(&path).unwrap();
    countersign_identity::files::write_private_new(&path, file.to_string().as_bytes()).unwrap();
}

fn last_used(store: &SessionStore) -> Option<String> {
    store.list().unwrap()[0].last_used_at.clone()
}

#[test]
fn a_session_records_its_last_use_at_most_once_a_minute() {
    let (dir, store) = store();
    let (code, _) = store.create_pairing().unwrap();
    let secret = store
        .redeem(code.expose_secret(), "Chrome on Android")
        .unwrap()
        .unwrap()
        .session;
    let cookie = Some(secret.expose_secret());
    assert_eq!(last_used(&store), None);
    store.authenticate(cookie).unwrap().unwrap();
    let first = last_used(&store).expect("the first use is written");
    // Within the minute: nothing is written (the file stays as it was).
    let before = std::fs::read(store_file_of(&dir)).unwrap();
    store.authenticate(cookie).unwrap().unwrap();
    assert_eq!(std::fs::read(store_file_of(&dir)).unwrap(), before);
    // 59 s ago is still recent; 61 s ago is written again.
    let now = OffsetDateTime::now_utc();
    for (ago, written) in [(59, false), (61, true)] {
        let then = rfc3339(now - Duration::seconds(ago));
        edit_file(&dir, |f| {
            f["sessions"][0]["last_used_at"] = then.clone().into()
        });
        let used = store.authenticate(cookie).unwrap().unwrap();
        assert_eq!(used.last_used_at != Some(then.clone()), written, "{ago} s");
        assert_eq!(last_used(&store) != Some(then), written, "{ago} s");
    }
    assert!(last_used(&store).unwrap() >= first);
    // A revoked session is refused and its last use is not written.
    let id = store.list().unwrap()[0].id.clone();
    edit_file(&dir, |f| {
        f["sessions"][0]["last_used_at"] = serde_json::Value::Null
    });
    store.revoke(&id).unwrap();
    assert_eq!(
        store.authenticate(cookie).unwrap(),
        Err(SessionRefusal::Revoked)
    );
    assert_eq!(last_used(&store), None);
}

#[test]
fn unpair_ends_only_an_active_session_of_this_approver() {
    let dir = tempfile::tempdir().unwrap();
    let alice = SessionStore::for_approver(dir.path(), &name("alice"));
    let bob = SessionStore::for_approver(dir.path(), &name("bob"));
    let pair = |store: &SessionStore| {
        let (code, _) = store.create_pairing().unwrap();
        store
            .redeem(code.expose_secret(), "Safari on iPhone")
            .unwrap()
            .unwrap()
    };
    let phone = pair(&alice);
    let bobs = pair(&bob);
    // Bob's session, a malformed id and an unknown one: unknown here.
    for id in [bobs.record.id.as_str(), "../x", "", "0000000000000000"] {
        assert_eq!(
            alice.unpair(id).unwrap(),
            Err(UnpairRefusal::Unknown),
            "{id}"
        );
    }
    assert!(
        bob.authenticate(Some(bobs.session.expose_secret()))
            .unwrap()
            .is_ok()
    );
    // Even with Bob's record copied into Alice's store.
    let bob_file = std::fs::read(dir.path().join(store_file(&name("bob")))).unwrap();
    let alice_path = dir.path().join(store_file(&name("alice")));
    let alice_file = std::fs::read(&alice_path).unwrap();
    std::fs::remove_file(&alice_path).unwrap();
    countersign_identity::files::write_private_new(&alice_path, &bob_file).unwrap();
    assert_eq!(
        alice.unpair(&bobs.record.id).unwrap(),
        Err(UnpairRefusal::Unknown)
    );
    std::fs::remove_file(&alice_path).unwrap();
    countersign_identity::files::write_private_new(&alice_path, &alice_file).unwrap();

    let unpaired = alice.unpair(&phone.record.id).unwrap().unwrap();
    assert_eq!(unpaired.device, "Safari on iPhone");
    assert!(unpaired.revoked_at.is_some());
    assert_eq!(
        alice
            .authenticate(Some(phone.session.expose_secret()))
            .unwrap(),
        Err(SessionRefusal::Revoked)
    );
    assert_eq!(
        alice.unpair(&phone.record.id).unwrap(),
        Err(UnpairRefusal::Ended)
    );
    // An expired one is ended too.
    let other = pair(&alice);
    let path = dir.path().join(store_file(&name("alice")));
    let mut file: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for s in file["sessions"].as_array_mut().unwrap() {
        if s["id"] == other.record.id.as_str() {
            s["expires_at"] = rfc3339(OffsetDateTime::now_utc() - Duration::seconds(1)).into();
        }
    }
    std::fs::remove_file(&path).unwrap();
    countersign_identity::files::write_private_new(&path, file.to_string().as_bytes()).unwrap();
    assert_eq!(
        alice.unpair(&other.record.id).unwrap(),
        Err(UnpairRefusal::Ended)
    );
}

#[test]
fn a_version_1_store_reads_and_a_newer_version_is_refused() {
    let (dir, store) = store();
    // A session as version 1 wrote it: no device, no last use.
    let v1 = serde_json::json!({
        "version": 1,
        "pairings": [],
        "sessions": [{
            "id": "00000000000000aa",
            "approver": "console",
            "sha256": "00",
            "page_key_sha256": "00",
            "paired_with": "00000000000000bb",
            "created_at": rfc3339(OffsetDateTime::now_utc()),
            "expires_at": rfc3339(OffsetDateTime::now_utc() + Duration::hours(1)),
            "revoked_at": null
        }]
    });
    countersign_identity::files::write_private_new(&store_file_of(&dir), v1.to_string().as_bytes())
        .unwrap();
    let listed = store.list().unwrap();
    assert_eq!(
        (listed[0].device.as_str(), listed[0].last_used_at.as_deref()),
        ("", None)
    );
    // The next write keeps it, in version 3.
    store.create_pairing().unwrap();
    let text = std::fs::read_to_string(store_file_of(&dir)).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(file["version"], 3);
    assert_eq!(file["sessions"][0]["id"], "00000000000000aa");

    edit_file(&dir, |f| f["version"] = 4.into());
    let refused = StoreError::Store(
        "version 4 is newer than this countersign reads (3); nothing was changed".into(),
    );
    assert_eq!(store.list(), Err(refused.clone()));
    assert_eq!(store.create_pairing().map(|_| ()), Err(refused.clone()));
    assert_eq!(store.unpair("00000000000000aa"), Err(refused));
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(
            &std::fs::read_to_string(store_file_of(&dir)).unwrap()
        )
        .unwrap()["version"],
        4,
        "a newer store is left as it is"
    );
}

const P256DH: &str =
    "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

fn subscription(n: u32) -> Subscription {
    Subscription::new(&format!("https://push.example/{n}"), P256DH, AUTH).unwrap()
}

/// The endpoints the console publishes for the notify process, sorted.
fn devices(store: &SessionStore) -> Vec<String> {
    let sessions = store.list().unwrap();
    let published =
        crate::push_devices::changes(&sessions, Some("BVapid"), OffsetDateTime::now_utc());
    let mut endpoints: Vec<String> = published.keep.into_iter().map(|d| d.endpoint).collect();
    endpoints.sort();
    endpoints
}

#[test]
fn a_subscription_is_kept_with_its_session_and_published() {
    let (_dir, store) = store();
    let pair = || {
        let (code, _) = store.create_pairing().unwrap();
        store
            .redeem(code.expose_secret(), "x")
            .unwrap()
            .unwrap()
            .record
    };
    let (phone, laptop) = (pair(), pair());
    assert_eq!(store.subscribe(&phone.id, subscription(1)).unwrap(), Ok(()));
    assert_eq!(
        store.subscribe(&laptop.id, subscription(2)).unwrap(),
        Ok(())
    );
    // What the console publishes for the notify process.
    assert_eq!(
        devices(&store),
        ["https://push.example/1", "https://push.example/2"]
    );
    // A new subscription replaces the old; unsubscribing forgets it.
    assert_eq!(store.subscribe(&phone.id, subscription(3)).unwrap(), Ok(()));
    assert_eq!(store.unsubscribe(&laptop.id).unwrap(), Ok(()));
    assert_eq!(devices(&store), ["https://push.example/3"]);
    let laptop_now = store
        .list()
        .unwrap()
        .into_iter()
        .find(|s| s.id == laptop.id);
    assert_eq!(laptop_now.unwrap().push, None);
}

#[test]
fn a_subscription_ends_with_its_session() {
    let (dir, store) = store();
    let pair = || {
        let (code, _) = store.create_pairing().unwrap();
        store
            .redeem(code.expose_secret(), "x")
            .unwrap()
            .unwrap()
            .record
    };
    let (unpaired, revoked, expired) = (pair(), pair(), pair());
    for (n, record) in [&unpaired, &revoked, &expired].into_iter().enumerate() {
        store
            .subscribe(&record.id, subscription(n as u32))
            .unwrap()
            .unwrap();
    }
    store.unpair(&unpaired.id).unwrap().unwrap();
    store.revoke(&revoked.id).unwrap();
    let past = rfc3339(OffsetDateTime::now_utc() - Duration::minutes(1));
    edit_file(&dir, |f| f["sessions"][2]["expires_at"] = past.into());
    // An expired session is not published at once ...
    assert!(devices(&store).is_empty());
    // ... and the store drops its subscription at its next write.
    store.create_pairing().unwrap();
    assert!(store.list().unwrap().iter().all(|s| s.push.is_none()));
    // An ended session cannot subscribe again.
    assert_eq!(
        store.subscribe(&revoked.id, subscription(9)).unwrap(),
        Err(SessionRefusal::Revoked)
    );
    assert_eq!(
        store.subscribe(&expired.id, subscription(9)).unwrap(),
        Err(SessionRefusal::Expired)
    );
    assert!(devices(&store).is_empty());
}

#[test]
fn a_session_of_another_approver_cannot_be_subscribed() {
    let dir = tempfile::tempdir().unwrap();
    let alice = SessionStore::for_approver(dir.path(), &name("alice"));
    let bob = SessionStore::for_approver(dir.path(), &name("bob"));
    let (code, _) = bob.create_pairing().unwrap();
    let bobs = bob
        .redeem(code.expose_secret(), "x")
        .unwrap()
        .unwrap()
        .record;
    for id in [bobs.id.as_str(), "0000000000000000", ""] {
        assert_eq!(
            alice.subscribe(id, subscription(1)).unwrap(),
            Err(SessionRefusal::Invalid),
            "{id}"
        );
    }
    assert!(bob.list().unwrap()[0].push.is_none());
}
