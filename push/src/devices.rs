//! The subscribed devices of a home, as the console's session stores hold
//! them (`console-sessions-<approver>.json`, 0600, one per approver of the
//! home's principal), read-only: the notify process runs as the same user
//! in the same home (development installation) and never writes them.
//!
//! A device counts only while its session is active (not revoked, not
//! expired) and holds a subscription: the console removes the
//! subscription when the session ends (unpair, revoke, or at its next
//! write after expiry), and this check does not wait for that.
//!
//! This reads only the fields it needs of the console's store format and
//! refuses a format newer than it knows; the console's tests read what the
//! console wrote through this function, so the two cannot drift apart
//! unseen.
//!
//! Must not: write a store; return a device of an ended session.

use std::path::Path;

use countersign_identity::IdentityError;
use countersign_identity::files::read_private;
use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::Subscription;

/// The newest console store format this code reads (3 added `push`).
pub const STORE_VERSION: u32 = 3;

/// One subscribed device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribedDevice {
    /// The approver whose console the session decides in.
    pub approver: String,
    /// The session id (not secret).
    pub session_id: String,
    /// Where and how to push to it.
    pub subscription: Subscription,
}

#[derive(Deserialize)]
struct StoreView {
    version: u32,
    sessions: Vec<SessionView>,
}

#[derive(Deserialize)]
struct SessionView {
    id: String,
    approver: String,
    expires_at: String,
    revoked_at: Option<String>,
    #[serde(default)]
    push: Option<Subscription>,
}

/// Every active, subscribed device of every approver in `home_root` at
/// `now`, ordered by approver and session. The error names the store
/// that cannot be read.
pub fn subscribed_devices(
    home_root: &Path,
    now: OffsetDateTime,
) -> Result<Vec<SubscribedDevice>, String> {
    let entries =
        std::fs::read_dir(home_root).map_err(|e| format!("{}: {e}", home_root.display()))?;
    let mut devices = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", home_root.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("console-sessions-") && name.ends_with(".json")) {
            continue;
        }
        let path = entry.path();
        let bytes = match read_private(&path) {
            Ok(bytes) => bytes,
            Err(IdentityError::Missing(_)) => continue,
            Err(e) => return Err(e.to_string()),
        };
        let store: StoreView = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{} is not readable: {e}", path.display()))?;
        if store.version > STORE_VERSION {
            return Err(format!(
                "{}: version {} is newer than this countersign reads ({STORE_VERSION})",
                path.display(),
                store.version
            ));
        }
        for s in store.sessions {
            let active = s.revoked_at.is_none()
                && OffsetDateTime::parse(&s.expires_at, &Rfc3339).is_ok_and(|t| t > now);
            if let (true, Some(subscription)) = (active, s.push) {
                devices.push(SubscribedDevice {
                    approver: s.approver,
                    session_id: s.id,
                    subscription,
                });
            }
        }
    }
    devices.sort_by(|a, b| (&a.approver, &a.session_id).cmp(&(&b.approver, &b.session_id)));
    Ok(devices)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_identity::files::write_private_new;

    const P256DH: &str =
        "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY";
    const AUTH: &str = "_ordMnz7uTCmrpBTeUV4Bw";

    #[test]
    fn only_active_sessions_with_a_subscription_are_devices() {
        let dir = tempfile::tempdir().unwrap();
        let push = |n: u32| serde_json::json!({"endpoint": format!("https://push.example/{n}"), "p256dh": P256DH, "auth": AUTH});
        let session = |id: &str,
                       expires: &str,
                       revoked: Option<&str>,
                       push: Option<serde_json::Value>| {
            let mut s = serde_json::json!({"id": id, "approver": "console", "sha256": "", "page_key_sha256": "",
                "paired_with": "", "created_at": "2026-01-01T00:00:00Z", "expires_at": expires, "revoked_at": revoked, "device": "d"});
            if let Some(p) = push {
                s["push"] = p;
            }
            s
        };
        let store = serde_json::json!({"version": 3, "pairings": [], "sessions": [
            session("a", "2099-01-01T00:00:00Z", None, Some(push(1))),
            session("b", "2099-01-01T00:00:00Z", Some("2026-01-01T00:00:00Z"), Some(push(2))),
            session("c", "2020-01-01T00:00:00Z", None, Some(push(3))),
            session("d", "2099-01-01T00:00:00Z", None, None),
        ]});
        write_private_new(
            &dir.path().join("console-sessions-console.json"),
            store.to_string().as_bytes(),
        )
        .unwrap();
        let devices = subscribed_devices(dir.path(), OffsetDateTime::now_utc()).unwrap();
        let ids: Vec<_> = devices.iter().map(|d| d.session_id.as_str()).collect();
        assert_eq!(ids, ["a"]);
        assert_eq!(
            devices[0].subscription.endpoint_text(),
            "https://push.example/1"
        );
    }

    #[test]
    fn refuses_a_store_newer_than_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("console-sessions-console.json");
        write_private_new(&path, br#"{"version": 4, "pairings": [], "sessions": []}"#).unwrap();
        assert_eq!(
            subscribed_devices(dir.path(), OffsetDateTime::now_utc()).unwrap_err(),
            format!(
                "{}: version 4 is newer than this countersign reads (3)",
                path.display()
            )
        );
    }
}
