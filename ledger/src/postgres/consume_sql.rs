//! The writes of a consumption as PostgreSQL runs them: one statement whose
//! data-modifying `WITH` items and final `INSERT` all run in one round
//! trip. Foreign keys are checked at the end of the statement, so the order
//! of the items does not matter; the events are one multi-row `INSERT`
//! into the principal's chain (`$3`), whose rows the chain trigger checks
//! and appends in order, their ids drawn in that order. Parameters are
//! numbered as `sql/consume.rs` binds them; the SQLite text of the same
//! writes is `sqlite/consume_sql.rs`. The consumed nonce carries the
//! proof's consume key (`$12`), which the `consumed_nonces_need_proof`
//! trigger checks against the issuance and never stores.

/// The nonce and the intent (`$1` to `$12`), as `WITH` items.
macro_rules! intent_items {
    () => {
        "WITH n AS (
             INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at, consume_key)
             VALUES ($1, $2, $8, $12)),
         t AS (
             INSERT INTO intents (nonce, proposal_id, principal, session, operation,
                 arguments_json, proof_sha256, recorded_at, contract_revision, lease_until, owner)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)) "
    };
}

/// The first row of the events insert: the `intent` event (`$13` to `$16`).
macro_rules! intent_event {
    () => {
        "INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($3, $13, $8, 'intent', $2, $3, $14, $15, $16)"
    };
}

/// The nonce, the intent and its `intent` event (`$1` to `$16`).
pub(super) const RECORD_INTENT: &str = concat!(intent_items!(), intent_event!());

/// [`RECORD_INTENT`], then the builtin effect applied and completed: the
/// principal's schedule written (`$19`) or deleted (`$19` NULL),
/// `effect_applied`, the completion, and their two events (`$17` to `$29`).
/// The events insert is a `WITH` item here, so the state row can take the
/// `effect_applied` row's id as its version.
pub(super) const CONSUME_APPLIED: &str = concat!(
    intent_items!(),
    ", e AS (",
    intent_event!(),
    ",
         ($3, $22, $8, 'effect_applied', $2, $3, $23, $24, $25),
         ($3, $26, $8, 'completed', $2, $3, $27, $28, $29)
         RETURNING id, kind),
     d AS (
         DELETE FROM state
         WHERE principal = $3 AND namespace = $17 AND key = $18 AND $19::text IS NULL),
     s AS (
         INSERT INTO state (principal, namespace, key, value, updated_at, version)
         SELECT $3, $17, $18, $19::text, $8, (SELECT e.id FROM e WHERE e.kind = 'effect_applied')
         WHERE $19::text IS NOT NULL
         ON CONFLICT (principal, namespace, key)
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                       version = excluded.version),
     a AS (
         INSERT INTO effect_applied (nonce, effect, result, applied_at)
         VALUES ($1, $20, $21, $8))
     INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
         completed_at)
     VALUES ($1, $2, 'applied', NULL, $21, NULL, $8)"
);

/// Every fresh job of a batch's short way in one statement (see
/// `sql/batch_writes.rs`): the jobs `$1` (JSON array), their events `$2`
/// (JSON array, inserted in `ord` order, so the chain trigger appends them
/// in the order they were planned) and the state namespace `$3`. Each
/// job's rows are those [`RECORD_INTENT`] writes, and for a builtin those
/// [`CONSUME_APPLIED`] writes (`outcome` `applied`) or its failed
/// completion (`outcome` `failed`). A batch's jobs name distinct nonces,
/// proposals and state keys, so no two rows of one statement meet.
pub(super) const BATCH_WRITES: &str = "
    WITH j AS (
         SELECT * FROM json_to_recordset(CAST($1 AS json)) AS j(
             nonce text, pid text, principal text, session text, op text, args text,
             sha text, at text, crev text, lease text, owner text, ckey text,
             outcome text, error text, result text, skey text, value text, effect text,
             aseq bigint)),
     n AS (
         INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at, consume_key)
         SELECT nonce, pid, at, ckey FROM j),
     t AS (
         INSERT INTO intents (nonce, proposal_id, principal, session, operation,
             arguments_json, proof_sha256, recorded_at, contract_revision, lease_until, owner)
         SELECT nonce, pid, principal, session, op, args, sha, at, crev, lease, owner FROM j),
     e AS (
         INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
         SELECT chain, seq, at, kind, pid, actor, details, prev, hash
         FROM json_to_recordset(CAST($2 AS json)) AS e(
             ord bigint, chain text, seq bigint, at text, kind text, pid text, actor text,
             details text, prev text, hash text)
         ORDER BY ord
         RETURNING id, chain, seq),
     d AS (
         DELETE FROM state s USING j
         WHERE j.outcome = 'applied' AND j.value IS NULL
           AND s.principal = j.principal AND s.namespace = $3 AND s.key = j.skey),
     s AS (
         INSERT INTO state (principal, namespace, key, value, updated_at, version)
         SELECT j.principal, $3, j.skey, j.value, j.at, e.id
         FROM j JOIN e ON e.chain = j.principal AND e.seq = j.aseq
         WHERE j.outcome = 'applied' AND j.value IS NOT NULL
         ON CONFLICT (principal, namespace, key)
         DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                       version = excluded.version),
     a AS (
         INSERT INTO effect_applied (nonce, effect, result, applied_at)
         SELECT nonce, effect, result, at FROM j WHERE outcome = 'applied')
     INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
         completed_at)
     SELECT nonce, pid, outcome, error, result, NULL, at FROM j WHERE outcome IS NOT NULL";
