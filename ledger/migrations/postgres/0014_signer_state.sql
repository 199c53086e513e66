-- countersign ledger, PostgreSQL schema version 14: the signer's open
-- decision state. The same tables as migrations/sqlite/0014_signer_state.sql,
-- whose comments say what each holds. Only the signer role may read or
-- write them (deploy/postgres-roles.sql revokes even SELECT from the head
-- role; re-run it after this migration). Rows are deleted when used or
-- expired, never updated (the triggers below refuse an UPDATE).
CREATE TABLE passkey_challenges (
    id         TEXT PRIMARY KEY NOT NULL,
    challenge  TEXT NOT NULL UNIQUE,
    random     TEXT NOT NULL,
    approver   TEXT NOT NULL,
    purpose    TEXT NOT NULL CHECK (purpose IN ('decision', 'enrol', 'remove')),
    subject    TEXT NOT NULL,
    delivery   TEXT NOT NULL CHECK (
        (purpose = 'decision' AND delivery IN ('direct', 'handoff'))
        OR (purpose <> 'decision' AND delivery = '')),
    session    TEXT NOT NULL,
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX passkey_challenges_by_expiry ON passkey_challenges (expires_at);

CREATE TABLE enrolment_codes (
    approver   TEXT PRIMARY KEY NOT NULL,
    sha256     TEXT NOT NULL CHECK (length(sha256) = 64),
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX enrolment_codes_by_hash ON enrolment_codes (sha256);

CREATE FUNCTION countersign_delete_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% rows are never changed, only deleted', TG_TABLE_NAME;
END $$;
CREATE TRIGGER passkey_challenges_never_updated BEFORE UPDATE ON passkey_challenges
FOR EACH ROW EXECUTE FUNCTION countersign_delete_only();
CREATE TRIGGER enrolment_codes_never_updated BEFORE UPDATE ON enrolment_codes
FOR EACH ROW EXECUTE FUNCTION countersign_delete_only();
