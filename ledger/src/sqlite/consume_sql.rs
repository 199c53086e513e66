//! The writes of consumptions as SQLite runs them: several statements in
//! one query string, executed in one round trip to the connection's worker
//! (each statement binds the `$N` it names). The PostgreSQL text of the
//! same writes is `postgres/consume_sql.rs`. The jobs' consume keys
//! (`ckey`) are not used here: SQLite has no roles to separate, so nothing
//! checks them.

/// Every fresh job of a consumption's batch in one query, a job alone
/// being a batch of one (see `sql/batch_writes.rs`): the jobs `$1` (JSON
/// array), their events `$2` (JSON array, inserted in `ord` order, so each
/// extends its chain in the order it was planned) and the state namespace
/// `$3`. `value ->> 'f'` is field `f` of an element of `jsonb_each`, which
/// parses the array once per statement into SQLite's binary JSON, so
/// reading a field does not parse its element's text again (with
/// `json_each` every `->>` did, and 32 callers consumed about a quarter
/// fewer proofs per second: BENCHMARKS.md). Each job's rows: the consumed
/// nonce, the intent and its `intent` event; for a builtin applied
/// (`outcome` `applied`) its state written or deleted, `effect_applied`,
/// the completion and their events; for one refused (`outcome` `failed`)
/// its failed completion and its event; for a consumption whose effect is
/// its record (`outcome` `applied`, no `effect`) its completion and event
/// only. A batch's jobs name distinct
/// nonces, proposals and state keys, so no two rows of one statement meet.
pub(super) const BATCH_WRITES: &str = "
    INSERT INTO consumed_nonces (nonce, proposal_id, consumed_at)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'at' FROM jsonb_each($1);
    INSERT INTO intents (nonce, proposal_id, principal, session, operation,
        arguments_json, proof_sha256, recorded_at, contract_revision, lease_until, owner)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'principal', value ->> 'session',
        value ->> 'op', value ->> 'args', value ->> 'sha', value ->> 'at', value ->> 'crev',
        value ->> 'lease', value ->> 'owner'
    FROM jsonb_each($1);
    INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
    SELECT value ->> 'chain', value ->> 'seq', value ->> 'at', value ->> 'kind',
        value ->> 'pid', value ->> 'actor', value ->> 'details', value ->> 'prev',
        value ->> 'hash'
    FROM jsonb_each($2) ORDER BY value ->> 'ord';
    DELETE FROM state WHERE (principal, namespace, key) IN (
        SELECT value ->> 'principal', $3, value ->> 'skey' FROM jsonb_each($1)
        WHERE value ->> 'outcome' = 'applied' AND value ->> 'value' IS NULL);
    INSERT INTO state (principal, namespace, key, value, updated_at, version)
    SELECT value ->> 'principal', $3, value ->> 'skey', value ->> 'value', value ->> 'at',
        (SELECT e.id FROM events e
         WHERE e.chain = value ->> 'principal' AND e.seq = value ->> 'aseq')
    FROM jsonb_each($1)
    WHERE value ->> 'outcome' = 'applied' AND value ->> 'value' IS NOT NULL
    ON CONFLICT (principal, namespace, key)
    DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
                  version = excluded.version;
    INSERT INTO effect_applied (nonce, effect, result, applied_at)
    SELECT value ->> 'nonce', value ->> 'effect', value ->> 'result', value ->> 'at'
    FROM jsonb_each($1) WHERE value ->> 'outcome' = 'applied' AND value ->> 'effect' IS NOT NULL;
    INSERT INTO completions (nonce, proposal_id, status, error, result, resolved_by,
        completed_at)
    SELECT value ->> 'nonce', value ->> 'pid', value ->> 'outcome', value ->> 'error',
        value ->> 'result', NULL, value ->> 'at'
    FROM jsonb_each($1) WHERE value ->> 'outcome' IS NOT NULL;";
