-- countersign ledger, SQLite schema version 12: the transparency log.
-- Every event becomes a leaf of one RFC 6962 Merkle tree (the per-principal
-- chains stay); the signer signs C2SP checkpoints of it with its log key.
-- The leaf encoding and what each table holds are documented in
-- `ledger/src/tlog.rs`.
--
-- `tlog_pending`:     events not yet in the tree. Filled by the event insert
--                     itself (trigger `events_enter_tlog`, in the writer's
--                     transaction, so writers of different chains share no
--                     row), emptied by the sequencer as it assigns leaves.
--                     Not an audit record: a row only says "not sequenced".
-- `tlog_leaves`:      leaf `leaf_index` is event `event_id`, with its RFC 6962
--                     leaf hash (hex). Append-only; indexes have no gaps.
-- `tlog_nodes`:       the hash of every complete, aligned perfect subtree of
--                     two or more leaves: the `2^level` leaves ending before
--                     index `end_size`. Written with the leaves that complete
--                     them, so a proof reads O(log^2 n) rows, not the leaves.
--                     Append-only.
-- `tlog_tree`:        the compact tree (size and right-edge hashes, hex,
--                     largest subtree first, comma-separated): the one row
--                     the sequencer advances with the leaves it adds.
-- `tlog_checkpoints`: every signed checkpoint: size, root (hex), the signed
--                     note's text and when it was signed. Append-only.
CREATE TABLE tlog_pending (
    event_id INTEGER PRIMARY KEY NOT NULL
) STRICT;
-- Every event written before this version enters the tree, in id order.
INSERT INTO tlog_pending (event_id) SELECT id FROM events;
CREATE TRIGGER events_enter_tlog AFTER INSERT ON events
BEGIN
    INSERT INTO tlog_pending (event_id) VALUES (NEW.id);
END;

CREATE TABLE tlog_leaves (
    leaf_index INTEGER PRIMARY KEY NOT NULL,
    event_id   INTEGER NOT NULL UNIQUE,
    leaf_hash  TEXT NOT NULL
) STRICT;
CREATE TRIGGER tlog_leaves_no_update BEFORE UPDATE ON tlog_leaves
BEGIN
    SELECT RAISE(ABORT, 'tlog leaves are append-only');
END;
CREATE TRIGGER tlog_leaves_no_delete BEFORE DELETE ON tlog_leaves
BEGIN
    SELECT RAISE(ABORT, 'tlog leaves are append-only');
END;
CREATE TRIGGER tlog_leaves_no_replace BEFORE INSERT ON tlog_leaves
WHEN EXISTS (SELECT 1 FROM tlog_leaves
             WHERE leaf_index = NEW.leaf_index OR event_id = NEW.event_id)
BEGIN
    SELECT RAISE(ABORT, 'tlog leaves are append-only: the key exists');
END;

CREATE TABLE tlog_nodes (
    end_size INTEGER NOT NULL,
    level    INTEGER NOT NULL,
    hash     TEXT NOT NULL,
    PRIMARY KEY (end_size, level)
) STRICT;
CREATE TRIGGER tlog_nodes_no_update BEFORE UPDATE ON tlog_nodes
BEGIN
    SELECT RAISE(ABORT, 'tlog nodes are append-only');
END;
CREATE TRIGGER tlog_nodes_no_delete BEFORE DELETE ON tlog_nodes
BEGIN
    SELECT RAISE(ABORT, 'tlog nodes are append-only');
END;
CREATE TRIGGER tlog_nodes_no_replace BEFORE INSERT ON tlog_nodes
WHEN EXISTS (SELECT 1 FROM tlog_nodes WHERE end_size = NEW.end_size AND level = NEW.level)
BEGIN
    SELECT RAISE(ABORT, 'tlog nodes are append-only: the key exists');
END;

CREATE TABLE tlog_tree (
    singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
    size      INTEGER NOT NULL,
    edge      TEXT NOT NULL
) STRICT;
INSERT INTO tlog_tree (singleton, size, edge) VALUES (1, 0, '');
-- The tree's row advances; it is never removed.
CREATE TRIGGER tlog_tree_kept BEFORE DELETE ON tlog_tree
BEGIN
    SELECT RAISE(ABORT, 'the tree state is never removed');
END;

CREATE TABLE tlog_checkpoints (
    size      INTEGER PRIMARY KEY NOT NULL,
    root      TEXT NOT NULL,
    note      TEXT NOT NULL,
    signed_at TEXT NOT NULL
) STRICT;
CREATE TRIGGER tlog_checkpoints_no_update BEFORE UPDATE ON tlog_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'tlog checkpoints are append-only');
END;
CREATE TRIGGER tlog_checkpoints_no_delete BEFORE DELETE ON tlog_checkpoints
BEGIN
    SELECT RAISE(ABORT, 'tlog checkpoints are append-only');
END;
CREATE TRIGGER tlog_checkpoints_no_replace BEFORE INSERT ON tlog_checkpoints
WHEN EXISTS (SELECT 1 FROM tlog_checkpoints WHERE size = NEW.size)
BEGIN
    SELECT RAISE(ABORT, 'tlog checkpoints are append-only: the key exists');
END;
