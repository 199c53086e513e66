//! Builtin effects over the state store (shared by both backends): apply a schedule
//! transition in one write transaction, idempotent on the intent's nonce,
//! and read the store back.
//!
//! A refused transition rolls back and changes nothing.

use serde_json::Value;
use sqlx::Row as _;

use super::consume::complete_in;
use super::locks::lock_head;
use super::{Conn, Store, events, intents};
use crate::error::EffectFailure;
use crate::error::LedgerError;
use crate::schedule::{self, Change, Plan};
use crate::timefmt;
use crate::types::{Disposition, EffectOutcome, Intent};

async fn recorded_result(conn: &mut Conn, nonce: &str) -> Result<Option<Value>, LedgerError> {
    let row = sqlx::query("SELECT result FROM effect_applied WHERE nonce = $1")
        .bind(nonce)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        None => Ok(None),
        Some(row) => {
            let text: String = row.try_get("result")?;
            serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| LedgerError::Corrupt(format!("effect result: {e}")))
        }
    }
}

/// Apply the builtin effect recorded with `intent` on `conn`, inside the
/// caller's write transaction; the caller commits (or, on any error, rolls
/// back). `intent` must be exactly the recorded one; the effect, the
/// principal and the arguments are the recorded row's.
async fn apply_in(conn: &mut Conn, intent: &Intent) -> Result<Value, EffectFailure> {
    // The state store has no row to lock before a key exists; the
    // principal's chain head serializes its transitions instead (the state
    // store is keyed by principal). `recorded` below refuses an intent
    // whose principal is not the recorded one.
    lock_head(conn, &intent.principal).await?;
    let recorded = intents::recorded(conn, intent)
        .await
        .map_err(intents::as_effect_failure)?;
    if let Some(result) = recorded_result(conn, &recorded.nonce).await? {
        return Ok(result);
    }
    if intents::completed(conn, &recorded.nonce).await? {
        return Err(EffectFailure::AlreadyCompleted);
    }
    write_effect(conn, &recorded).await
}

/// Plan builtin `effect` with `args` over the key's current value as
/// stored (`state`, canonical JSON): the change to write and the result, or
/// why the transition is refused. A stored value that is not JSON is a
/// database fault, not a refusal.
pub(super) fn plan_transition(
    effect: &str,
    args: &Value,
    state: Option<&str>,
) -> Result<Plan, EffectFailure> {
    let current = state
        .map(serde_json::from_str::<Value>)
        .transpose()
        .map_err(|e| EffectFailure::Database(format!("stored state is not JSON: {e}")))?;
    schedule::plan(effect, args, current.as_ref())
}

/// The transition itself, on `conn` inside the caller's write transaction,
/// with the chain head already locked (it serializes every transition: the
/// state store has no row to lock before a key exists) and
/// `intent` the row as recorded (its operation names the effect): read the
/// key's state, plan, write, record `effect_applied` and its event. A
/// refused transition returns before any write.
async fn write_effect(conn: &mut Conn, intent: &Intent) -> Result<Value, EffectFailure> {
    let effect = intent.operation.as_str();
    let args: Value = serde_json::from_str(&intent.arguments_json)
        .map_err(|e| EffectFailure::InvalidArguments(e.to_string()))?;
    let key = schedule::key_of(effect, &args)?;
    let current: Option<String> = sqlx::query_scalar(
        "SELECT value FROM state WHERE principal = $1 AND namespace = $2 AND key = $3",
    )
    .bind(&intent.principal)
    .bind(schedule::NAMESPACE)
    .bind(&key)
    .fetch_optional(&mut *conn)
    .await?;
    let plan = plan_transition(effect, &args, current.as_deref())?;
    let at = timefmt::format(timefmt::now())?;
    let result_text = countersign_verifier::canonical::to_canonical(&plan.result)
        .map_err(|e| EffectFailure::Database(e.to_string()))?;
    sqlx::query(
        "INSERT INTO effect_applied (nonce, effect, result, applied_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&intent.nonce)
    .bind(effect)
    .bind(result_text)
    .bind(&at)
    .execute(&mut *conn)
    .await?;
    let details = events::applied_details(&intent.nonce, effect);
    // The event first: its row id is the new value's version.
    let version = events::append_numbered(
        conn,
        &intent.principal,
        &at,
        "effect_applied",
        Some(&intent.proposal_id),
        &intent.principal,
        &details,
    )
    .await?;
    match &plan.change {
        Change::Put { key, value } => {
            let text = countersign_verifier::canonical::to_canonical(value)
                .map_err(|e| EffectFailure::InvalidArguments(e.to_string()))?;
            sqlx::query(
                "INSERT INTO state (principal, namespace, key, value, updated_at, version)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (principal, namespace, key)
                 DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                               version = excluded.version",
            )
            .bind(&intent.principal)
            .bind(schedule::NAMESPACE)
            .bind(key)
            .bind(text)
            .bind(&at)
            .bind(version)
            .execute(&mut *conn)
            .await?;
        }
        Change::Delete { key } => {
            sqlx::query("DELETE FROM state WHERE principal = $1 AND namespace = $2 AND key = $3")
                .bind(&intent.principal)
                .bind(schedule::NAMESPACE)
                .bind(key)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(plan.result)
}

/// Apply builtin `effect` for `intent`, recorded by an earlier transaction
/// (reconcile of a two-phase intent), and record its completion on `conn`,
/// inside the caller's write transaction: applied with its result, or
/// failed (nothing changed in the state store) when the transition is
/// refused. A database error is returned, and the caller rolls back.
async fn apply_and_complete_in(
    conn: &mut Conn,
    intent: &Intent,
) -> Result<(EffectOutcome, Disposition), LedgerError> {
    // Not the recorded intent: refused before anything, never recorded as
    // a failed effect of the proposal it names.
    intents::recorded(conn, intent).await?;
    let outcome = match apply_in(conn, intent).await {
        Ok(result) => EffectOutcome::Applied { result },
        Err(EffectFailure::Database(e)) => return Err(LedgerError::Database(e)),
        Err(refused) => {
            // Refusals (unknown effect, invalid arguments, a refused
            // transition) come before any write: the store is unchanged.
            EffectOutcome::Failed {
                error: refused.to_string(),
                result: Value::Null,
            }
        }
    };
    let disposition = complete_in(
        conn,
        &intent.proposal_id,
        Some(intent),
        outcome.parts(),
        None,
    )
    .await?;
    Ok((outcome, disposition))
}

impl Store {
    /// Apply the builtin effect recorded with `intent`; see
    /// [`crate::Ledger::apply_builtin`].
    pub(crate) async fn apply_builtin(&self, intent: &Intent) -> Result<Value, EffectFailure> {
        let mut tx = self.write_tx().await?;
        let result = apply_in(&mut tx, intent).await?;
        tx.commit().await?;
        Ok(result)
    }

    /// Apply the builtin effect of `intent` and record its completion in ONE
    /// write transaction; see [`crate::Ledger::apply_builtin_and_complete`].
    pub(crate) async fn apply_builtin_and_complete(
        &self,
        intent: &Intent,
    ) -> Result<(EffectOutcome, Disposition), LedgerError> {
        let mut tx = self.write_tx().await?;
        let done = apply_and_complete_in(&mut tx, intent).await?;
        tx.commit().await?;
        Ok(done)
    }

    /// Every `(key, value)` of `principal`'s state namespace, by key.
    pub(crate) async fn state(
        &self,
        principal: &str,
        namespace: &str,
    ) -> Result<Vec<(String, Value)>, LedgerError> {
        let found = sqlx::query(
            "SELECT key, value FROM state WHERE principal = $1 AND namespace = $2 ORDER BY key",
        )
        .bind(principal)
        .bind(namespace)
        .fetch_all(&self.reader)
        .await?;
        found
            .iter()
            .map(|row| {
                let key: String = row.try_get("key")?;
                let text: String = row.try_get("value")?;
                let value = serde_json::from_str(&text)
                    .map_err(|e| LedgerError::Corrupt(format!("state {key:?}: {e}")))?;
                Ok((key, value))
            })
            .collect()
    }
}
