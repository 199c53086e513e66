//! The administrative path, run as the signer's OS user
//! (`countersign-signer passkeys ...`): the enrolment code for a first
//! passkey, the list, and removal without an assertion (recovery when the
//! last passkey is lost). Each change is recorded in the audit chain with
//! the actor `signer-admin`.

use std::io::Write;

use countersign_identity::Home;
use countersign_ledger::{Ledger, PasskeyRemoval, SIGNER_ADMIN};
use time::OffsetDateTime;

use super::code::EnrolmentCodes;
use crate::convert::format_time;
use crate::error::StartError;

/// Makes a new enrolment code and writes it, with its expiry, to `out`.
pub fn print_enrolment_code(home: &Home, out: &mut dyn Write) -> Result<(), StartError> {
    let codes = EnrolmentCodes::in_dir(&home.signer_dir());
    let (code, expires_at) = codes
        .issue(OffsetDateTime::now_utc())
        .map_err(|e| StartError::Passkeys(e.to_string()))?;
    let expires = format_time(expires_at).map_err(|e| StartError::Passkeys(e.to_string()))?;
    writeln!(
        out,
        "{code}\nexpires {expires}; accepted once, for the first passkey only"
    )
    .map_err(|e| StartError::Passkeys(format!("writing the code: {e}")))
}

/// Writes every passkey of the ledger, one per line: credential id,
/// principal, status, name.
pub async fn list(ledger: &Ledger, principal: &str, out: &mut dyn Write) -> Result<(), StartError> {
    for p in ledger.passkeys(principal).await? {
        let status = if p.removed_at.is_some() {
            "removed"
        } else {
            "active"
        };
        writeln!(out, "{} {status} {}", p.credential_id, p.name)
            .map_err(|e| StartError::Passkeys(e.to_string()))?;
    }
    Ok(())
}

/// Removes a passkey without an assertion (recorded as by `signer-admin`).
pub async fn remove(ledger: &Ledger, credential_id: &str) -> Result<(), StartError> {
    match ledger
        .remove_passkey(credential_id, SIGNER_ADMIN, SIGNER_ADMIN, None)
        .await?
    {
        PasskeyRemoval::Removed => Ok(()),
        PasskeyRemoval::Unknown => Err(StartError::Passkeys(format!(
            "no passkey {credential_id} is enrolled (see `passkeys list`)"
        ))),
        PasskeyRemoval::AlreadyRemoved => Err(StartError::Passkeys(format!(
            "passkey {credential_id} is already removed"
        ))),
    }
}
