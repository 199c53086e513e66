//! API bearer credentials: created by the local user, stored only as hashes.
//!
//! A token is a [`crate::secrets::Secret`] with the prefix `cs1_`. Its
//! store (`api-tokens.json`, a [`crate::secrets::PrivateStore`]) holds,
//! per token, its id, the SHA-256 of the whole token, the principal and
//! audience it is bound to, and its creation, expiry and revocation times.
//! It never holds a token.
//!
//! Why a file and not the ledger: tokens are the local user's credentials
//! for one head, not part of the audit trail of proposals, and the ledger's
//! database roles (PostgreSQL) let heads write; a file in the 0700 home is
//! readable only by the user who runs `countersign`.
//!
//! Must not: log, print or store a token; compare hashes in variable time.

use std::path::Path;

use countersign_identity::IdentityError;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::secrets::{self, CredentialStatus, PrivateStore, StoreError, rfc3339};

/// The prefix of every token (`cs1_`: countersign API credential, version 1).
pub const TOKEN_PREFIX: &str = "cs1_";
/// The longest lifetime a token may have.
pub const MAX_TTL: time::Duration = time::Duration::days(90);
/// The store's file name in the home.
pub const STORE_FILE: &str = "api-tokens.json";

/// Why a token operation failed.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TokenError {
    /// The store file is unsafe, unreadable or unwritable.
    #[error("token store: {0}")]
    Store(String),
    /// No token with that id.
    #[error("no API token {0}")]
    UnknownId(String),
    /// The lifetime is zero, negative or above [`MAX_TTL`].
    #[error("the lifetime must be between 1 second and 90 days")]
    BadTtl,
    /// The system's random source failed.
    #[error("no randomness: {0}")]
    Random(String),
}

impl From<IdentityError> for TokenError {
    fn from(e: IdentityError) -> Self {
        TokenError::Store(e.to_string())
    }
}

impl From<StoreError> for TokenError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::File(file) => TokenError::Store(file),
            StoreError::Random(why) => TokenError::Random(why),
        }
    }
}

/// A raw bearer token: a [`secrets::Secret`] with the `cs1_` prefix.
pub type ApiToken = secrets::Secret;

/// What the store keeps about one token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRecord {
    /// The token id.
    pub id: String,
    /// SHA-256 (hex) of the whole token.
    pub sha256: String,
    /// The principal the token acts for.
    pub principal: String,
    /// The API audience the token is valid for.
    pub audience: String,
    /// RFC 3339.
    pub created_at: String,
    /// RFC 3339.
    pub expires_at: String,
    /// RFC 3339, once revoked.
    pub revoked_at: Option<String>,
}

impl TokenRecord {
    /// Whether it can be used at `now`.
    pub fn status(&self, now: OffsetDateTime) -> CredentialStatus {
        CredentialStatus::at(&self.expires_at, self.revoked_at.as_deref(), now)
    }

    /// The session every proposal and execution of this token belongs to.
    pub fn session(&self) -> String {
        format!("api:{}", self.id)
    }
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreFile {
    version: u32,
    tokens: Vec<TokenRecord>,
}

impl Default for StoreFile {
    fn default() -> Self {
        StoreFile {
            version: 1,
            tokens: Vec::new(),
        }
    }
}

/// Why a presented credential was not accepted. Each is a 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthRefusal {
    /// No `Authorization` header.
    #[error("a bearer credential is required (Authorization: Bearer ...)")]
    Missing,
    /// Not `Bearer cs1_...`, or not a token this store issued.
    #[error("the bearer credential is not valid")]
    Invalid,
    /// Past its expiry.
    #[error("the bearer credential has expired")]
    Expired,
    /// Revoked with `countersign api token revoke`.
    #[error("the bearer credential was revoked")]
    Revoked,
    /// Issued for another API (another audience).
    #[error("the bearer credential is for another audience")]
    WrongAudience,
    /// Issued for another principal.
    #[error("the bearer credential is for another principal")]
    WrongPrincipal,
}

/// The token store of one home.
#[derive(Debug, Clone)]
pub struct TokenStore {
    file: PrivateStore,
}

impl TokenStore {
    /// The store in `home_root`.
    pub fn in_home(home_root: &Path) -> Self {
        Self {
            file: PrivateStore::in_home(home_root, STORE_FILE),
        }
    }

    /// Every record.
    pub fn list(&self) -> Result<Vec<TokenRecord>, TokenError> {
        Ok(self.file.load::<StoreFile>()?.tokens)
    }

    /// Create a token for `principal` and `audience`, valid for `ttl`.
    pub fn create(
        &self,
        principal: &str,
        audience: &str,
        ttl: time::Duration,
    ) -> Result<(ApiToken, TokenRecord), TokenError> {
        if ttl <= time::Duration::ZERO || ttl > MAX_TTL {
            return Err(TokenError::BadTtl);
        }
        let minted = secrets::mint(TOKEN_PREFIX)?;
        let now = OffsetDateTime::now_utc();
        let record = TokenRecord {
            id: minted.secret.id().to_owned(),
            sha256: minted.sha256,
            principal: principal.to_string(),
            audience: audience.to_string(),
            created_at: rfc3339(now),
            expires_at: rfc3339(now + ttl),
            revoked_at: None,
        };
        let added = record.clone();
        self.file.update(move |file: &mut StoreFile| {
            file.tokens.push(added);
            Ok::<_, TokenError>(())
        })?;
        Ok((minted.secret, record))
    }

    /// Revoke token `id` (idempotent for an already revoked one).
    pub fn revoke(&self, id: &str) -> Result<TokenRecord, TokenError> {
        let mut revoked = None;
        self.file.update(|file: &mut StoreFile| {
            let record = file
                .tokens
                .iter_mut()
                .find(|r| r.id == id)
                .ok_or_else(|| TokenError::UnknownId(id.to_owned()))?;
            if record.revoked_at.is_none() {
                record.revoked_at = Some(rfc3339(OffsetDateTime::now_utc()));
            }
            revoked = Some(record.clone());
            Ok::<_, TokenError>(())
        })?;
        revoked.ok_or_else(|| TokenError::UnknownId(id.to_owned()))
    }

    /// Check the credential in an `Authorization` header value against the
    /// store, for `principal` and `audience`. The hash is compared first and
    /// in constant time, so nothing about a token id is revealed to someone
    /// without its secret.
    pub fn authenticate(
        &self,
        header: Option<&[u8]>,
        principal: &str,
        audience: &str,
    ) -> Result<Result<TokenRecord, AuthRefusal>, TokenError> {
        let Some(header) = header else {
            return Ok(Err(AuthRefusal::Missing));
        };
        let Some(token) = std::str::from_utf8(header)
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
        else {
            return Ok(Err(AuthRefusal::Invalid));
        };
        let Some(id) = secrets::id_of(TOKEN_PREFIX, token) else {
            return Ok(Err(AuthRefusal::Invalid));
        };
        let file: StoreFile = self.file.load()?;
        let Some(record) = file.tokens.into_iter().find(|r| r.id == id) else {
            return Ok(Err(AuthRefusal::Invalid));
        };
        if !secrets::matches(token, &record.sha256) {
            return Ok(Err(AuthRefusal::Invalid));
        }
        Ok(match record.status(OffsetDateTime::now_utc()) {
            CredentialStatus::Revoked => Err(AuthRefusal::Revoked),
            CredentialStatus::Expired => Err(AuthRefusal::Expired),
            CredentialStatus::Active if record.audience != audience => {
                Err(AuthRefusal::WrongAudience)
            }
            CredentialStatus::Active if record.principal != principal => {
                Err(AuthRefusal::WrongPrincipal)
            }
            CredentialStatus::Active => Ok(record),
        })
    }
}

/// Parse a lifetime such as `90s`, `30m`, `12h` or `7d`.
pub fn parse_ttl(text: &str) -> Result<time::Duration, TokenError> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: i64 = number.parse().map_err(|_| TokenError::BadTtl)?;
    let unit_secs: i64 = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        _ => return Err(TokenError::BadTtl),
    };
    // Checked: `Duration::days(n)` panics when `n` days overflow an i64 of
    // seconds, and `n` is whatever the person typed.
    let seconds = n.checked_mul(unit_secs).ok_or(TokenError::BadTtl)?;
    let ttl = time::Duration::seconds(seconds);
    if ttl <= time::Duration::ZERO || ttl > MAX_TTL {
        return Err(TokenError::BadTtl);
    }
    Ok(ttl)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn store() -> (tempfile::TempDir, TokenStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_home(dir.path());
        (dir, store)
    }

    fn bearer(token: &ApiToken) -> Vec<u8> {
        format!("Bearer {}", token.expose_secret()).into_bytes()
    }

    #[test]
    fn refuses_a_lifetime_whose_seconds_overflow_without_panicking() {
        for text in [
            "999999999999999d",
            "9223372036854775807m",
            "153722867280912931h",
        ] {
            assert_eq!(parse_ttl(text), Err(TokenError::BadTtl), "{text}");
        }
        assert_eq!(parse_ttl("90d"), Ok(MAX_TTL));
        assert_eq!(parse_ttl("91d"), Err(TokenError::BadTtl));
    }

    #[test]
    fn token_times_are_rfc3339_utc_whole_seconds() {
        let (_dir, store) = store();
        let (_token, record) = store.create("p", "aud", time::Duration::hours(1)).unwrap();
        let revoked = store.revoke(&record.id).unwrap();
        let listed = store.list().unwrap();
        for at in [
            &listed[0].created_at,
            &listed[0].expires_at,
            revoked.revoked_at.as_ref().unwrap(),
        ] {
            assert!(countersign_verifier::timestamp::parse(at).is_ok(), "{at}");
        }
    }

    #[test]
    fn stores_only_the_hash_in_a_private_file() {
        let (dir, store) = store();
        let (token, record) = store.create("p", "aud", time::Duration::hours(1)).unwrap();
        let text = std::fs::read_to_string(dir.path().join(STORE_FILE)).unwrap();
        assert!(!text.contains(token.expose_secret()));
        assert!(text.contains(&record.sha256));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(STORE_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!format!("{token:?}").contains(token.expose_secret()));
    }

    #[test]
    fn accepts_a_live_token_and_refuses_the_rest() {
        let (_dir, store) = store();
        let (token, record) = store.create("p", "aud", time::Duration::hours(1)).unwrap();
        assert_eq!(
            store
                .authenticate(Some(&bearer(&token)), "p", "aud")
                .unwrap(),
            Ok(record.clone())
        );
        assert_eq!(
            store.authenticate(None, "p", "aud").unwrap(),
            Err(AuthRefusal::Missing)
        );
        assert_eq!(
            store
                .authenticate(Some(&bearer(&token)), "p", "other")
                .unwrap(),
            Err(AuthRefusal::WrongAudience)
        );
        assert_eq!(
            store
                .authenticate(Some(&bearer(&token)), "q", "aud")
                .unwrap(),
            Err(AuthRefusal::WrongPrincipal)
        );
        let mut altered = token.expose_secret().to_string();
        altered.pop();
        altered.push(if token.expose_secret().ends_with('A') {
            'B'
        } else {
            'A'
        });
        assert_eq!(
            store
                .authenticate(Some(format!("Bearer {altered}").as_bytes()), "p", "aud")
                .unwrap(),
            Err(AuthRefusal::Invalid)
        );
        assert_eq!(
            store
                .authenticate(Some(token.expose_secret().as_bytes()), "p", "aud")
                .unwrap(),
            Err(AuthRefusal::Invalid)
        );
        store.revoke(&record.id).unwrap();
        assert_eq!(
            store
                .authenticate(Some(&bearer(&token)), "p", "aud")
                .unwrap(),
            Err(AuthRefusal::Revoked)
        );
    }

    #[test]
    fn refuses_an_expired_token() {
        let (_dir, store) = store();
        let (token, _) = store
            .create("p", "aud", time::Duration::seconds(1))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        assert_eq!(
            store
                .authenticate(Some(&bearer(&token)), "p", "aud")
                .unwrap(),
            Err(AuthRefusal::Expired)
        );
    }

    #[test]
    fn parses_lifetimes_and_refuses_silly_ones() {
        assert_eq!(parse_ttl("30m").unwrap(), time::Duration::minutes(30));
        assert_eq!(parse_ttl("7d").unwrap(), time::Duration::days(7));
        for bad in ["", "0s", "-1h", "10", "1y", "91d", "h"] {
            assert_eq!(parse_ttl(bad), Err(TokenError::BadTtl), "{bad}");
        }
    }

    #[test]
    fn revoking_an_unknown_token_is_an_error() {
        let (_dir, store) = store();
        assert_eq!(
            store.revoke("0011223344556677"),
            Err(TokenError::UnknownId("0011223344556677".into()))
        );
    }
}
