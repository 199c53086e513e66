//! The Web Push devices of the consoles, as the ledger holds them
//! (`push_devices`, schema version 17): a browser subscribed in a console
//! session, recorded by the signer for that console and read back by it
//! for the notify process. Nothing here authorizes anything: a device is
//! only where a person is told that something waits.
//!
//! Must not: show an endpoint, a key or an auth secret in `Debug` (they
//! are capabilities to reach a person's device).

use std::fmt;

use time::OffsetDateTime;

/// A browser subscribed to Web Push in one console session.
#[derive(Clone, PartialEq, Eq)]
pub struct PushDevice {
    /// The console session's id (not secret).
    pub session_id: String,
    /// The push service's URL for this browser.
    pub endpoint: String,
    /// The browser's P-256 public key, base64url.
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
    /// The VAPID public key the console gives browsers to subscribe with,
    /// base64url.
    pub application_server_key: String,
    /// When the session ends (whole seconds, UTC): not read after it.
    pub expires_at: OffsetDateTime,
}

impl fmt::Debug for PushDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushDevice")
            .field("session_id", &self.session_id)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

/// A device with the approver whose console session it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApproverDevice {
    /// The approver's name.
    pub approver: String,
    /// The device.
    pub device: PushDevice,
}
