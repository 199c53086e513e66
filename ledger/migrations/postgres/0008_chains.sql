-- countersign ledger, PostgreSQL schema version 8: one hash chain per
-- principal, so principals no longer queue for one chain head. The same
-- columns as migrations/sqlite/0008_chains.sql.
--
-- `events.chain`, `events.seq`: the chain ('' for the global chain: key
-- rotations, checkpoints) and the position in it (from 1, without gaps).
-- `events.id` stays the row's identity, now drawn from a sequence; it is
-- no longer a chain position. Every event written before this version
-- becomes the global chain's at its id (seq = id), so its hash still
-- verifies unchanged; the old head becomes the global chain's head.
ALTER TABLE events ADD COLUMN chain TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN seq BIGINT;
ALTER TABLE events DISABLE TRIGGER events_append_only;
UPDATE events SET seq = id;
ALTER TABLE events ENABLE TRIGGER events_append_only;
ALTER TABLE events ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX events_by_chain ON events (chain, seq);

CREATE SEQUENCE events_id_seq OWNED BY events.id;
SELECT setval('events_id_seq', COALESCE((SELECT MAX(id) FROM events), 0) + 1, false);
ALTER TABLE events ALTER COLUMN id SET DEFAULT nextval('events_id_seq');

-- One head per chain, moved only by the SECURITY DEFINER functions below:
-- no role is granted INSERT or UPDATE on it.
CREATE TABLE chain_heads (
    chain TEXT PRIMARY KEY NOT NULL,
    count BIGINT NOT NULL,
    hash  TEXT NOT NULL
);
INSERT INTO chain_heads (chain, count, hash)
SELECT '', count, hash FROM chain_head WHERE singleton = 1 AND count > 0;

DROP TRIGGER events_extend_head ON events;
DROP FUNCTION countersign_events_extend_head();
DROP TABLE chain_head;
DROP FUNCTION countersign_chain_head_fixed();

-- Lock a chain's head for the rest of the transaction, creating it (empty,
-- at the genesis hash) if the chain has no event yet, and return it. A
-- writer takes it before reading what its events will describe; two
-- writers of one chain serialize here, writers of different chains do not.
CREATE FUNCTION countersign_lock_chain(name TEXT) RETURNS TABLE (count BIGINT, hash TEXT)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY SELECT h.count, h.hash FROM chain_heads h WHERE h.chain = name FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO chain_heads (chain, count, hash)
        VALUES (name, 0, '0000000000000000000000000000000000000000000000000000000000000000')
        ON CONFLICT (chain) DO NOTHING;
        RETURN QUERY SELECT h.count, h.hash FROM chain_heads h WHERE h.chain = name FOR UPDATE;
    END IF;
END $$;

-- An event must extend its chain's head exactly (a new chain starts at
-- position 1 on the genesis hash); the head then advances in the same
-- transaction.
CREATE FUNCTION countersign_events_extend_head() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    head chain_heads%ROWTYPE;
BEGIN
    SELECT * INTO head FROM chain_heads WHERE chain = NEW.chain FOR UPDATE;
    IF NOT FOUND THEN
        head.count := 0;
        head.hash := '0000000000000000000000000000000000000000000000000000000000000000';
        INSERT INTO chain_heads (chain, count, hash) VALUES (NEW.chain, 0, head.hash);
    END IF;
    IF NEW.seq IS DISTINCT FROM head.count + 1 OR NEW.prev_hash IS DISTINCT FROM head.hash THEN
        RAISE EXCEPTION 'an event must extend its chain''s head';
    END IF;
    UPDATE chain_heads SET count = NEW.seq, hash = NEW.hash WHERE chain = NEW.chain;
    RETURN NEW;
END $$;
CREATE TRIGGER events_extend_head BEFORE INSERT ON events
FOR EACH ROW EXECUTE FUNCTION countersign_events_extend_head();

CREATE FUNCTION countersign_chain_heads_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'chain heads are never removed';
END $$;
CREATE TRIGGER chain_heads_no_delete BEFORE DELETE ON chain_heads
FOR EACH ROW EXECUTE FUNCTION countersign_chain_heads_kept();
CREATE TRIGGER chain_heads_no_truncate BEFORE TRUNCATE ON chain_heads
FOR EACH STATEMENT EXECUTE FUNCTION countersign_chain_heads_kept();
