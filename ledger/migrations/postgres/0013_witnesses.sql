-- countersign ledger, PostgreSQL schema version 13: witnesses' cosignatures.
-- The same tables as migrations/sqlite/0013_witnesses.sql, whose comments
-- say what each holds. deploy/postgres-roles.sql grants both roles what
-- the witnessing client (`countersign up`, `countersign witness serve`)
-- writes here (re-run it after this migration).
CREATE TABLE tlog_cosignatures (
    size        BIGINT NOT NULL REFERENCES tlog_checkpoints (size),
    witness_key TEXT NOT NULL,
    line        TEXT NOT NULL,
    timestamp   BIGINT NOT NULL,
    stored_at   TEXT NOT NULL,
    PRIMARY KEY (size, witness_key)
);
CREATE TRIGGER tlog_cosignatures_append_only BEFORE UPDATE OR DELETE ON tlog_cosignatures
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('tlog cosignatures');
CREATE TRIGGER tlog_cosignatures_no_truncate BEFORE TRUNCATE ON tlog_cosignatures
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('tlog cosignatures');

CREATE TABLE tlog_witnesses (
    witness_key       TEXT PRIMARY KEY NOT NULL,
    acknowledged      BIGINT NOT NULL CHECK (acknowledged >= 0),
    unreachable_since TEXT,
    gap_recorded      BIGINT NOT NULL CHECK (gap_recorded IN (0, 1)),
    halted            TEXT,
    updated_at        TEXT NOT NULL
);
CREATE FUNCTION countersign_tlog_witnesses_never_back() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'TRUNCATE') THEN
        RAISE EXCEPTION 'a witness''s state is never removed';
    END IF;
    IF NEW.acknowledged < OLD.acknowledged OR NEW.witness_key <> OLD.witness_key THEN
        RAISE EXCEPTION 'a witness''s acknowledged size never decreases';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tlog_witnesses_never_back BEFORE UPDATE OR DELETE ON tlog_witnesses
FOR EACH ROW EXECUTE FUNCTION countersign_tlog_witnesses_never_back();
CREATE TRIGGER tlog_witnesses_no_truncate BEFORE TRUNCATE ON tlog_witnesses
FOR EACH STATEMENT EXECUTE FUNCTION countersign_tlog_witnesses_never_back();
