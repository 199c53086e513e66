-- countersign ledger, PostgreSQL schema version 5: quorum decisions and
-- quorum approvers' passkey assertions. The same tables and columns as migrations/sqlite/0005_quorum.sql, whose
-- comments say what each holds and why. Only the signer role may insert
-- into them (deploy/postgres-roles.sql; re-run it after this migration, since
-- it grants per table); the head role only reads it.

CREATE TABLE quorum_decisions (
    proposal_id TEXT NOT NULL REFERENCES proposals (id),
    approver    TEXT NOT NULL,
    seq         BIGINT NOT NULL CHECK (seq BETWEEN 1 AND 16),
    required    BIGINT NOT NULL CHECK (required BETWEEN 1 AND 16),
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'deny')),
    reason      TEXT CHECK ((decision = 'deny') = (reason IS NOT NULL)),
    passkey     TEXT,
    decided_at  TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver),
    UNIQUE (proposal_id, seq)
);

CREATE TABLE quorum_passkey_assertions (
    proposal_id        TEXT NOT NULL,
    approver           TEXT NOT NULL,
    credential_id      TEXT NOT NULL REFERENCES passkeys (credential_id),
    challenge          TEXT NOT NULL UNIQUE,
    challenge_random   TEXT NOT NULL,
    delivery           TEXT NOT NULL CHECK (delivery IN ('direct', 'handoff')),
    authenticator_data TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    signature          TEXT NOT NULL,
    sign_count         BIGINT NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    at                 TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver),
    FOREIGN KEY (proposal_id, approver) REFERENCES quorum_decisions (proposal_id, approver)
);
CREATE INDEX quorum_passkey_assertions_by_credential
    ON quorum_passkey_assertions (credential_id);

-- What the signer checks, held again by the schema (as on SQLite). Not
-- SECURITY DEFINER: they only read tables every role may read.
CREATE FUNCTION countersign_quorum_decision_needs_pending() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    owner TEXT;
BEGIN
    SELECT principal INTO owner FROM proposals WHERE id = NEW.proposal_id;
    IF owner IS NULL
       OR left(NEW.approver, length(owner) + 1) IS DISTINCT FROM owner || '/'
       OR EXISTS (SELECT 1 FROM decisions WHERE proposal_id = NEW.proposal_id)
       OR NEW.seq IS DISTINCT FROM
          1 + (SELECT count(*) FROM quorum_decisions WHERE proposal_id = NEW.proposal_id) THEN
        RAISE EXCEPTION 'a quorum decision needs a pending proposal of its principal, in order';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER quorum_decisions_need_pending BEFORE INSERT ON quorum_decisions
FOR EACH ROW EXECUTE FUNCTION countersign_quorum_decision_needs_pending();

CREATE FUNCTION countersign_decision_needs_quorum() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.decision = 'approve'
       AND EXISTS (SELECT 1 FROM quorum_decisions WHERE proposal_id = NEW.proposal_id)
       AND (SELECT count(*) FROM quorum_decisions
            WHERE proposal_id = NEW.proposal_id AND decision = 'approve')
           IS DISTINCT FROM
           (SELECT max(required) FROM quorum_decisions WHERE proposal_id = NEW.proposal_id) THEN
        RAISE EXCEPTION 'a quorum proposal is approved only by its required approvals';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER decisions_need_quorum BEFORE INSERT ON decisions
FOR EACH ROW EXECUTE FUNCTION countersign_decision_needs_quorum();

CREATE FUNCTION countersign_quorum_passkey_needs_own() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM passkeys k
                   WHERE k.credential_id = NEW.credential_id
                     AND k.enrolled_by = NEW.approver
                     AND k.principal = (SELECT principal FROM proposals WHERE id = NEW.proposal_id)
                     AND NOT EXISTS (SELECT 1 FROM passkey_removals r
                                     WHERE r.credential_id = k.credential_id)) THEN
        RAISE EXCEPTION 'a quorum passkey assertion needs an active passkey the approver enrolled';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER quorum_passkey_assertions_need_own_passkey
BEFORE INSERT ON quorum_passkey_assertions
FOR EACH ROW EXECUTE FUNCTION countersign_quorum_passkey_needs_own();

-- Append-only, as every fact table (0001).
CREATE TRIGGER quorum_decisions_append_only BEFORE UPDATE OR DELETE ON quorum_decisions
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('quorum decisions');
CREATE TRIGGER quorum_decisions_no_truncate BEFORE TRUNCATE ON quorum_decisions
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('quorum decisions');
CREATE TRIGGER quorum_passkey_assertions_append_only
BEFORE UPDATE OR DELETE ON quorum_passkey_assertions
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('quorum passkey assertions');
CREATE TRIGGER quorum_passkey_assertions_no_truncate BEFORE TRUNCATE ON quorum_passkey_assertions
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('quorum passkey assertions');
