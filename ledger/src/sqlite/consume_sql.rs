//! The writes of a consumption as SQLite runs them: several statements in
//! one query string, executed in one round trip to the connection's worker
//! (each statement binds the `$N` it names). Parameters are numbered as
//! `sql/consume.rs` binds them; the PostgreSQL text of the same writes is
//! `postgres/consume_sql.rs`.

/// The nonce, the intent and its `intent` event (`$1` to `$12`).
macro_rules! record_intent {
    () => {
        "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at) VALUES ($1, $2, $8);
         INSERT INTO intents (nonce, proposal_id, principal, session, operation,
             arguments_json, proof_sha256, recorded_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8);
         INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($9, $8, 'intent', $2, $3, $10, $11, $12);"
    };
}

/// See [`record_intent!`].
pub(super) const RECORD_INTENT: &str = record_intent!();

/// [`RECORD_INTENT`], then the builtin effect applied and completed: the
/// schedule written (`$15`) or deleted (`$15` NULL), `effect_applied`, the
/// completion, and their two events (`$13` to `$25`).
pub(super) const CONSUME_APPLIED: &str = concat!(
    record_intent!(),
    "DELETE FROM state WHERE namespace = $13 AND key = $14 AND $15 IS NULL;
     INSERT INTO state (namespace, key, value, updated_at)
     SELECT $13, $14, $15, $8 WHERE $15 IS NOT NULL
     ON CONFLICT (namespace, key)
     DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at;
     INSERT INTO effect_applied (nonce, effect, result, applied_at) VALUES ($1, $16, $17, $8);
     INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
         completed_at)
     VALUES ($1, $2, 'applied', NULL, $17, NULL, $8);
     INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
     VALUES ($18, $8, 'effect_applied', $2, $3, $19, $20, $21),
            ($22, $8, 'completed', $2, $3, $23, $24, $25);"
);
