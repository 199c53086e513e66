//! The writes of a consumption as PostgreSQL runs them: one statement whose
//! data-modifying `WITH` items and final `INSERT` all run in one round
//! trip. Foreign keys are checked at the end of the statement, so the order
//! of the items does not matter; the events are one multi-row `INSERT`,
//! whose rows the chain trigger checks and appends in order. Parameters are
//! numbered as `sql/consume.rs` binds them; the SQLite text of the same
//! writes is `sqlite/consume_sql.rs`. The consumed nonce carries the
//! proof's consume key (`$11`), which the `consumed_nonces_need_proof`
//! trigger checks against the issuance and never stores.

/// The nonce and the intent (`$1` to `$11`), as `WITH` items.
macro_rules! intent_items {
    () => {
        "WITH n AS (
             INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at, consume_key)
             VALUES ($1, $2, $8, $11)),
         t AS (
             INSERT INTO intents (nonce, proposal_id, principal, session, operation,
                 arguments_json, proof_sha256, recorded_at, contract_revision, lease_until)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)) "
    };
}

/// The first row of the events insert: the `intent` event (`$12` to `$15`).
macro_rules! intent_event {
    () => {
        "INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($12, $8, 'intent', $2, $3, $13, $14, $15)"
    };
}

/// The nonce, the intent and its `intent` event (`$1` to `$15`).
pub(super) const RECORD_INTENT: &str = concat!(intent_items!(), intent_event!());

/// [`RECORD_INTENT`], then the builtin effect applied and completed: the
/// principal's schedule written (`$18`) or deleted (`$18` NULL),
/// `effect_applied`, the completion, and their two events (`$16` to `$28`).
pub(super) const CONSUME_APPLIED: &str = concat!(
    intent_items!(),
    ", d AS (
         DELETE FROM state
         WHERE principal = $3 AND namespace = $16 AND key = $17 AND $18::text IS NULL),
     s AS (
         INSERT INTO state (principal, namespace, key, value, updated_at)
         SELECT $3, $16, $17, $18::text, $8 WHERE $18::text IS NOT NULL
         ON CONFLICT (principal, namespace, key)
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at),
     a AS (
         INSERT INTO effect_applied (nonce, effect, result, applied_at)
         VALUES ($1, $19, $20, $8)),
     c AS (
         INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
             completed_at)
         VALUES ($1, $2, 'applied', NULL, $20, NULL, $8)) ",
    intent_event!(),
    ",
     ($21, $8, 'effect_applied', $2, $3, $22, $23, $24),
     ($25, $8, 'completed', $2, $3, $26, $27, $28)"
);
