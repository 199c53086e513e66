-- countersign ledger, PostgreSQL schema version 1. The same tables and
-- columns as migrations/sqlite/0001_ledger.sql, so the shared queries in
-- src/sql/ run unchanged on both.
--
-- Timestamps are TEXT in the fixed form YYYY-MM-DDTHH:MM:SSZ (so they sort).
-- JSON columns hold canonical JSON text (RFC 8785), stored verbatim.
-- No table ever holds a proof: issuances keep only its SHA-256.
-- Every table except `state` and `chain_head` is append-only, enforced by
-- the triggers at the end of this file (they bind the owner too); which role
-- may INSERT where is deploy/postgres-roles.sql's business.

CREATE TABLE proposals (
    id                TEXT PRIMARY KEY NOT NULL,
    principal         TEXT NOT NULL,
    session           TEXT NOT NULL,
    operation         TEXT NOT NULL,
    arguments_json    TEXT NOT NULL,
    arguments_sha256  TEXT NOT NULL,
    contract_revision TEXT NOT NULL,
    policy_revision   TEXT NOT NULL,
    note              TEXT NOT NULL,
    preview           TEXT NOT NULL,
    created_at        TEXT NOT NULL
);
CREATE INDEX proposals_by_principal ON proposals (principal, created_at);

CREATE TABLE decisions (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES proposals (id),
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'deny', 'withdraw')),
    principal   TEXT NOT NULL,
    reason      TEXT,
    decided_at  TEXT NOT NULL
);

CREATE TABLE issuances (
    proposal_id       TEXT PRIMARY KEY NOT NULL REFERENCES decisions (proposal_id),
    proof_sha256      TEXT NOT NULL UNIQUE,
    nonce             TEXT NOT NULL UNIQUE,
    principal         TEXT NOT NULL,
    session           TEXT NOT NULL,
    operation         TEXT NOT NULL,
    arguments_sha256  TEXT NOT NULL,
    contract_revision TEXT NOT NULL,
    policy_revision   TEXT NOT NULL,
    provenance        TEXT NOT NULL,
    audience          TEXT NOT NULL,
    issued_at         TEXT NOT NULL,
    expires_at        TEXT NOT NULL
);

CREATE FUNCTION countersign_issuance_needs_approval() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT decision FROM decisions WHERE proposal_id = NEW.proposal_id)
       IS DISTINCT FROM 'approve' THEN
        RAISE EXCEPTION 'an issuance needs an approve decision';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER issuances_need_approval BEFORE INSERT ON issuances
FOR EACH ROW EXECUTE FUNCTION countersign_issuance_needs_approval();

CREATE TABLE revocations (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES issuances (proposal_id),
    principal   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    revoked_at  TEXT NOT NULL
);

-- The authoritative record that a nonce was used. Never a cache.
CREATE TABLE consumed_nonces (
    nonce       TEXT PRIMARY KEY NOT NULL REFERENCES issuances (nonce),
    proposal_id TEXT NOT NULL UNIQUE REFERENCES issuances (proposal_id),
    consumed_at TEXT NOT NULL
);

CREATE TABLE intents (
    nonce          TEXT PRIMARY KEY NOT NULL REFERENCES consumed_nonces (nonce),
    proposal_id    TEXT NOT NULL UNIQUE,
    principal      TEXT NOT NULL,
    session        TEXT NOT NULL,
    operation      TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    proof_sha256   TEXT NOT NULL,
    recorded_at    TEXT NOT NULL
);

CREATE TABLE completions (
    nonce        TEXT PRIMARY KEY NOT NULL REFERENCES intents (nonce),
    proposal_id  TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL CHECK (status IN ('applied', 'failed')),
    error        TEXT,
    result       TEXT NOT NULL,
    resolved_by  TEXT,
    completed_at TEXT NOT NULL
);

CREATE TABLE effect_applied (
    nonce      TEXT PRIMARY KEY NOT NULL REFERENCES intents (nonce),
    effect     TEXT NOT NULL,
    result     TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- The state store of the builtin effects; the only mutable data table.
CREATE TABLE state (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
);

-- The hash-chained event log. `id` is assigned by the writer as head count + 1.
CREATE TABLE events (
    id          BIGINT PRIMARY KEY NOT NULL,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    proposal_id TEXT,
    actor       TEXT NOT NULL,
    details     TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);
CREATE INDEX events_by_proposal ON events (proposal_id);

CREATE TABLE chain_head (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    count     BIGINT NOT NULL,
    hash      TEXT NOT NULL
);
INSERT INTO chain_head (singleton, count, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- An event must extend the current head exactly; the head then advances in
-- the same transaction. SECURITY DEFINER: the owner moves the head, so no
-- role needs (or gets) UPDATE on chain_head.
CREATE FUNCTION countersign_events_extend_head() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    head chain_head%ROWTYPE;
BEGIN
    SELECT * INTO head FROM chain_head WHERE singleton = 1 FOR UPDATE;
    IF NEW.id IS DISTINCT FROM head.count + 1 OR NEW.prev_hash IS DISTINCT FROM head.hash THEN
        RAISE EXCEPTION 'an event must extend the chain head';
    END IF;
    UPDATE chain_head SET count = NEW.id, hash = NEW.hash WHERE singleton = 1;
    RETURN NEW;
END $$;
CREATE TRIGGER events_extend_head BEFORE INSERT ON events
FOR EACH ROW EXECUTE FUNCTION countersign_events_extend_head();

CREATE FUNCTION countersign_chain_head_fixed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'chain_head has exactly one row';
END $$;
CREATE TRIGGER chain_head_no_insert BEFORE INSERT OR DELETE ON chain_head
FOR EACH ROW EXECUTE FUNCTION countersign_chain_head_fixed();
CREATE TRIGGER chain_head_no_truncate BEFORE TRUNCATE ON chain_head
FOR EACH STATEMENT EXECUTE FUNCTION countersign_chain_head_fixed();

-- Append-only tables: no UPDATE, DELETE or TRUNCATE, by anyone. The message
-- names the table as the SQLite triggers do (TG_ARGV[0]).
CREATE FUNCTION countersign_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% are append-only', TG_ARGV[0];
END $$;

DO $$
DECLARE
    guarded TEXT[][] := ARRAY[
        ['events', 'events'],
        ['proposals', 'proposals'],
        ['decisions', 'decisions'],
        ['issuances', 'issuances'],
        ['revocations', 'revocations'],
        ['consumed_nonces', 'consumed nonces'],
        ['intents', 'intents'],
        ['completions', 'completions'],
        ['effect_applied', 'applied effects']
    ];
    i INTEGER;
BEGIN
    FOR i IN 1 .. array_length(guarded, 1) LOOP
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I
             FOR EACH ROW EXECUTE FUNCTION countersign_append_only(%L)',
            guarded[i][1] || '_append_only', guarded[i][1], guarded[i][2]);
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE TRUNCATE ON %I
             FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only(%L)',
            guarded[i][1] || '_no_truncate', guarded[i][1], guarded[i][2]);
    END LOOP;
END $$;
