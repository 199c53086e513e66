//! The writes of consumptions as PostgreSQL runs them: one statement whose
//! data-modifying `WITH` items and final `INSERT` all run in one round
//! trip. Foreign keys are checked at the end of the statement, so the order
//! of the items does not matter; the events are one multi-row `INSERT`,
//! whose rows the chain trigger checks and appends in order, their ids
//! drawn in that order. The SQLite text of the same writes is
//! `sqlite/consume_sql.rs`. Each consumed nonce carries the proof's
//! consume key (`ckey`), which the `consumed_nonces_need_proof` trigger
//! checks against the issuance and never stores.

/// Every fresh job of a consumption's batch in one statement, a job alone
/// being a batch of one (see `sql/batch_writes.rs`): the jobs `$1` (JSON
/// array), their events `$2` (JSON array, inserted in `ord` order, so the
/// chain trigger appends them in the order they were planned) and the
/// state namespace `$3`. Each job's rows: the consumed nonce, the intent
/// and its `intent` event; for a builtin applied (`outcome` `applied`) its
/// state written or deleted, `effect_applied`, the completion and their
/// events; for one refused (`outcome` `failed`) its failed completion and
/// its event; for a consumption whose effect is its record (`outcome`
/// `applied`, no `effect`) its completion and event only. A batch's jobs name distinct nonces, proposals and state
/// keys, so no two rows of one statement meet.
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
         SELECT nonce, effect, result, at FROM j
         WHERE outcome = 'applied' AND effect IS NOT NULL)
     INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
         completed_at)
     SELECT nonce, pid, outcome, error, result, NULL, at FROM j WHERE outcome IS NOT NULL";
