-- countersign ledger, SQLite schema version 1.
--
-- Timestamps are TEXT in the fixed form YYYY-MM-DDTHH:MM:SSZ (so they sort).
-- JSON columns hold canonical JSON text (RFC 8785), stored verbatim.
-- No table ever holds a proof: issuances keep only its SHA-256.
-- Every table except `state` and `chain_head` is append-only, enforced by
-- the triggers at the end of this file.

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
) STRICT;
CREATE INDEX proposals_by_principal ON proposals (principal, created_at);

-- One decision per proposal, ever.
CREATE TABLE decisions (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES proposals (id),
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'deny', 'withdraw')),
    principal   TEXT NOT NULL,
    reason      TEXT,
    decided_at  TEXT NOT NULL
) STRICT;

-- The bound fields of an issued proof, never the proof itself.
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
) STRICT;

CREATE TRIGGER issuances_need_approval BEFORE INSERT ON issuances
WHEN (SELECT decision FROM decisions WHERE proposal_id = NEW.proposal_id) IS NOT 'approve'
BEGIN
    SELECT RAISE(ABORT, 'an issuance needs an approve decision');
END;

CREATE TABLE revocations (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES issuances (proposal_id),
    principal   TEXT NOT NULL,
    reason      TEXT NOT NULL,
    revoked_at  TEXT NOT NULL
) STRICT;

-- The authoritative record that a nonce was used. Never a cache.
CREATE TABLE consumed_nonces (
    nonce       TEXT PRIMARY KEY NOT NULL REFERENCES issuances (nonce),
    proposal_id TEXT NOT NULL UNIQUE REFERENCES issuances (proposal_id),
    consumed_at TEXT NOT NULL
) STRICT;

-- What a head was about to do, from the verified claims.
CREATE TABLE intents (
    nonce          TEXT PRIMARY KEY NOT NULL REFERENCES consumed_nonces (nonce),
    proposal_id    TEXT NOT NULL UNIQUE,
    principal      TEXT NOT NULL,
    session        TEXT NOT NULL,
    operation      TEXT NOT NULL,
    arguments_json TEXT NOT NULL,
    proof_sha256   TEXT NOT NULL,
    recorded_at    TEXT NOT NULL
) STRICT;

-- How an intent ended: reported by the head, or resolved by a person.
CREATE TABLE completions (
    nonce        TEXT PRIMARY KEY NOT NULL REFERENCES intents (nonce),
    proposal_id  TEXT NOT NULL UNIQUE,
    status       TEXT NOT NULL CHECK (status IN ('applied', 'failed')),
    error        TEXT,
    result       TEXT NOT NULL,
    resolved_by  TEXT,
    completed_at TEXT NOT NULL
) STRICT;

-- Builtin effects applied to the state store, keyed by nonce (idempotency).
CREATE TABLE effect_applied (
    nonce      TEXT PRIMARY KEY NOT NULL REFERENCES intents (nonce),
    effect     TEXT NOT NULL,
    result     TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT;

-- The state store of the builtin effects; the only mutable data table.
CREATE TABLE state (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (namespace, key)
) STRICT;

-- The hash-chained event log. `id` is assigned by the writer as head count + 1.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY NOT NULL,
    at          TEXT NOT NULL,
    kind        TEXT NOT NULL,
    proposal_id TEXT,
    actor       TEXT NOT NULL,
    details     TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
) STRICT;
CREATE INDEX events_by_proposal ON events (proposal_id);

-- The head of the chain: one row, advanced by trigger in the same
-- transaction as every event insert, so a truncated tail is detected.
CREATE TABLE chain_head (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    count     INTEGER NOT NULL,
    hash      TEXT NOT NULL
) STRICT;
INSERT INTO chain_head (singleton, count, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- An event must extend the current head exactly.
CREATE TRIGGER events_extend_head BEFORE INSERT ON events
WHEN NEW.id IS NOT (SELECT count + 1 FROM chain_head WHERE singleton = 1)
  OR NEW.prev_hash IS NOT (SELECT hash FROM chain_head WHERE singleton = 1)
BEGIN
    SELECT RAISE(ABORT, 'an event must extend the chain head');
END;

CREATE TRIGGER events_advance_head AFTER INSERT ON events
BEGIN
    UPDATE chain_head SET count = NEW.id, hash = NEW.hash WHERE singleton = 1;
END;

CREATE TRIGGER chain_head_no_insert BEFORE INSERT ON chain_head
BEGIN
    SELECT RAISE(ABORT, 'chain_head has exactly one row');
END;
CREATE TRIGGER chain_head_no_delete BEFORE DELETE ON chain_head
BEGIN
    SELECT RAISE(ABORT, 'chain_head has exactly one row');
END;

-- Append-only tables.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

CREATE TRIGGER proposals_no_update BEFORE UPDATE ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals are append-only');
END;
CREATE TRIGGER proposals_no_delete BEFORE DELETE ON proposals
BEGIN
    SELECT RAISE(ABORT, 'proposals are append-only');
END;

CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions are append-only');
END;
CREATE TRIGGER decisions_no_delete BEFORE DELETE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions are append-only');
END;

CREATE TRIGGER issuances_no_update BEFORE UPDATE ON issuances
BEGIN
    SELECT RAISE(ABORT, 'issuances are append-only');
END;
CREATE TRIGGER issuances_no_delete BEFORE DELETE ON issuances
BEGIN
    SELECT RAISE(ABORT, 'issuances are append-only');
END;

CREATE TRIGGER revocations_no_update BEFORE UPDATE ON revocations
BEGIN
    SELECT RAISE(ABORT, 'revocations are append-only');
END;
CREATE TRIGGER revocations_no_delete BEFORE DELETE ON revocations
BEGIN
    SELECT RAISE(ABORT, 'revocations are append-only');
END;

CREATE TRIGGER consumed_nonces_no_update BEFORE UPDATE ON consumed_nonces
BEGIN
    SELECT RAISE(ABORT, 'consumed nonces are append-only');
END;
CREATE TRIGGER consumed_nonces_no_delete BEFORE DELETE ON consumed_nonces
BEGIN
    SELECT RAISE(ABORT, 'consumed nonces are append-only');
END;

CREATE TRIGGER intents_no_update BEFORE UPDATE ON intents
BEGIN
    SELECT RAISE(ABORT, 'intents are append-only');
END;
CREATE TRIGGER intents_no_delete BEFORE DELETE ON intents
BEGIN
    SELECT RAISE(ABORT, 'intents are append-only');
END;

CREATE TRIGGER completions_no_update BEFORE UPDATE ON completions
BEGIN
    SELECT RAISE(ABORT, 'completions are append-only');
END;
CREATE TRIGGER completions_no_delete BEFORE DELETE ON completions
BEGIN
    SELECT RAISE(ABORT, 'completions are append-only');
END;

CREATE TRIGGER effect_applied_no_update BEFORE UPDATE ON effect_applied
BEGIN
    SELECT RAISE(ABORT, 'applied effects are append-only');
END;
CREATE TRIGGER effect_applied_no_delete BEFORE DELETE ON effect_applied
BEGIN
    SELECT RAISE(ABORT, 'applied effects are append-only');
END;
