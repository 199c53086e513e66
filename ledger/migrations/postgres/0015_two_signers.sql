-- countersign ledger, PostgreSQL schema version 15: what a second signer
-- of the same ledger needs. The same tables as
-- migrations/sqlite/0015_two_signers.sql, whose comments say what each
-- holds. Only the signer role writes them (deploy/postgres-roles.sql;
-- re-run it after this migration); the witnessing client, which runs in
-- a head's process, also takes its chore's lease.
CREATE TABLE checkpointed_heads (
    chain TEXT PRIMARY KEY NOT NULL,
    count BIGINT NOT NULL CHECK (count > 0),
    hash  TEXT NOT NULL
);

CREATE TABLE chore_leases (
    chore      TEXT PRIMARY KEY NOT NULL,
    holder     TEXT NOT NULL,
    token      BIGINT NOT NULL CHECK (token > 0),
    expires_at TEXT NOT NULL
);

CREATE TABLE signer_keys (
    kid        TEXT PRIMARY KEY NOT NULL,
    public_key TEXT NOT NULL UNIQUE,
    status     TEXT NOT NULL CHECK (status IN ('active', 'verifying', 'retired')),
    signer     TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE FUNCTION countersign_keys_stay_retired() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status = 'retired' AND NEW.status <> 'retired' THEN
        RAISE EXCEPTION 'a retired signer key is never published again';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER signer_keys_stay_retired BEFORE UPDATE ON signer_keys
FOR EACH ROW EXECUTE FUNCTION countersign_keys_stay_retired();
