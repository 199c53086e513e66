//! COSE public keys (RFC 9052/9053) as authenticators report them in
//! attested credential data: ES256 on P-256 and EdDSA on Ed25519, nothing
//! else.
//!
//! Owns: decoding a COSE_Key into [`CosePublicKey`], its canonical encoding
//! back, and checking a signature with `ring`. Must not accept a key whose
//! algorithm, key type or curve is anything but the two pairs below, or
//! whose map carries any other label (a key is exactly these labels).

use ring::signature::{ECDSA_P256_SHA256_ASN1, ED25519, UnparsedPublicKey};

use super::WebAuthnError;
use super::cbor::{self, Value};

/// COSE labels and values used here (IANA COSE registries).
const LABEL_KTY: i64 = 1;
const LABEL_ALG: i64 = 3;
const LABEL_CRV: i64 = -1;
const LABEL_X: i64 = -2;
const LABEL_Y: i64 = -3;
const KTY_OKP: i64 = 1;
const KTY_EC2: i64 = 2;
const ALG_ES256: i64 = -7;
const ALG_EDDSA: i64 = -8;
const CRV_P256: i64 = 1;
const CRV_ED25519: i64 = 6;

/// A credential's public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CosePublicKey {
    /// ECDSA with SHA-256 on P-256 (COSE alg -7, kty EC2, crv 1): the
    /// affine coordinates, big-endian. Whether the point is on the curve
    /// is checked by `ring` when a signature is verified.
    Es256 {
        /// x coordinate.
        x: [u8; 32],
        /// y coordinate.
        y: [u8; 32],
    },
    /// EdDSA on Ed25519 (COSE alg -8, kty OKP, crv 6): the public key.
    Ed25519([u8; 32]),
}

impl CosePublicKey {
    /// Decodes a COSE_Key that fills `bytes`. A well-formed key of another
    /// algorithm or curve is [`WebAuthnError::UnsupportedKey`]; bytes that
    /// are not a COSE_Key at all are [`WebAuthnError::Malformed`].
    pub fn from_cose(bytes: &[u8]) -> Result<Self, WebAuthnError> {
        let value = cbor::read_exact(bytes)?;
        let entries = value
            .as_map()
            .ok_or(WebAuthnError::Malformed("COSE key is not a map"))?;
        let mut labels = Labels::default();
        for (label, value) in entries {
            let slot = match label.as_i64() {
                Some(LABEL_KTY) => &mut labels.kty,
                Some(LABEL_ALG) => &mut labels.alg,
                Some(LABEL_CRV) => &mut labels.crv,
                Some(LABEL_X) => &mut labels.x,
                Some(LABEL_Y) => &mut labels.y,
                _ => return Err(WebAuthnError::UnsupportedKey),
            };
            // Duplicate labels were refused by the CBOR reader.
            *slot = Some(value);
        }
        let int = |v: Option<&Value<'_>>| v.and_then(Value::as_i64);
        match (int(labels.kty), int(labels.alg), int(labels.crv)) {
            (Some(KTY_EC2), Some(ALG_ES256), Some(CRV_P256)) => Ok(CosePublicKey::Es256 {
                x: coordinate(labels.x)?,
                y: coordinate(labels.y)?,
            }),
            (Some(KTY_OKP), Some(ALG_EDDSA), Some(CRV_ED25519)) if labels.y.is_none() => {
                Ok(CosePublicKey::Ed25519(coordinate(labels.x)?))
            }
            (None, _, _) | (_, None, _) | (_, _, None) => {
                Err(WebAuthnError::Malformed("COSE key lacks kty, alg or crv"))
            }
            _ => Err(WebAuthnError::UnsupportedKey),
        }
    }

    /// The key's canonical CTAP2 encoding (labels 1, 3, -1, -2[, -3]), as
    /// an authenticator writes it: what a credential store keeps.
    pub fn to_cose(&self) -> Vec<u8> {
        // Every label and value below is a CBOR small integer (one byte);
        // 0x58 0x20 heads a 32-byte byte string.
        let mut out = Vec::with_capacity(77);
        match self {
            CosePublicKey::Es256 { x, y } => {
                out.extend_from_slice(&[0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01]);
                out.extend_from_slice(&[0x21, 0x58, 0x20]);
                out.extend_from_slice(x);
                out.extend_from_slice(&[0x22, 0x58, 0x20]);
                out.extend_from_slice(y);
            }
            CosePublicKey::Ed25519(key) => {
                out.extend_from_slice(&[0xa4, 0x01, 0x01, 0x03, 0x27, 0x20, 0x06]);
                out.extend_from_slice(&[0x21, 0x58, 0x20]);
                out.extend_from_slice(key);
            }
        }
        out
    }

    /// Checks `signature` over `message`: ASN.1 DER ECDSA for ES256, the
    /// 64-byte signature for Ed25519.
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> Result<(), WebAuthnError> {
        let result = match self {
            CosePublicKey::Es256 { x, y } => {
                // SEC 1 uncompressed point: 0x04 || x || y.
                let point = [&[0x04][..], x, y].concat();
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point).verify(message, signature)
            }
            CosePublicKey::Ed25519(key) => {
                UnparsedPublicKey::new(&ED25519, key).verify(message, signature)
            }
        };
        result.map_err(|_| WebAuthnError::BadSignature)
    }
}

#[derive(Default)]
struct Labels<'v, 'a> {
    kty: Option<&'v Value<'a>>,
    alg: Option<&'v Value<'a>>,
    crv: Option<&'v Value<'a>>,
    x: Option<&'v Value<'a>>,
    y: Option<&'v Value<'a>>,
}

fn coordinate(value: Option<&Value<'_>>) -> Result<[u8; 32], WebAuthnError> {
    match value {
        Some(Value::Bytes(bytes)) => <[u8; 32]>::try_from(*bytes)
            .map_err(|_| WebAuthnError::Malformed("COSE key coordinate is not 32 bytes")),
        _ => Err(WebAuthnError::Malformed("COSE key coordinate missing")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn round_trips_both_key_types() {
        for key in [
            CosePublicKey::Es256 {
                x: [1; 32],
                y: [2; 32],
            },
            CosePublicKey::Ed25519([3; 32]),
        ] {
            assert_eq!(CosePublicKey::from_cose(&key.to_cose()), Ok(key));
        }
    }

    #[test]
    fn refuses_other_algorithms_and_curves() {
        let es256 = CosePublicKey::Es256 {
            x: [1; 32],
            y: [2; 32],
        }
        .to_cose();
        let ed25519 = CosePublicKey::Ed25519([3; 32]).to_cose();
        // (key, byte offset, replacement)
        let cases = [
            (&es256, 4, 0x27),   // alg EdDSA on an EC2 key
            (&es256, 6, 0x02),   // crv P-384 with ES256
            (&es256, 2, 0x03),   // kty RSA
            (&ed25519, 6, 0x04), // crv X25519
            (&ed25519, 4, 0x26), // alg ES256 on an OKP key
        ];
        for (key, at, byte) in cases {
            let mut changed = key.clone();
            changed[at] = byte;
            assert_eq!(
                CosePublicKey::from_cose(&changed),
                Err(WebAuthnError::UnsupportedKey),
                "byte {at} = {byte:#x}"
            );
        }
    }

    #[test]
    fn refuses_unknown_labels_and_missing_fields() {
        // ES256 with an extra label 2 (kid).
        let mut with_kid = CosePublicKey::Es256 {
            x: [1; 32],
            y: [2; 32],
        }
        .to_cose();
        with_kid[0] = 0xa6;
        with_kid.extend_from_slice(&[0x02, 0x41, 0x00]);
        assert_eq!(
            CosePublicKey::from_cose(&with_kid),
            Err(WebAuthnError::UnsupportedKey)
        );
        // ES256 without y.
        let mut no_y = CosePublicKey::Es256 {
            x: [1; 32],
            y: [2; 32],
        }
        .to_cose();
        no_y[0] = 0xa4;
        no_y.truncate(7 + 3 + 32);
        assert_eq!(
            CosePublicKey::from_cose(&no_y),
            Err(WebAuthnError::Malformed("COSE key coordinate missing"))
        );
    }
}
