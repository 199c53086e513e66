//! The administrative path, run as the signer's OS user
//! (`countersign-signer passkeys ...`): the enrolment code an approver
//! needs for each passkey it enrols, the list, and removal without an
//! assertion (recovery when an approver's last passkey is lost). Each
//! change is recorded in the audit chain with the actor `signer-admin`.

use std::io::Write;

use countersign_identity::ApproverName;
use countersign_ledger::{Ledger, PasskeyRemoval, SIGNER_ADMIN};
use time::OffsetDateTime;

use super::code::EnrolmentCodes;
use crate::convert::format_time;
use crate::error::StartError;

/// Makes a new enrolment code for `approver` (`None`: the approver
/// certificate without a name), stores its SHA-256 in `ledger` (replacing
/// that approver's last), and writes the code, with its expiry and whose
/// it is, to `out`.
pub async fn print_enrolment_code(
    ledger: &Ledger,
    approver: Option<&ApproverName>,
    out: &mut dyn Write,
) -> Result<(), StartError> {
    let codes = EnrolmentCodes::in_ledger(ledger.clone());
    let (code, expires_at) = codes
        .issue(approver, OffsetDateTime::now_utc())
        .await
        .map_err(|e| StartError::Passkeys(e.to_string()))?;
    let expires = format_time(expires_at).map_err(|e| StartError::Passkeys(e.to_string()))?;
    let whose = match approver {
        Some(name) => format!("the approver {name}"),
        None => "the unnamed approver certificate".to_owned(),
    };
    writeln!(
        out,
        "{code}\nexpires {expires}; accepted once, for one passkey of {whose} only"
    )
    .map_err(|e| StartError::Passkeys(format!("writing the code: {e}")))
}

/// Writes every passkey of the principal, one per line: credential id,
/// status, the approver it belongs to, what authorized its enrolment
/// (`enrolment-code` or, before codes were per approver, a credential id),
/// name.
pub async fn list(ledger: &Ledger, principal: &str, out: &mut dyn Write) -> Result<(), StartError> {
    for p in ledger.passkeys(principal).await? {
        let status = if p.removed_at.is_some() {
            "removed"
        } else {
            "active"
        };
        writeln!(
            out,
            "{} {status} {} {} {}",
            p.credential_id, p.enrolled_by, p.authorized_by, p.name
        )
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
