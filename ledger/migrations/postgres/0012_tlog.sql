-- countersign ledger, PostgreSQL schema version 12: the transparency log.
-- The same tables as migrations/sqlite/0012_tlog.sql, whose comments say
-- what each holds. deploy/postgres-roles.sql grants the signer (which runs
-- the sequencer and signs checkpoints) what it writes here (re-run it after
-- this migration); the heads write nothing here directly: the event insert
-- queues its event through a SECURITY DEFINER trigger.
CREATE TABLE tlog_pending (
    event_id BIGINT PRIMARY KEY NOT NULL
);
INSERT INTO tlog_pending (event_id) SELECT id FROM events;
CREATE FUNCTION countersign_events_enter_tlog() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    INSERT INTO tlog_pending (event_id) VALUES (NEW.id);
    RETURN NULL;
END $$;
CREATE TRIGGER events_enter_tlog AFTER INSERT ON events
FOR EACH ROW EXECUTE FUNCTION countersign_events_enter_tlog();

CREATE TABLE tlog_leaves (
    leaf_index BIGINT PRIMARY KEY NOT NULL,
    event_id   BIGINT NOT NULL UNIQUE,
    leaf_hash  TEXT NOT NULL
);
CREATE TRIGGER tlog_leaves_append_only BEFORE UPDATE OR DELETE ON tlog_leaves
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('tlog leaves');
CREATE TRIGGER tlog_leaves_no_truncate BEFORE TRUNCATE ON tlog_leaves
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('tlog leaves');

CREATE TABLE tlog_nodes (
    end_size BIGINT NOT NULL,
    level    BIGINT NOT NULL,
    hash     TEXT NOT NULL,
    PRIMARY KEY (end_size, level)
);
CREATE TRIGGER tlog_nodes_append_only BEFORE UPDATE OR DELETE ON tlog_nodes
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('tlog nodes');
CREATE TRIGGER tlog_nodes_no_truncate BEFORE TRUNCATE ON tlog_nodes
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('tlog nodes');

CREATE TABLE tlog_tree (
    singleton BIGINT PRIMARY KEY NOT NULL CHECK (singleton = 1),
    size      BIGINT NOT NULL,
    edge      TEXT NOT NULL
);
INSERT INTO tlog_tree (singleton, size, edge) VALUES (1, 0, '');
CREATE FUNCTION countersign_tlog_tree_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the tree state is never removed';
END $$;
CREATE TRIGGER tlog_tree_kept BEFORE DELETE ON tlog_tree
FOR EACH ROW EXECUTE FUNCTION countersign_tlog_tree_kept();
CREATE TRIGGER tlog_tree_no_truncate BEFORE TRUNCATE ON tlog_tree
FOR EACH STATEMENT EXECUTE FUNCTION countersign_tlog_tree_kept();

CREATE TABLE tlog_checkpoints (
    size      BIGINT PRIMARY KEY NOT NULL,
    root      TEXT NOT NULL,
    note      TEXT NOT NULL,
    signed_at TEXT NOT NULL
);
CREATE TRIGGER tlog_checkpoints_append_only BEFORE UPDATE OR DELETE ON tlog_checkpoints
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('tlog checkpoints');
CREATE TRIGGER tlog_checkpoints_no_truncate BEFORE TRUNCATE ON tlog_checkpoints
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('tlog checkpoints');
