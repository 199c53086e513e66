//! The installation's VAPID key (RFC 8292): an ECDSA P-256 key pair whose
//! public half is the `applicationServerKey` a browser subscribes with, and
//! whose private half signs the JWT that identifies this installation to
//! a push service on every push.
//!
//! Files, in the notify process's directory of the home (`notify/`, 0700):
//! `vapid.key` (PKCS#8 in PEM, 0600: only the sending process reads it)
//! and `vapid.pub` (the public key as base64url of the uncompressed point,
//! the form `pushManager.subscribe` takes; 0600 as well, read by the
//! console of the same home). Both are written once, with `O_EXCL`, so two
//! processes making them at once cannot replace one another's key; a key
//! is never rewritten (replacing it would end every subscription).
//!
//! Must not: print, log or serialize the private key; sign anything but a
//! VAPID JWT.

use std::fmt;
use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use countersign_identity::files::{read_private, write_private_new};
use countersign_identity::{Home, IdentityError};
use countersign_registry::WebhookUrl;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use zeroize::Zeroizing;

/// How long a VAPID JWT is valid: 12 hours (RFC 8292 allows at most 24).
pub const JWT_VALIDITY_SECS: i64 = 12 * 60 * 60;

const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

/// Why the VAPID key cannot be made or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VapidError {
    /// No key in this home yet.
    #[error(
        "this home has no VAPID key ({0}): run `countersign init` or start `countersign notify serve` with [notify.push]"
    )]
    Missing(String),
    /// This home keeps the public half only: the private key was moved to
    /// the notify process's own home (the hardened installation).
    #[error(
        "this home keeps only the VAPID public key ({0}): its private key is in the notify process's own home (deploy/setup-system.sh moved it there), so run `countersign notify serve` with that home"
    )]
    PublicOnly(String),
    /// A file is unsafe, unreadable or unwritable (the message names it).
    #[error("VAPID key: {0}")]
    File(String),
    /// A file does not hold what it should.
    #[error("VAPID key {0} is not valid: {1}")]
    Invalid(String, &'static str),
    /// The system's random source or the signature failed.
    #[error("VAPID key: {0}")]
    Crypto(&'static str),
}

/// The private VAPID key, loaded. Its `Debug` shows the algorithm and the
/// public key only; the PKCS#8 bytes are zeroized once parsed.
pub struct VapidKey {
    pair: EcdsaKeyPair,
    public: String,
}

impl fmt::Debug for VapidKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VapidKey(ES256, k={})", self.public)
    }
}

impl VapidKey {
    /// Makes the key pair of `home` unless it is there (both files, 0600),
    /// and returns the paths it wrote. Idempotent: an existing key is kept,
    /// and a public file that does not match it is refused. A home that
    /// holds the public half alone is kept as it is: its private half was
    /// moved to the notify process's own home (deploy/setup-system.sh),
    /// and a new key here would end every subscription made with it.
    pub fn ensure(home: &Home) -> Result<Vec<std::path::PathBuf>, VapidError> {
        home.ensure_notify_dir().map_err(file_error)?;
        let mut written = Vec::new();
        let key_path = home.vapid_key_path();
        if !key_path.exists() && home.vapid_public_path().exists() {
            public_key(home)?;
            return Ok(written);
        }
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| VapidError::Crypto("no randomness to make a key"))?;
        let pem = Zeroizing::new(pem_of(pkcs8.as_ref()));
        match write_private_new(&key_path, pem.as_bytes()) {
            Ok(()) => written.push(key_path.clone()),
            Err(IdentityError::AlreadyExists(_)) => {}
            Err(e) => return Err(file_error(e)),
        }
        let key = VapidKey::load(home)?;
        let public_path = home.vapid_public_path();
        match write_private_new(&public_path, format!("{}\n", key.public).as_bytes()) {
            Ok(()) => written.push(public_path),
            Err(IdentityError::AlreadyExists(_)) => {
                if public_key(home)? != key.public {
                    return Err(VapidError::Invalid(
                        public_path.display().to_string(),
                        "it is not the public half of vapid.key",
                    ));
                }
            }
            Err(e) => return Err(file_error(e)),
        }
        Ok(written)
    }

    /// The private key of `home` (the sending process only).
    pub fn load(home: &Home) -> Result<VapidKey, VapidError> {
        let path = home.vapid_key_path();
        let text = match read_key_file(&path) {
            Err(VapidError::Missing(_)) if home.vapid_public_path().exists() => {
                return Err(VapidError::PublicOnly(
                    home.vapid_public_path().display().to_string(),
                ));
            }
            read => read?,
        };
        let der = Zeroizing::new(der_of(&text).ok_or_else(|| {
            VapidError::Invalid(path.display().to_string(), "not a PEM private key")
        })?);
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &SystemRandom::new())
                .map_err(|_| {
                    VapidError::Invalid(path.display().to_string(), "not a P-256 PKCS#8 key")
                })?;
        let public = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        Ok(VapidKey { pair, public })
    }

    /// The public key: base64url (no padding) of the 65-byte uncompressed
    /// point, the browser's `applicationServerKey`.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header value for a push to `endpoint` at `now`
    /// (Unix seconds): `vapid t=<JWT>, k=<public key>`, the JWT (ES256)
    /// claiming `aud` = the endpoint's origin, `exp` = now + 12 h and `sub`
    /// = `contact` (RFC 8292 sections 2 and 3).
    pub fn authorization(
        &self,
        endpoint: &WebhookUrl,
        contact: &str,
        now: i64,
    ) -> Result<String, VapidError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({
            "aud": origin(endpoint),
            "exp": now.saturating_add(JWT_VALIDITY_SECS),
            "sub": contact,
        });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string().as_bytes());
        let signing_input = format!("{header}.{claims}");
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(|_| VapidError::Crypto("the signature failed"))?;
        Ok(format!(
            "vapid t={signing_input}.{}, k={}",
            URL_SAFE_NO_PAD.encode(signature.as_ref()),
            self.public
        ))
    }
}

/// The public key of `home` (base64url), as the console serves it; the
/// private key is not read.
pub fn public_key(home: &Home) -> Result<String, VapidError> {
    public_key_at(&home.vapid_public_path())
}

/// The public key in the file at `path` (a home's `notify/vapid.pub`).
pub fn public_key_at(path: &Path) -> Result<String, VapidError> {
    let text = read_key_file(path)?;
    let key = text.trim();
    match URL_SAFE_NO_PAD.decode(key) {
        Ok(point) if point.len() == 65 && point[0] == 4 => Ok(key.to_owned()),
        _ => Err(VapidError::Invalid(
            path.display().to_string(),
            "not a base64url uncompressed P-256 point",
        )),
    }
}

/// The origin of `endpoint` (RFC 6454): scheme, host and the port unless
/// it is the scheme's default. The VAPID JWT's `aud`.
pub fn origin(endpoint: &WebhookUrl) -> String {
    let (scheme, default_port) = if endpoint.is_https() {
        ("https", 443)
    } else {
        ("http", 80)
    };
    let host = if endpoint.host().contains(':') {
        format!("[{}]", endpoint.host())
    } else {
        endpoint.host().to_ascii_lowercase()
    };
    if endpoint.port() == default_port {
        format!("{scheme}://{host}")
    } else {
        format!("{scheme}://{host}:{}", endpoint.port())
    }
}

fn read_key_file(path: &Path) -> Result<Zeroizing<String>, VapidError> {
    let bytes = match read_private(path) {
        Ok(bytes) => bytes,
        Err(IdentityError::Missing(_)) => {
            return Err(VapidError::Missing(path.display().to_string()));
        }
        Err(e) => return Err(file_error(e)),
    };
    String::from_utf8(bytes.to_vec())
        .map(Zeroizing::new)
        .map_err(|_| VapidError::Invalid(path.display().to_string(), "not text"))
}

fn file_error(e: IdentityError) -> VapidError {
    VapidError::File(e.to_string())
}

fn pem_of(der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut pem = format!("{PEM_BEGIN}\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(PEM_END);
    pem.push('\n');
    pem
}

fn der_of(pem: &str) -> Option<Vec<u8>> {
    let inner = pem.trim().strip_prefix(PEM_BEGIN)?.strip_suffix(PEM_END)?;
    let joined: String = inner.split_whitespace().collect();
    STANDARD.decode(joined).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    fn home() -> (tempfile::TempDir, Home) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("home")).unwrap();
        home.init().unwrap();
        (dir, home)
    }

    #[test]
    fn the_key_is_made_once_private_and_its_public_half_matches() {
        let (_dir, home) = home();
        let written = VapidKey::ensure(&home).unwrap();
        assert_eq!(written, [home.vapid_key_path(), home.vapid_public_path()]);
        for path in &written {
            let mode = std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{}", path.display());
        }
        let key = VapidKey::load(&home).unwrap();
        assert_eq!(public_key(&home).unwrap(), key.public_key());
        assert_eq!(URL_SAFE_NO_PAD.decode(key.public_key()).unwrap().len(), 65);
        // A second run keeps the key.
        assert!(VapidKey::ensure(&home).unwrap().is_empty());
        assert_eq!(
            VapidKey::load(&home).unwrap().public_key(),
            key.public_key()
        );
        assert_eq!(
            format!("{key:?}"),
            format!("VapidKey(ES256, k={})", key.public_key())
        );
    }

    #[test]
    fn refuses_a_public_file_that_is_not_the_keys_half() {
        let (_dir, home) = home();
        VapidKey::ensure(&home).unwrap();
        std::fs::remove_file(home.vapid_public_path()).unwrap();
        let other = URL_SAFE_NO_PAD.encode([4u8; 65]);
        write_private_new(&home.vapid_public_path(), other.as_bytes()).unwrap();
        assert_eq!(
            VapidKey::ensure(&home).unwrap_err(),
            VapidError::Invalid(
                home.vapid_public_path().display().to_string(),
                "it is not the public half of vapid.key"
            )
        );
    }

    #[test]
    fn a_home_whose_private_key_was_moved_keeps_its_public_half_and_makes_none() {
        let (_dir, home) = home();
        VapidKey::ensure(&home).unwrap();
        let public = public_key(&home).unwrap();
        std::fs::remove_file(home.vapid_key_path()).unwrap();
        assert!(VapidKey::ensure(&home).unwrap().is_empty());
        assert!(!home.vapid_key_path().exists());
        assert_eq!(public_key(&home).unwrap(), public);
        assert_eq!(
            VapidKey::load(&home).unwrap_err().to_string(),
            format!(
                "this home keeps only the VAPID public key ({}): its private key is in the notify process's own home (deploy/setup-system.sh moved it there), so run `countersign notify serve` with that home",
                home.vapid_public_path().display()
            )
        );
    }

    #[test]
    fn a_home_without_a_key_says_how_to_make_one() {
        let (_dir, home) = home();
        assert_eq!(
            public_key(&home).unwrap_err().to_string(),
            format!(
                "this home has no VAPID key ({}): run `countersign init` or start `countersign notify serve` with [notify.push]",
                home.vapid_public_path().display()
            )
        );
    }

    #[test]
    fn the_jwt_names_the_endpoints_origin_and_verifies_with_the_public_key() {
        let (_dir, home) = home();
        VapidKey::ensure(&home).unwrap();
        let key = VapidKey::load(&home).unwrap();
        let endpoint = WebhookUrl::parse("https://Push.Example:443/wpush/v2/abc?x=1").unwrap();
        let header = key
            .authorization(&endpoint, "mailto:ops@example.com", 1_700_000_000)
            .unwrap();
        let (t, k) = header
            .strip_prefix("vapid t=")
            .unwrap()
            .split_once(", k=")
            .unwrap();
        assert_eq!(k, key.public_key());
        let parts: Vec<&str> = t.split('.').collect();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://push.example", "exp": 1_700_043_200i64, "sub": "mailto:ops@example.com"})
        );
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            URL_SAFE_NO_PAD.decode(k).unwrap(),
        );
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
        let local = WebhookUrl::parse("http://127.0.0.1:8099/push/1").unwrap();
        assert_eq!(origin(&local), "http://127.0.0.1:8099");
        let v6 = WebhookUrl::parse("http://[::1]:80/p").unwrap();
        assert_eq!(origin(&v6), "http://[::1]");
    }
}
