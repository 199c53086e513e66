-- countersign ledger, SQLite schema version 8: one hash chain per
-- principal. Every event of a principal (its proposals, decisions,
-- issuances, consumptions, rules, passkeys, state) extends that
-- principal's chain; events of no principal (key rotations, checkpoints)
-- extend the global chain, named ''. On PostgreSQL this lets principals
-- write without queueing for one another; SQLite keeps its single writer,
-- and the same schema.
--
-- `events.chain`, `events.seq`: the chain and the position in it (from 1,
-- without gaps). `events.id` stays the row's identity, assigned by the
-- database in insertion order; it is no longer a chain position.
--
-- Migration: every event written before this version becomes the global
-- chain's, at its id (seq = id), so its hash (which commits to that
-- position and not to a chain name) still verifies unchanged; the old
-- chain head becomes the global chain's head.
ALTER TABLE events ADD COLUMN chain TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER events_no_update;
UPDATE events SET seq = id;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE UNIQUE INDEX events_by_chain ON events (chain, seq);

-- One head per chain (count and last hash), moved only by the trigger of
-- an event insert, in the same transaction.
CREATE TABLE chain_heads (
    chain TEXT PRIMARY KEY NOT NULL,
    count INTEGER NOT NULL,
    hash  TEXT NOT NULL
) STRICT;
INSERT INTO chain_heads (chain, count, hash)
SELECT '', count, hash FROM chain_head WHERE singleton = 1 AND count > 0;

DROP TRIGGER events_extend_head;
DROP TRIGGER events_advance_head;
DROP TRIGGER chain_head_no_insert;
DROP TRIGGER chain_head_no_delete;
DROP TABLE chain_head;

-- An event must extend its chain's head exactly (a new chain starts at
-- position 1 on the genesis hash).
CREATE TRIGGER events_extend_head BEFORE INSERT ON events
WHEN NEW.seq IS NOT COALESCE((SELECT count FROM chain_heads WHERE chain = NEW.chain), 0) + 1
  OR NEW.prev_hash IS NOT COALESCE(
         (SELECT hash FROM chain_heads WHERE chain = NEW.chain),
         '0000000000000000000000000000000000000000000000000000000000000000')
BEGIN
    SELECT RAISE(ABORT, 'an event must extend its chain''s head');
END;

-- Recreated after the trigger above, so it still fires first (SQLite runs
-- the newest trigger first) and names the reason: `INSERT OR REPLACE`
-- would delete the row holding the key, id or chain position, without
-- firing a DELETE trigger.
DROP TRIGGER events_no_replace;
CREATE TRIGGER events_no_replace BEFORE INSERT ON events
WHEN EXISTS (SELECT 1 FROM events WHERE id = NEW.id OR (chain = NEW.chain AND seq = NEW.seq))
BEGIN
    SELECT RAISE(ABORT, 'events are append-only: the key exists');
END;

CREATE TRIGGER events_advance_head AFTER INSERT ON events
BEGIN
    INSERT INTO chain_heads (chain, count, hash) VALUES (NEW.chain, NEW.seq, NEW.hash)
    ON CONFLICT (chain) DO UPDATE SET count = excluded.count, hash = excluded.hash;
END;

CREATE TRIGGER chain_heads_no_delete BEFORE DELETE ON chain_heads
BEGIN
    SELECT RAISE(ABORT, 'chain heads are never removed');
END;
