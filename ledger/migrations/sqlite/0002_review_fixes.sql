-- countersign ledger, SQLite schema version 2: what an adversarial review
-- of version 1 found.

-- An intent records the contract revision its proof was issued under, so
-- reconcile replays an interrupted effect only under the contract a person
-- approved, and until when its head may still be running the effect (its
-- lease: the effect's timeout plus a margin), so neither reconcile nor a
-- person's resolution overtakes a running execution, and which process
-- recorded it (its owner; when that process is known to have exited, the
-- lease holds nobody back). '' on intents written before this version:
-- unknown revision (never replayed), lease expired, owner unknown.
ALTER TABLE intents ADD COLUMN contract_revision TEXT NOT NULL DEFAULT '';
ALTER TABLE intents ADD COLUMN lease_until TEXT NOT NULL DEFAULT '';
ALTER TABLE intents ADD COLUMN owner TEXT NOT NULL DEFAULT '';

-- The proof-possession digest of an issuance: SHA-256 of the proof's
-- consume key. On PostgreSQL a trigger requires the key for every consumed
-- nonce, so the head role cannot consume without the proof; SQLite has no
-- roles (whoever can write the file is trusted), and keeps the digest so
-- the signer writes the same row on both.
ALTER TABLE issuances ADD COLUMN consume_digest TEXT;

-- The state store is keyed by principal: one principal's schedules are
-- invisible to another's effects on a shared ledger. Existing rows go to
-- the principal of the last applied effect that named them.
CREATE TABLE state_by_principal (
    principal  TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (principal, namespace, key)
) STRICT;
INSERT INTO state_by_principal (principal, namespace, key, value, updated_at)
SELECT COALESCE((SELECT t.principal
                 FROM events e JOIN intents t ON t.proposal_id = e.proposal_id
                 WHERE e.kind = 'effect_applied'
                   AND json_extract(t.arguments_json, '$.name') = s.key
                 ORDER BY e.id DESC LIMIT 1), ''),
       s.namespace, s.key, s.value, s.updated_at
FROM state s;
DROP TABLE state;
ALTER TABLE state_by_principal RENAME TO state;

-- `INSERT OR REPLACE` (and `REPLACE`) deletes the conflicting row without
-- firing the DELETE triggers above (recursive triggers are off): refuse an
-- insert whose key, or any unique column, already exists, on every
-- append-only table. The message ends in ': the key exists', which the
-- backend reads as a unique violation (a plain duplicate INSERT now stops
-- here, before the constraint).
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the key exists');
END;
CREATE TRIGGER proposals_no_replace BEFORE INSERT ON proposals
WHEN EXISTS (SELECT 1 FROM proposals WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'proposals are append-only: the key exists');
END;
CREATE TRIGGER decisions_no_replace BEFORE INSERT ON decisions
WHEN EXISTS (SELECT 1 FROM decisions WHERE proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'decisions are append-only: the key exists');
END;
CREATE TRIGGER issuances_no_replace BEFORE INSERT ON issuances
WHEN EXISTS (SELECT 1 FROM issuances WHERE proposal_id = NEW.proposal_id
             OR proof_sha256 = NEW.proof_sha256 OR nonce = NEW.nonce)
BEGIN
    SELECT RAISE(ABORT, 'issuances are append-only: the key exists');
END;
CREATE TRIGGER revocations_no_replace BEFORE INSERT ON revocations
WHEN EXISTS (SELECT 1 FROM revocations WHERE proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'revocations are append-only: the key exists');
END;
CREATE TRIGGER consumed_nonces_no_replace BEFORE INSERT ON consumed_nonces
WHEN EXISTS (SELECT 1 FROM consumed_nonces WHERE nonce = NEW.nonce
             OR proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'consumed nonces are append-only: the key exists');
END;
CREATE TRIGGER intents_no_replace BEFORE INSERT ON intents
WHEN EXISTS (SELECT 1 FROM intents WHERE nonce = NEW.nonce
             OR proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'intents are append-only: the key exists');
END;
CREATE TRIGGER completions_no_replace BEFORE INSERT ON completions
WHEN EXISTS (SELECT 1 FROM completions WHERE nonce = NEW.nonce
             OR proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'completions are append-only: the key exists');
END;
CREATE TRIGGER effect_applied_no_replace BEFORE INSERT ON effect_applied
WHEN EXISTS (SELECT 1 FROM effect_applied WHERE nonce = NEW.nonce)
BEGIN
    SELECT RAISE(ABORT, 'applied effects are append-only: the key exists');
END;
