-- countersign ledger, SQLite schema version 13: witnesses' cosignatures.
-- The witnessing client (`countersign-witness`, run by `countersign up` or
-- `countersign witness serve`, never by the signer) sends each signed
-- checkpoint to the witnesses of the `[tlog] policy` file
-- (c2sp.org/tlog-witness) and stores what they return here.
--
-- `tlog_cosignatures`: one verified cosignature (c2sp.org/tlog-cosignature,
--                      type 0x04) of the checkpoint of `size` by the witness
--                      whose verifier key is `witness_key`: the note
--                      signature line as returned (without its newline)
--                      and its timestamp. Checked against the stored
--                      checkpoint before it is written (ledger/src/witness.rs)
--                      and again whenever it is read. Append-only; one per
--                      checkpoint and witness key.
-- `tlog_witnesses`:    the client's state per witness key, so that its queue
--                      survives a restart: the largest checkpoint size the
--                      witness cosigned for this log (never decreases),
--                      since when it has been unreachable and whether that
--                      gap was recorded as an event, and why it was halted
--                      (a witness ahead of the log, or inconsistent with it:
--                      a rolled-back log), if it was. Not an audit record by
--                      itself: every change that matters is also an event.
CREATE TABLE tlog_cosignatures (
    size        INTEGER NOT NULL REFERENCES tlog_checkpoints (size),
    witness_key TEXT NOT NULL,
    line        TEXT NOT NULL,
    timestamp   INTEGER NOT NULL,
    stored_at   TEXT NOT NULL,
    PRIMARY KEY (size, witness_key)
) STRICT;
CREATE TRIGGER tlog_cosignatures_no_update BEFORE UPDATE ON tlog_cosignatures
BEGIN
    SELECT RAISE(ABORT, 'tlog cosignatures are append-only');
END;
CREATE TRIGGER tlog_cosignatures_no_delete BEFORE DELETE ON tlog_cosignatures
BEGIN
    SELECT RAISE(ABORT, 'tlog cosignatures are append-only');
END;
CREATE TRIGGER tlog_cosignatures_no_replace BEFORE INSERT ON tlog_cosignatures
WHEN EXISTS (SELECT 1 FROM tlog_cosignatures
             WHERE size = NEW.size AND witness_key = NEW.witness_key)
BEGIN
    SELECT RAISE(ABORT, 'tlog cosignatures are append-only: the key exists');
END;

CREATE TABLE tlog_witnesses (
    witness_key       TEXT PRIMARY KEY NOT NULL,
    acknowledged      INTEGER NOT NULL CHECK (acknowledged >= 0),
    unreachable_since TEXT,
    gap_recorded      INTEGER NOT NULL CHECK (gap_recorded IN (0, 1)),
    halted            TEXT,
    updated_at        TEXT NOT NULL
) STRICT;
CREATE TRIGGER tlog_witnesses_never_back BEFORE UPDATE ON tlog_witnesses
WHEN NEW.acknowledged < OLD.acknowledged OR NEW.witness_key <> OLD.witness_key
BEGIN
    SELECT RAISE(ABORT, 'a witness''s acknowledged size never decreases');
END;
CREATE TRIGGER tlog_witnesses_kept BEFORE DELETE ON tlog_witnesses
BEGIN
    SELECT RAISE(ABORT, 'a witness''s state is never removed');
END;
