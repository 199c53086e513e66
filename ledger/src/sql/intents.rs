//! The check that makes an [`Intent`] a capability (shared by both
//! backends): inside the caller's write transaction, the intent a caller
//! presents must be exactly the row recorded under its nonce. Every second
//! phase (completion, applying a builtin) goes through it and then acts on
//! the recorded row, never on the caller's copy.
//!
//! Only reading; this module must not write.

use sqlx::Row as _;

use super::Conn;
use super::rows::{self, intent_columns};
use crate::error::{EffectFailure, LedgerError};
use crate::types::Intent;

/// The intent recorded under `intent`'s nonce, read on `conn` inside the
/// caller's write transaction: `UnknownIntent` if there is none,
/// `NotTheRecordedIntent` if `intent` differs from it in anything a proof
/// binds (a stale or altered copy).
pub(super) async fn recorded(conn: &mut Conn, intent: &Intent) -> Result<Intent, LedgerError> {
    let row = sqlx::query(concat!(
        "SELECT ",
        intent_columns!(),
        " FROM intents t WHERE t.nonce = $1"
    ))
    .bind(&intent.nonce)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Err(LedgerError::UnknownIntent(intent.proposal_id.clone()));
    };
    let found = rows::intent(&row)?;
    if !intent.binds_same_effect_as(&found) {
        return Err(LedgerError::NotTheRecordedIntent(
            intent.proposal_id.clone(),
        ));
    }
    Ok(found)
}

/// Whether the recorded intent under `nonce` has a completion.
pub(super) async fn completed(conn: &mut Conn, nonce: &str) -> Result<bool, LedgerError> {
    Ok(
        sqlx::query("SELECT EXISTS (SELECT 1 FROM completions c WHERE c.nonce = $1) AS completed")
            .bind(nonce)
            .fetch_one(&mut *conn)
            .await?
            .try_get::<bool, _>("completed")?,
    )
}

/// [`recorded`]'s refusals as an effect's failure.
pub(super) fn as_effect_failure(e: LedgerError) -> EffectFailure {
    match e {
        LedgerError::UnknownIntent(_) => EffectFailure::UnknownIntent,
        LedgerError::NotTheRecordedIntent(_) => EffectFailure::NotTheRecordedIntent,
        other => other.into(),
    }
}
