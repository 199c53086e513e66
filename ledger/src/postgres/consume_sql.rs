//! The writes of a consumption as PostgreSQL runs them: one statement whose
//! data-modifying `WITH` items and final `INSERT` all run in one round
//! trip. Foreign keys are checked at the end of the statement, so the order
//! of the items does not matter; the events are one multi-row `INSERT`,
//! whose rows the chain trigger checks and appends in order. Parameters are
//! numbered as `sql/consume.rs` binds them; the SQLite text of the same
//! writes is `sqlite/consume_sql.rs`.

/// The nonce and the intent (`$1` to `$8`), as `WITH` items.
macro_rules! intent_items {
    () => {
        "WITH n AS (
             INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at) VALUES ($1, $2, $8)),
         t AS (
             INSERT INTO intents (nonce, proposal_id, principal, session, operation,
                 arguments_json, proof_sha256, recorded_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)) "
    };
}

/// The first row of the events insert: the `intent` event (`$9` to `$12`).
macro_rules! intent_event {
    () => {
        "INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($9, $8, 'intent', $2, $3, $10, $11, $12)"
    };
}

/// The nonce, the intent and its `intent` event (`$1` to `$12`).
pub(super) const RECORD_INTENT: &str = concat!(intent_items!(), intent_event!());

/// [`RECORD_INTENT`], then the builtin effect applied and completed: the
/// schedule written (`$15`) or deleted (`$15` NULL), `effect_applied`, the
/// completion, and their two events (`$13` to `$25`).
pub(super) const CONSUME_APPLIED: &str = concat!(
    intent_items!(),
    ", d AS (
         DELETE FROM state WHERE namespace = $13 AND key = $14 AND $15::text IS NULL),
     s AS (
         INSERT INTO state (namespace, key, value, updated_at)
         SELECT $13, $14, $15::text, $8 WHERE $15::text IS NOT NULL
         ON CONFLICT (namespace, key)
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at),
     a AS (
         INSERT INTO effect_applied (nonce, effect, result, applied_at)
         VALUES ($1, $16, $17, $8)),
     c AS (
         INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
             completed_at)
         VALUES ($1, $2, 'applied', NULL, $17, NULL, $8)) ",
    intent_event!(),
    ",
     ($18, $8, 'effect_applied', $2, $3, $19, $20, $21),
     ($22, $8, 'completed', $2, $3, $23, $24, $25)"
);
