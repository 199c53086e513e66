//! The browsers subscribed to Web Push in a home's console, as the
//! console's session stores hold them (`console-sessions-<approver>.json`,
//! 0600, one per approver of the home's principal), read-only. The signer
//! reads them from its own home (the console's, run as the same user) to
//! answer the notify process's `PushDevices`, so the notify process needs
//! no access to the console's files and can run as a user of its own.
//!
//! A device counts only while its session is active (not revoked, not
//! expired) and holds a subscription: the console removes the
//! subscription when the session ends (unpair, revoke, or at its next
//! write after expiry), and this check does not wait for that.
//!
//! This reads only the fields it needs of the console's store format and
//! refuses a format newer than it knows; the console's tests read what the
//! console wrote through this function, so the two cannot drift apart
//! unseen. The subscription's three parts are passed on as stored: the
//! notify process, the only one that sends, parses them strictly.
//!
//! Must not: write a store; return a device of an ended session; show an
//! endpoint or a key in `Debug`.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::IdentityError;
use crate::files::read_private;

/// The newest console store format this code reads (3 added `push`).
pub const CONSOLE_STORE_VERSION: u32 = 3;

/// One subscribed device: its session and where to push to it.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredDevice {
    /// The approver whose console the session decides in.
    pub approver: String,
    /// The session id (not secret).
    pub session_id: String,
    /// The push service's URL for this browser (a capability: never logged).
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
}

impl fmt::Debug for StoredDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredDevice")
            .field("approver", &self.approver)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
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
    push: Option<PushView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PushView {
    endpoint: String,
    p256dh: String,
    auth: String,
}

/// Every active, subscribed device of every approver in `home_root` at
/// `now`, ordered by approver and session. The error names the store
/// that cannot be read.
pub fn subscribed_devices(
    home_root: &Path,
    now: OffsetDateTime,
) -> Result<Vec<StoredDevice>, String> {
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
        if store.version > CONSOLE_STORE_VERSION {
            return Err(format!(
                "{}: version {} is newer than this countersign reads ({CONSOLE_STORE_VERSION})",
                path.display(),
                store.version
            ));
        }
        for s in store.sessions {
            let active = s.revoked_at.is_none()
                && OffsetDateTime::parse(&s.expires_at, &Rfc3339).is_ok_and(|t| t > now);
            if let (true, Some(push)) = (active, s.push) {
                devices.push(StoredDevice {
                    approver: s.approver,
                    session_id: s.id,
                    endpoint: push.endpoint,
                    p256dh: push.p256dh,
                    auth: push.auth,
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
    use crate::files::write_private_new;

    #[test]
    fn only_active_sessions_with_a_subscription_are_devices() {
        let dir = tempfile::tempdir().unwrap();
        let push = |n: u32| serde_json::json!({"endpoint": format!("https://push.example/{n}"), "p256dh": "k", "auth": "a"});
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
        assert_eq!(
            devices,
            [StoredDevice {
                approver: "console".into(),
                session_id: "a".into(),
                endpoint: "https://push.example/1".into(),
                p256dh: "k".into(),
                auth: "a".into(),
            }]
        );
        // Its Debug names the session, never where or how to push.
        let shown = format!("{:?}", devices[0]);
        assert!(
            shown.contains("\"a\"") && !shown.contains("push.example"),
            "{shown}"
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
