//! The writes of a consumption as SQLite runs them: several statements in
//! one query string, executed in one round trip to the connection's worker
//! (each statement binds the `$N` it names). Parameters are numbered as
//! `sql/consume.rs` binds them; the PostgreSQL text of the same writes is
//! `postgres/consume_sql.rs`. The consume key (`$12`) is not used here:
//! SQLite has no roles to separate, so nothing checks it.

/// The nonce, the intent and its `intent` event (`$1` to `$16`).
macro_rules! record_intent {
    () => {
        "INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at) VALUES ($1, $2, $8);
         INSERT INTO intents (nonce, proposal_id, principal, session, operation,
             arguments_json, proof_sha256, recorded_at, contract_revision, lease_until, owner)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11);
         INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($3, $13, $8, 'intent', $2, $3, $14, $15, $16);"
    };
}

/// See [`record_intent!`].
pub(super) const RECORD_INTENT: &str = record_intent!();

/// [`RECORD_INTENT`], then the builtin effect applied and completed: the
/// principal's schedule written (`$19`) or deleted (`$19` NULL),
/// `effect_applied`, the completion, and their two events (`$17` to `$29`).
/// The events come first, so the state row can take the `effect_applied`
/// row's id as its version.
pub(super) const CONSUME_APPLIED: &str = concat!(
    record_intent!(),
    "INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
     VALUES ($3, $22, $8, 'effect_applied', $2, $3, $23, $24, $25),
            ($3, $26, $8, 'completed', $2, $3, $27, $28, $29);
     DELETE FROM state WHERE principal = $3 AND namespace = $17 AND key = $18 AND $19 IS NULL;
     INSERT INTO state (principal, namespace, key, value, updated_at, version)
     SELECT $3, $17, $18, $19, $8, (SELECT id FROM events WHERE chain = $3 AND seq = $22)
     WHERE $19 IS NOT NULL
     ON CONFLICT (principal, namespace, key)
     DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                   version = excluded.version;
     INSERT INTO effect_applied (nonce, effect, result, applied_at) VALUES ($1, $20, $21, $8);
     INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
         completed_at)
     VALUES ($1, $2, 'applied', NULL, $21, NULL, $8);"
);

/// Every fresh job of a batch's short way in one query (see
/// `sql/batch_writes.rs`): the jobs `$1` (JSON array), their events `$2`
/// (JSON array, inserted in `ord` order, so each extends its chain in the
/// order it was planned) and the state namespace `$3`; `value ->> 'f'` is
/// field `f` of an element of `json_each`. Each job's rows are those
/// [`RECORD_INTENT`] writes, and for a builtin those [`CONSUME_APPLIED`]
/// writes (`outcome` `applied`) or its failed completion (`outcome`
/// `failed`). A batch's jobs name distinct nonces, proposals and state
/// keys, so no two rows of one statement meet.
pub(super) const BATCH_WRITES: &str = "
    INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'at' FROM json_each($1);
    INSERT INTO intents (nonce, proposal_id, principal, session, operation,
        arguments_json, proof_sha256, recorded_at, contract_revision, lease_until, owner)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'principal', value ->> 'session',
        value ->> 'op', value ->> 'args', value ->> 'sha', value ->> 'at', value ->> 'crev',
        value ->> 'lease', value ->> 'owner'
    FROM json_each($1);
    INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
    SELECT value ->> 'chain', value ->> 'seq', value ->> 'at', value ->> 'kind',
        value ->> 'pid', value ->> 'actor', value ->> 'details', value ->> 'prev',
        value ->> 'hash'
    FROM json_each($2) ORDER BY value ->> 'ord';
    DELETE FROM state WHERE (principal, namespace, key) IN (
        SELECT value ->> 'principal', $3, value ->> 'skey' FROM json_each($1)
        WHERE value ->> 'outcome' = 'applied' AND value ->> 'value' IS NULL);
    INSERT INTO state (principal, namespace, key, value, updated_at, version)
    SELECT value ->> 'principal', $3, value ->> 'skey', value ->> 'value', value ->> 'at',
        (SELECT e.id FROM events e
         WHERE e.chain = value ->> 'principal' AND e.seq = value ->> 'aseq')
    FROM json_each($1)
    WHERE value ->> 'outcome' = 'applied' AND value ->> 'value' IS NOT NULL
    ON CONFLICT (principal, namespace, key)
    DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                  version = excluded.version;
    INSERT INTO effect_applied (nonce, effect, result, applied_at)
    SELECT value ->> 'nonce', value ->> 'effect', value ->> 'result', value ->> 'at'
    FROM json_each($1) WHERE value ->> 'outcome' = 'applied';
    INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
        completed_at)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'outcome', value ->> 'error',
        value ->> 'result', NULL, value ->> 'at'
    FROM json_each($1) WHERE value ->> 'outcome' IS NOT NULL;";
