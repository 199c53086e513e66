//! This console's Web Push devices, published to the ledger through the
//! signer (`SetPushDevices`), where the notify process learns them
//! (`PushDevices`) whichever signer it asks and whatever user it runs as.
//!
//! The session store stays the console's record of its sessions; what it
//! publishes is derived from it: every active session holding a
//! subscription is kept (with the VAPID public key the page gave the
//! browser and the session's end), every other session the store lists is
//! forgotten. The whole store is published after each change here
//! (subscribe, unsubscribe, unpair, log out), at start and every minute,
//! so a session revoked elsewhere (`countersign console sessions revoke`)
//! or a publication that failed is caught up within a minute; a device is
//! never answered past its session's end in any case.
//!
//! Must not: publish a session of another approver (the signer keys every
//! device by the console's certificate); log an endpoint or a key.

use std::time::Duration;

use countersign_http::secrets::CredentialStatus;
use countersign_proto::v1 as wire;
use time::OffsetDateTime;
use tokio::sync::watch;

use crate::ConsoleState;
use crate::sessions::SessionRecord;

/// How often the whole store is published again.
pub(crate) const EVERY: Duration = Duration::from_secs(60);
/// The most devices kept, and sessions forgotten, in one call (the signer
/// takes up to 500 of each, within its message size limit).
const PER_CALL: usize = 100;

/// The changes that make the ledger hold exactly the devices of
/// `sessions` at `now`, each kept with `key` (the VAPID public key the
/// page gives browsers); without a key nothing is kept, as no push could
/// reach a browser.
pub(crate) fn changes(
    sessions: &[SessionRecord],
    key: Option<&str>,
    now: OffsetDateTime,
) -> wire::SetPushDevicesRequest {
    let mut request = wire::SetPushDevicesRequest::default();
    for s in sessions {
        let active = s.status(now) == CredentialStatus::Active;
        match (active, &s.push, key) {
            (true, Some(push), Some(key)) => request.keep.push(wire::KeptPushDevice {
                session_id: s.id.clone(),
                endpoint: push.endpoint_text().to_owned(),
                p256dh: push.p256dh_base64url(),
                auth: push.auth_base64url(),
                application_server_key: key.to_owned(),
                expires_at: s.expires_at.clone(),
            }),
            _ => request.remove.push(s.id.clone()),
        }
    }
    request
}

/// Publishes the devices of this console's session store now.
pub(crate) async fn publish(state: &ConsoleState) -> Result<(), String> {
    let sessions = state
        .sessions
        .list()
        .map_err(|e| format!("the console's session store: {e}"))?;
    let key = crate::push::application_server_key(state);
    let all = changes(&sessions, key.as_deref(), OffsetDateTime::now_utc());
    let (mut kept, mut removed) = (0, 0);
    for request in in_calls(all) {
        let answer = state
            .approver
            .clone()
            .set_push_devices(request)
            .await
            .map_err(|status| format!("the signer did not record them: {}", status.message()))?
            .into_inner();
        kept += answer.kept;
        removed += answer.removed;
    }
    tracing::debug!(kept, removed, "published this console's Web Push devices");
    Ok(())
}

/// `all` as calls of at most [`PER_CALL`] devices kept and sessions
/// forgotten each (one call when there is nothing to change, which
/// still drops the ledger's devices whose session ended).
fn in_calls(all: wire::SetPushDevicesRequest) -> Vec<wire::SetPushDevicesRequest> {
    let mut keep = all.keep.chunks(PER_CALL);
    let mut remove = all.remove.chunks(PER_CALL);
    let mut calls = Vec::new();
    loop {
        let (k, r) = (keep.next(), remove.next());
        if k.is_none() && r.is_none() && !calls.is_empty() {
            return calls;
        }
        calls.push(wire::SetPushDevicesRequest {
            keep: k.map(<[_]>::to_vec).unwrap_or_default(),
            remove: r.map(<[_]>::to_vec).unwrap_or_default(),
        });
    }
}

/// Publishes this console's devices after a device was forgotten here;
/// if the signer cannot be reached, the next publication (within a
/// minute) forgets it, and it ends with its session in any case.
pub(crate) async fn published_or_later(state: &ConsoleState) {
    if let Err(e) = publish(state).await {
        tracing::warn!(
            "a forgotten Web Push device stays published until the next try, within a minute: {e}"
        );
    }
}

/// Publishes the store at start and every [`EVERY`] until `stop`.
pub(crate) async fn keep_published(
    state: std::sync::Arc<ConsoleState>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if let Err(e) = publish(&state).await {
            tracing::warn!(
                "cannot publish this console's Web Push devices, trying again in a minute: {e}"
            );
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_push::Subscription;

    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    fn session(id: &str, expires_at: &str, revoked: bool, push: bool) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            approver: "console".into(),
            sha256: String::new(),
            page_key_sha256: String::new(),
            paired_with: String::new(),
            created_at: "2026-01-01T00:00:00Z".into(),
            expires_at: expires_at.into(),
            revoked_at: revoked.then(|| "2026-01-02T00:00:00Z".to_owned()),
            device: String::new(),
            last_used_at: None,
            push: push.then(|| Subscription::new("https://push.example/1", P256DH, AUTH).unwrap()),
        }
    }

    #[test]
    fn active_subscribed_sessions_are_kept_and_every_other_is_forgotten() {
        let later = "2099-01-01T00:00:00Z";
        let sessions = [
            session("on", later, false, true),
            session("off", later, false, false),
            session("revoked", later, true, true),
            session("expired", "2020-01-01T00:00:00Z", false, true),
        ];
        let now = OffsetDateTime::now_utc();
        let request = changes(&sessions, Some("BVapid"), now);
        assert_eq!(
            request.keep,
            [wire::KeptPushDevice {
                session_id: "on".into(),
                endpoint: "https://push.example/1".into(),
                p256dh: P256DH.into(),
                auth: AUTH.into(),
                application_server_key: "BVapid".into(),
                expires_at: later.into(),
            }]
        );
        assert_eq!(request.remove, ["off", "revoked", "expired"]);
        // Without a VAPID key no browser can be reached: nothing is kept.
        let request = changes(&sessions, None, now);
        assert!(request.keep.is_empty());
        assert_eq!(request.remove, ["on", "off", "revoked", "expired"]);
    }

    #[test]
    fn a_large_store_is_published_in_calls_of_at_most_a_hundred_each() {
        let later = "2099-01-01T00:00:00Z";
        let sessions: Vec<SessionRecord> = (0..250)
            .map(|n| session(&format!("s{n}"), later, false, n % 5 != 0))
            .collect();
        let all = changes(&sessions, Some("BVapid"), OffsetDateTime::now_utc());
        assert_eq!((all.keep.len(), all.remove.len()), (200, 50));
        let calls = in_calls(all.clone());
        let sizes: Vec<(usize, usize)> = calls
            .iter()
            .map(|c| (c.keep.len(), c.remove.len()))
            .collect();
        assert_eq!(sizes, [(100, 50), (100, 0)]);
        let keep: Vec<_> = calls.iter().flat_map(|c| c.keep.clone()).collect();
        assert_eq!(keep, all.keep);
        // Nothing to change is still one call.
        assert_eq!(in_calls(wire::SetPushDevicesRequest::default()).len(), 1);
    }
}
