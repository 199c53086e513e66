-- countersign ledger, PostgreSQL schema version 16: the operator's Cedar
-- policy. The same column and table as migrations/sqlite/0016_policy_sets.sql,
-- whose comments say what each holds. Only the signer role writes them
-- (deploy/postgres-roles.sql; re-run it after this migration).
ALTER TABLE proposals ADD COLUMN policy TEXT;

CREATE TABLE policy_sets (
    digest      TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64),
    text        TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TRIGGER policy_sets_append_only BEFORE UPDATE OR DELETE ON policy_sets
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('policy sets');
CREATE TRIGGER policy_sets_no_truncate BEFORE TRUNCATE ON policy_sets
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('policy sets');
