//! The two structures a browser hands over: clientDataJSON and the
//! authenticator data (WebAuthn Level 3, §5.8.1 and §6.1).
//!
//! Owns: parsing both strictly and checking the parts that do not depend on
//! the credential (type, challenge, origin, RP ID hash, UP and UV flags).
//! Must not index past a slice's end or accept trailing bytes.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value as Json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::cbor;
use super::cose::CosePublicKey;
use super::{RelyingParty, WebAuthnError};

/// Largest clientDataJSON accepted (browsers send a few hundred bytes).
const MAX_CLIENT_DATA_BYTES: usize = 8 * 1024;
/// Shortest challenge WebAuthn allows.
const MIN_CHALLENGE_BYTES: usize = 16;
/// Longest credential id WebAuthn allows.
const MAX_CREDENTIAL_ID_BYTES: usize = 1023;
/// At most this many characters of browser-supplied text go into an error.
const MAX_ECHOED_CHARS: usize = 120;

const FLAG_UP: u8 = 0x01;
const FLAG_UV: u8 = 0x04;
const FLAG_AT: u8 = 0x40;
const FLAG_ED: u8 = 0x80;

/// Which ceremony the data belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ceremony {
    /// `navigator.credentials.create`: enrolment.
    Create,
    /// `navigator.credentials.get`: an assertion.
    Get,
}

impl Ceremony {
    fn client_data_type(self) -> &'static str {
        match self {
            Ceremony::Create => "webauthn.create",
            Ceremony::Get => "webauthn.get",
        }
    }
}

/// Browser-supplied text, shortened for an error message.
pub(crate) fn echo(text: &str) -> String {
    text.chars().take(MAX_ECHOED_CHARS).collect()
}

/// Checks clientDataJSON: the ceremony's type, the expected challenge
/// (compared in constant time), an allowed origin and no cross-origin frame.
/// Parsed with the verifier's strict JSON parser (duplicate keys refused).
pub(crate) fn check_client_data(
    json: &[u8],
    ceremony: Ceremony,
    rp: &RelyingParty,
    expected_challenge: &[u8],
) -> Result<(), WebAuthnError> {
    let value = countersign_verifier::canonical::parse(json, MAX_CLIENT_DATA_BYTES)
        .map_err(|_| WebAuthnError::Malformed("client data is not strict JSON"))?;
    let object = value
        .as_object()
        .ok_or(WebAuthnError::Malformed("client data is not a JSON object"))?;
    let text = |key: &'static str| match object.get(key) {
        Some(Json::String(s)) => Ok(s.as_str()),
        _ => Err(WebAuthnError::Malformed(
            "client data lacks type, challenge or origin",
        )),
    };
    let expected = ceremony.client_data_type();
    if text("type")? != expected {
        return Err(WebAuthnError::WrongType { expected });
    }
    let challenge = URL_SAFE_NO_PAD
        .decode(text("challenge")?)
        .map_err(|_| WebAuthnError::BadChallenge)?;
    // WebAuthn challenges have at least 16 bytes; a shorter expectation
    // is a caller's mistake and must not match an empty challenge.
    if expected_challenge.len() < MIN_CHALLENGE_BYTES
        || !bool::from(challenge.as_slice().ct_eq(expected_challenge))
    {
        return Err(WebAuthnError::BadChallenge);
    }
    let origin = text("origin")?;
    if !rp.origins.iter().any(|allowed| allowed == origin) {
        return Err(WebAuthnError::WrongOrigin(echo(origin)));
    }
    match object.get("crossOrigin") {
        None | Some(Json::Bool(false)) => {}
        Some(Json::Bool(true)) => return Err(WebAuthnError::CrossOrigin),
        Some(_) => {
            return Err(WebAuthnError::Malformed(
                "client data crossOrigin is not a boolean",
            ));
        }
    }
    // Only a cross-origin ceremony names a top origin.
    if object.contains_key("topOrigin") {
        return Err(WebAuthnError::CrossOrigin);
    }
    Ok(())
}

/// The base64url-decoded `challenge` of strictly parsed clientDataJSON.
pub(crate) fn client_data_challenge(json: &[u8]) -> Result<Vec<u8>, WebAuthnError> {
    let value = countersign_verifier::canonical::parse(json, MAX_CLIENT_DATA_BYTES)
        .map_err(|_| WebAuthnError::Malformed("client data is not strict JSON"))?;
    match value.get("challenge") {
        Some(Json::String(text)) => URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| WebAuthnError::BadChallenge),
        _ => Err(WebAuthnError::Malformed(
            "client data lacks type, challenge or origin",
        )),
    }
}

/// The credential an enrolment's authenticator data carries.
#[derive(Debug)]
pub(crate) struct AttestedCredential {
    pub(crate) id: Vec<u8>,
    pub(crate) public_key: CosePublicKey,
}

/// Parsed authenticator data.
#[derive(Debug)]
pub(crate) struct AuthenticatorData {
    pub(crate) sign_count: u32,
    /// Present exactly when the AT flag is set.
    pub(crate) attested: Option<AttestedCredential>,
}

/// Parses authenticator data and checks the RP ID hash and the UP and UV
/// flags (in that order, each its own refusal). Attested credential data
/// is required for [`Ceremony::Create`] and refused for [`Ceremony::Get`];
/// extensions, if flagged, must be one CBOR map; nothing may follow.
pub(crate) fn parse_authenticator_data(
    bytes: &[u8],
    ceremony: Ceremony,
    rp: &RelyingParty,
) -> Result<AuthenticatorData, WebAuthnError> {
    let mut cursor = Cursor(bytes);
    let rp_id_hash = cursor.take(32)?;
    let [flags] = *cursor.take(1)? else {
        return Err(truncated());
    };
    let sign_count = u32::from_be_bytes(cursor.array()?);
    let expected_hash: [u8; 32] = Sha256::digest(rp.rp_id.as_bytes()).into();
    if rp_id_hash != expected_hash.as_slice() {
        return Err(WebAuthnError::WrongRp);
    }
    if flags & FLAG_UP == 0 {
        return Err(WebAuthnError::NoUserPresence);
    }
    if flags & FLAG_UV == 0 {
        return Err(WebAuthnError::NoUserVerification);
    }
    let attested = match (flags & FLAG_AT != 0, ceremony) {
        (true, Ceremony::Create) => Some(attested_credential(&mut cursor)?),
        (false, Ceremony::Create) => return Err(WebAuthnError::NoCredentialData),
        (true, Ceremony::Get) => {
            return Err(WebAuthnError::Malformed(
                "assertion carries attested credential data",
            ));
        }
        (false, Ceremony::Get) => None,
    };
    if flags & FLAG_ED != 0 {
        let (extensions, used) = cbor::read_prefix(cursor.0)?;
        if extensions.as_map().is_none() {
            return Err(WebAuthnError::Malformed(
                "authenticator extensions are not a map",
            ));
        }
        cursor.take(used)?;
    }
    if !cursor.0.is_empty() {
        return Err(WebAuthnError::Malformed(
            "trailing bytes after authenticator data",
        ));
    }
    Ok(AuthenticatorData {
        sign_count,
        attested,
    })
}

fn attested_credential(cursor: &mut Cursor<'_>) -> Result<AttestedCredential, WebAuthnError> {
    let _aaguid = cursor.take(16)?;
    let id_len = usize::from(u16::from_be_bytes(cursor.array()?));
    if id_len == 0 || id_len > MAX_CREDENTIAL_ID_BYTES {
        return Err(WebAuthnError::Malformed(
            "credential id length out of range",
        ));
    }
    let id = cursor.take(id_len)?.to_vec();
    let (_, used) = cbor::read_prefix(cursor.0)?;
    let public_key = CosePublicKey::from_cose(cursor.take(used)?)?;
    Ok(AttestedCredential { id, public_key })
}

fn truncated() -> WebAuthnError {
    WebAuthnError::Malformed("authenticator data is truncated")
}

/// Bounds-checked reading from the front of a slice.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WebAuthnError> {
        if n > self.0.len() {
            return Err(truncated());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WebAuthnError> {
        <[u8; N]>::try_from(self.take(N)?).map_err(|_| truncated())
    }
}
