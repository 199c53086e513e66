//! Paired browsers: one-time pairing codes and the sessions they open,
//! stored only as hashes, one store per approver.
//!
//! A pairing code (`cp1_<id>_<secret>`) is created at an interactive
//! terminal (`countersign console pair [--as NAME]`) or printed by
//! `countersign console` at start; it expires after [`PAIRING_TTL`] and
//! opens exactly one session, of the approver whose store made it. A
//! session has two secrets. The session secret (`cc1_<id>_<secret>`) lives
//! in the browser's `__Host-` cookie, which a browser also sends to other
//! ports of the host (and Chromium, for `*.localhost`, even over plain
//! http), so it only says which session a request claims. The page key
//! (`ck1_<id>_<secret>`) is handed once, in the answer to the pairing, to
//! the console page's script, which keeps it in the origin's storage and
//! puts it in every form; no cookie and no page carries it, so a request
//! that changes anything must come from a page of the console's own
//! origin. The store keeps both secrets' SHA-256, the expiry
//! ([`SESSION_TTL`]) and the revocation. Each id is 64 random bits (for
//! listing and revoking), each secret 256.
//!
//! A session is also a paired device, as the console's *Devices* page
//! lists it: the name of the browser and system it was paired from (named
//! from its User-Agent at pairing, from a fixed vocabulary:
//! `crate::devices::name_from_user_agent`) and when it was last used, recorded at
//! most once per [`LAST_USE_EVERY`] to spare writes. The person can unpair
//! any of their own devices there ([`SessionStore::unpair`]).
//!
//! Each secret is a `countersign_http::secrets::Secret`, and the store is
//! one `countersign_http::secrets::PrivateStore` per approver in the home
//! (`console-sessions-<approver>.json`, 0600), so the running
//! console and `countersign console pair|sessions` share it, and a
//! revocation takes effect on the console's next request. A console checks
//! on every request that the session is of its own approver.
//!
//! Must not: log, print or store a secret (codes are printed once, to the
//! person who asked for them); compare hashes in variable time.

use std::path::Path;

use countersign_http::secrets::{
    self, CredentialStatus, PrivateStore, Secret, parse_time, rfc3339,
};
use countersign_identity::{ApproverName, IdentityError};
use countersign_push::Subscription;
use serde::{Deserialize, Serialize};
use time::{Duration, OffsetDateTime};

/// How long a pairing link can be used.
pub const PAIRING_TTL: Duration = Duration::minutes(5);
/// How long a paired browser stays paired.
pub const SESSION_TTL: Duration = Duration::hours(12);
/// How long ended pairings and sessions stay listed before they are pruned.
const KEEP_ENDED: Duration = Duration::days(7);
/// A session's last use is written at most this often.
pub const LAST_USE_EVERY: Duration = Duration::minutes(1);
/// The store format this code writes: 2 added each session's device name
/// and last use, 3 its Web Push subscription. An older file reads as
/// version 3 (the new fields absent: no name recorded, not used since
/// pairing, not subscribed); a newer one is refused, since this code would
/// drop what it does not know. Only the console and the CLI read it: the
/// subscriptions reach the notify process through the ledger
/// (`push_devices.rs`).
const STORE_VERSION: u32 = 3;

const PAIRING_PREFIX: &str = "cp1_";
const SESSION_PREFIX: &str = "cc1_";
const PAGE_KEY_PREFIX: &str = "ck1_";

/// Why the store could not be used.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum StoreError {
    /// The file is unsafe, unreadable, unwritable or corrupt.
    #[error("console session store: {0}")]
    Store(String),
    /// No session with that id.
    #[error("no console session {0}")]
    UnknownId(String),
    /// The system's random source failed.
    #[error("no randomness: {0}")]
    Random(String),
}

impl From<IdentityError> for StoreError {
    fn from(e: IdentityError) -> Self {
        StoreError::Store(e.to_string())
    }
}

impl From<secrets::StoreError> for StoreError {
    fn from(e: secrets::StoreError) -> Self {
        match e {
            secrets::StoreError::File(file) => StoreError::Store(file),
            secrets::StoreError::Random(why) => StoreError::Random(why),
        }
    }
}

/// What the store keeps about one paired browser.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRecord {
    /// The session id (not secret).
    pub id: String,
    /// The approver whose console this session decides in.
    pub approver: String,
    /// SHA-256 (hex) of the whole session secret.
    pub sha256: String,
    /// SHA-256 (hex) of the whole page key.
    pub page_key_sha256: String,
    /// The pairing code that opened it (its id).
    pub paired_with: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub expires_at: String,
    /// RFC 3339, once revoked.
    pub revoked_at: Option<String>,
    /// The browser and system it was paired from, as the console named it
    /// from the User-Agent (for example `Chrome on Android`); empty in a
    /// session stored before devices were named.
    #[serde(default)]
    pub device: String,
    /// RFC 3339: when it was last used, to within [`LAST_USE_EVERY`];
    /// absent until its first use after pairing.
    #[serde(default)]
    pub last_used_at: Option<String>,
    /// The browser's Web Push subscription, while the session is active
    /// and the person asked for pushes ("Notify this device"); removed
    /// when the session ends. The notify process pushes to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<Subscription>,
}

/// A device's name when none was recorded (a User-Agent naming no
/// browser we know, or a session stored before devices were named).
pub const UNKNOWN_DEVICE: &str = "Unknown browser";

impl SessionRecord {
    /// The device's name as shown to a person.
    pub fn device_name(&self) -> &str {
        if self.device.is_empty() {
            UNKNOWN_DEVICE
        } else {
            &self.device
        }
    }

    /// Whether it can be used at `now`.
    pub fn status(&self, now: OffsetDateTime) -> CredentialStatus {
        CredentialStatus::at(&self.expires_at, self.revoked_at.as_deref(), now)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PairingRecord {
    id: String,
    sha256: String,
    created_at: String,
    expires_at: String,
    used_at: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    pairings: Vec<PairingRecord>,
    sessions: Vec<SessionRecord>,
}

impl Default for StoreFile {
    fn default() -> Self {
        StoreFile {
            version: STORE_VERSION,
            pairings: Vec::new(),
            sessions: Vec::new(),
        }
    }
}

/// Why a pairing code opened no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PairingRefusal {
    /// Not a code this store issued.
    #[error("This pairing link is not valid")]
    Invalid,
    /// Already used once.
    #[error("This pairing link was already used; create a new one with `countersign console pair`")]
    Used,
    /// Past its expiry.
    #[error("This pairing link has expired; create a new one with `countersign console pair`")]
    Expired,
}

/// Why a session cookie was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionRefusal {
    /// No cookie, or not a session this store opened.
    #[error("This browser is not paired")]
    Invalid,
    /// Past its expiry.
    #[error("This browser's pairing has expired")]
    Expired,
    /// Revoked (`countersign console sessions revoke`, or signed out).
    #[error("This browser's pairing was revoked")]
    Revoked,
}

/// Why a device was not unpaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UnpairRefusal {
    /// No session of this store's approver has that id (another
    /// approver's session is unknown here too).
    #[error("No browser paired with this console has that id")]
    Unknown,
    /// Already revoked, or expired.
    #[error("That browser is no longer paired (its pairing was revoked or has expired)")]
    Ended,
}

/// A pairing redeemed: the session secret for the cookie, the page key
/// for the page's script, and what the store keeps.
#[derive(Debug)]
pub struct Redeemed {
    /// The session secret (the cookie's value).
    pub session: Secret,
    /// The page key (handed once to the page).
    pub page_key: Secret,
    /// The session's record.
    pub record: SessionRecord,
}

/// The console session store of one approver in one home.
#[derive(Debug, Clone)]
pub struct SessionStore {
    approver: ApproverName,
    file: PrivateStore,
}

impl SessionStore {
    /// The store of `approver` in `home_root`.
    pub fn for_approver(home_root: &Path, approver: &ApproverName) -> Self {
        Self {
            approver: approver.clone(),
            file: PrivateStore::in_home(home_root, &store_file(approver)),
        }
    }

    /// The approver whose sessions these are.
    pub fn approver(&self) -> &ApproverName {
        &self.approver
    }

    /// A new one-time pairing code and when it expires (RFC 3339).
    pub fn create_pairing(&self) -> Result<(Secret, String), StoreError> {
        let minted = secrets::mint(PAIRING_PREFIX)?;
        let now = OffsetDateTime::now_utc();
        let expires_at = rfc3339(now + PAIRING_TTL);
        let record = PairingRecord {
            id: minted.secret.id().to_owned(),
            sha256: minted.sha256,
            created_at: rfc3339(now),
            expires_at: expires_at.clone(),
            used_at: None,
        };
        self.update(|file| {
            file.pairings.push(record);
            Ok(())
        })?;
        Ok((minted.secret, expires_at))
    }

    /// Redeem a pairing code: if it is valid, unused and unexpired, mark it
    /// used and open a session for the browser named `device`, whose
    /// secrets are returned once.
    pub fn redeem(
        &self,
        code: &str,
        device: &str,
    ) -> Result<Result<Redeemed, PairingRefusal>, StoreError> {
        let Some(id) = secrets::id_of(PAIRING_PREFIX, code) else {
            return Ok(Err(PairingRefusal::Invalid));
        };
        let session = secrets::mint(SESSION_PREFIX)?;
        let page_key = secrets::mint(PAGE_KEY_PREFIX)?;
        let now = OffsetDateTime::now_utc();
        let mut outcome = Err(PairingRefusal::Invalid);
        self.update(|file| {
            let Some(pairing) = file
                .pairings
                .iter_mut()
                .find(|p| p.id == id && secrets::matches(code, &p.sha256))
            else {
                return Ok(());
            };
            if pairing.used_at.is_some() {
                outcome = Err(PairingRefusal::Used);
                return Ok(());
            }
            if parse_time(&pairing.expires_at).is_none_or(|t| t <= now) {
                outcome = Err(PairingRefusal::Expired);
                return Ok(());
            }
            pairing.used_at = Some(rfc3339(now));
            let record = SessionRecord {
                id: session.secret.id().to_owned(),
                approver: self.approver.to_string(),
                sha256: session.sha256.clone(),
                page_key_sha256: page_key.sha256.clone(),
                paired_with: pairing.id.clone(),
                created_at: rfc3339(now),
                expires_at: rfc3339(now + SESSION_TTL),
                revoked_at: None,
                device: device.to_owned(),
                last_used_at: None,
                push: None,
            };
            file.sessions.push(record.clone());
            outcome = Ok(record);
            Ok(())
        })?;
        Ok(outcome.map(|record| Redeemed {
            session: session.secret,
            page_key: page_key.secret,
            record,
        }))
    }

    /// The session a cookie value names, if it is active; its last use is
    /// recorded (at most once per [`LAST_USE_EVERY`]).
    pub fn authenticate(
        &self,
        cookie: Option<&str>,
    ) -> Result<Result<SessionRecord, SessionRefusal>, StoreError> {
        let Some((cookie, id)) =
            cookie.and_then(|c| secrets::id_of(SESSION_PREFIX, c).map(|id| (c, id)))
        else {
            return Ok(Err(SessionRefusal::Invalid));
        };
        let file = self.load()?;
        let Some(record) = file.sessions.into_iter().find(|s| s.id == id) else {
            return Ok(Err(SessionRefusal::Invalid));
        };
        if !secrets::matches(cookie, &record.sha256) || record.approver != self.approver.as_str() {
            return Ok(Err(SessionRefusal::Invalid));
        }
        let now = OffsetDateTime::now_utc();
        match record.status(now) {
            CredentialStatus::Revoked => return Ok(Err(SessionRefusal::Revoked)),
            CredentialStatus::Expired => return Ok(Err(SessionRefusal::Expired)),
            CredentialStatus::Active => {}
        }
        if !last_use_is_due(&record, now) {
            return Ok(Ok(record));
        }
        // Record the use under the lock, from the file as it is then (a
        // revocation in between is kept, and ends this request too).
        let mut used = Err(SessionRefusal::Invalid);
        self.update(|file| {
            if let Some(stored) = file.sessions.iter_mut().find(|s| s.id == record.id) {
                if last_use_is_due(stored, now) {
                    stored.last_used_at = Some(rfc3339(now));
                }
                used = match stored.status(now) {
                    CredentialStatus::Revoked => Err(SessionRefusal::Revoked),
                    CredentialStatus::Expired => Err(SessionRefusal::Expired),
                    CredentialStatus::Active => Ok(stored.clone()),
                };
            }
            Ok(())
        })?;
        Ok(used)
    }

    /// Every session still listed (ended ones are pruned after a week).
    pub fn list(&self) -> Result<Vec<SessionRecord>, StoreError> {
        Ok(self.load()?.sessions)
    }

    /// Unpair device `id` (end its session), from the console of this
    /// store's approver: only an active session of that approver.
    pub fn unpair(&self, id: &str) -> Result<Result<SessionRecord, UnpairRefusal>, StoreError> {
        let now = OffsetDateTime::now_utc();
        let mut outcome = Err(UnpairRefusal::Unknown);
        self.update(|file| {
            let Some(record) = file
                .sessions
                .iter_mut()
                .find(|s| s.id == id && s.approver == self.approver.as_str())
            else {
                return Ok(());
            };
            outcome = match record.status(now) {
                CredentialStatus::Active => {
                    record.revoked_at = Some(rfc3339(now));
                    record.push = None;
                    Ok(record.clone())
                }
                CredentialStatus::Revoked | CredentialStatus::Expired => Err(UnpairRefusal::Ended),
            };
            Ok(())
        })?;
        Ok(outcome)
    }

    /// The store file as it is now, if this code can read its version.
    fn load(&self) -> Result<StoreFile, StoreError> {
        let file: StoreFile = self.file.load()?;
        check_version(&file)?;
        Ok(file)
    }

    /// Revoke session `id` (idempotent for an already revoked one).
    pub fn revoke(&self, id: &str) -> Result<SessionRecord, StoreError> {
        let mut revoked = None;
        self.update(|file| {
            let record = file
                .sessions
                .iter_mut()
                .find(|s| s.id == id)
                .ok_or_else(|| StoreError::UnknownId(id.to_owned()))?;
            if record.revoked_at.is_none() {
                record.revoked_at = Some(rfc3339(OffsetDateTime::now_utc()));
            }
            record.push = None;
            revoked = Some(record.clone());
            Ok(())
        })?;
        revoked.ok_or_else(|| StoreError::UnknownId(id.to_owned()))
    }

    /// Keep `subscription` as the Web Push subscription of session `id`,
    /// replacing any earlier one, if the session is still active.
    pub fn subscribe(
        &self,
        id: &str,
        subscription: Subscription,
    ) -> Result<Result<(), SessionRefusal>, StoreError> {
        self.set_push(id, Some(subscription))
    }

    /// Forget the Web Push subscription of session `id`, if it is active.
    pub fn unsubscribe(&self, id: &str) -> Result<Result<(), SessionRefusal>, StoreError> {
        self.set_push(id, None)
    }

    fn set_push(
        &self,
        id: &str,
        push: Option<Subscription>,
    ) -> Result<Result<(), SessionRefusal>, StoreError> {
        let now = OffsetDateTime::now_utc();
        let mut outcome = Err(SessionRefusal::Invalid);
        self.update(|file| {
            if let Some(record) = file
                .sessions
                .iter_mut()
                .find(|s| s.id == id && s.approver == self.approver.as_str())
            {
                outcome = match record.status(now) {
                    CredentialStatus::Active => {
                        record.push = push;
                        Ok(())
                    }
                    CredentialStatus::Revoked => Err(SessionRefusal::Revoked),
                    CredentialStatus::Expired => Err(SessionRefusal::Expired),
                };
            }
            Ok(())
        })?;
        Ok(outcome)
    }

    /// Change, prune and atomically replace the store under its lock.
    fn update(
        &self,
        change: impl FnOnce(&mut StoreFile) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.file.update(|file: &mut StoreFile| {
            check_version(file)?;
            change(file)?;
            prune(file, OffsetDateTime::now_utc());
            file.version = STORE_VERSION;
            Ok(())
        })
    }
}

/// Refuses a store file written in a format newer than this code's.
fn check_version(file: &StoreFile) -> Result<(), StoreError> {
    if file.version > STORE_VERSION {
        return Err(StoreError::Store(format!(
            "version {} is newer than this countersign reads ({STORE_VERSION}); nothing was changed",
            file.version
        )));
    }
    Ok(())
}

/// Whether `record`'s last use is old enough to be written again at `now`.
fn last_use_is_due(record: &SessionRecord, now: OffsetDateTime) -> bool {
    record
        .last_used_at
        .as_deref()
        .and_then(parse_time)
        .is_none_or(|t| now - t >= LAST_USE_EVERY)
}

/// Whether `presented` is the page key of the session `record`
/// (constant time).
pub fn page_key_matches(record: &SessionRecord, presented: &str) -> bool {
    secrets::id_of(PAGE_KEY_PREFIX, presented).is_some()
        && secrets::matches(presented, &record.page_key_sha256)
}

/// The store file of `approver`.
pub fn store_file(approver: &ApproverName) -> String {
    format!("console-sessions-{approver}.json")
}

/// Drop pairings and sessions that ended more than [`KEEP_ENDED`] ago,
/// and the push subscription of every session that ended.
fn prune(file: &mut StoreFile, now: OffsetDateTime) {
    for s in &mut file.sessions {
        if s.status(now) != CredentialStatus::Active {
            s.push = None;
        }
    }
    let recent = |t: &str| parse_time(t).is_some_and(|t| t + KEEP_ENDED > now);
    file.pairings.retain(|p| recent(&p.expires_at));
    file.sessions
        .retain(|s| recent(&s.expires_at) && s.revoked_at.as_deref().is_none_or(recent));
}

#[cfg(test)]
#[path = "sessions_tests.rs"]
mod tests;
