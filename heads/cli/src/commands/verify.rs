//! Verification anywhere: `keys export` writes the key set a receiver pins,
//! and `verify` checks a proof offline against such a file, with no signer
//! and no ledger.
//!
//! Owns: reading those files and rendering the verdict. The checks
//! themselves are the verifier's (`verify_offline`). Must not: print, log or
//! echo the proof (only its claims leave), or consume it: single use is
//! the receiver's own nonce table.

use std::path::Path;

use countersign_verifier::keyset::MAX_KEY_SET_BYTES;
use countersign_verifier::verify::DEFAULT_MAX_LIFETIME;
use countersign_verifier::{
    KeySet, KeyStatus, OfflineExpectations, Proof, PublishedKey, Refusal, verify_offline,
};
use serde_json::{Value, json};

use super::{input_name, read_input};
use crate::Io;
use crate::args::{KeysExportArgs, VerifyArgs};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_new, write_text};

/// The largest proof file read; the verifier enforces its own bound.
const MAX_PROOF_FILE: u64 = 256 * 1024;

/// `countersign keys export [--out FILE]`: the signer's published keys as
/// the key set JSON (every key the signer publishes today is active).
pub(crate) async fn keys_export(
    ctx: &Context,
    args: KeysExportArgs,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let keys = published_key_set(ctx).await?;
    let mut text = keys.to_json().map_err(CliError::error)?;
    text.push('\n');
    match &args.out {
        None => write_text(io.out, &text),
        Some(path) => {
            write_new(path, text.as_bytes())?;
            let n = keys.keys().len();
            write_text(
                io.err,
                &format!("wrote {n} verifying key(s) to {}\n", path.display()),
            )
        }
    }
}

/// The key set the signer publishes now, each key checked to be the
/// Ed25519 key its id names.
pub(crate) async fn published_key_set(ctx: &Context) -> Result<KeySet, CliError> {
    let mut head = ctx.head().await?;
    let published = head
        .public_keys(countersign_proto::v1::PublicKeysRequest {})
        .await?
        .into_inner()
        .keys;
    let mut keys = Vec::with_capacity(published.len());
    for k in &published {
        // A signer from before rotation sends no status: its one key is active.
        let status = match countersign_proto::v1::KeyStatus::try_from(k.status) {
            Ok(countersign_proto::v1::KeyStatus::Verifying) => KeyStatus::Verifying,
            _ => KeyStatus::Active,
        };
        let key = PublishedKey::from_bytes(&k.public_key, status).ok_or_else(|| {
            CliError::Error("the signer published a key that is not an Ed25519 key".to_string())
        })?;
        if key.id() != k.key_id {
            return Err(CliError::Error(format!(
                "the signer published key {} under another id",
                key.id()
            )));
        }
        keys.push(key);
    }
    Ok(KeySet::new(keys))
}

/// Reads `--keys FILE`: a key set that cannot be read or parsed is an error
/// (exit code 1), not a refusal of the proof.
fn read_key_set(path: &Path, io: &mut Io<'_>) -> Result<KeySet, CliError> {
    // The cast is exact: the bound is 64 KiB.
    let bytes = read_input(path, MAX_KEY_SET_BYTES as u64, io)
        .map_err(|e| CliError::Error(e.to_string()))?;
    KeySet::parse(&bytes).map_err(|e| CliError::Error(format!("{}: {e}", input_name(path))))
}

/// `countersign verify --proof-file FILE|- --keys FILE [--operation OP]
/// [--audience AUD]`: offline; the claims as JSON, or one refusal.
pub(crate) fn verify(args: VerifyArgs, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let keys = read_key_set(&args.keys, io)?;
    let bytes = zeroize::Zeroizing::new(read_input(&args.proof_file, MAX_PROOF_FILE, io)?);
    let proof = std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| Proof::from_text(text.to_string()).ok());
    let verdict = match proof {
        None => Err(Refusal::Malformed),
        Some(proof) => {
            let expect = OfflineExpectations {
                audience: args.audience.as_deref(),
                operation: args.operation.as_deref(),
                arguments_sha256: None,
                now: time::OffsetDateTime::now_utc(),
                max_lifetime: DEFAULT_MAX_LIFETIME,
            };
            verify_offline(&proof, &keys.active_ring(), &expect)
        }
    };
    let verified = match verdict {
        Ok(verified) => verified,
        Err(refusal) => {
            if json {
                let doc =
                    countersign_surface::results::refusal(refusal.code(), &refusal.to_string());
                write_json(io.out, &doc)?;
            }
            return Err(CliError::Refused(format!("{refusal} ({})", refusal.code())));
        }
    };
    let claims_text = verified
        .claims()
        .to_canonical_json()
        .map_err(CliError::error)?;
    let claims: Value = serde_json::from_str(&claims_text).map_err(CliError::error)?;
    if json {
        write_json(
            io.out,
            &json!({"ok": true, "key_id": verified.key_id(), "claims": claims}),
        )
    } else {
        write_text(io.out, &format!("{claims_text}\n"))
    }
}
