-- countersign ledger, SQLite schema version 7: premises. An operation may
-- declare a premise, a read of one key of the principal's state store that
-- the signer makes at proposal, shows the person and binds into the proof
-- (`prem`); the consume transaction reads the key again and refuses with
-- `premise_changed` if it moved.
--
-- `state.version`: the id of the `effect_applied` event that last wrote
-- the value. Event ids only grow, so a value written again (paused, then
-- resumed; deleted, then created with the same fields) never comes back
-- with a version a proof was issued under. 0 for values written before
-- this migration: the first write after it moves them.
ALTER TABLE state ADD COLUMN version INTEGER NOT NULL DEFAULT 0;

-- `proposals.premise`: the premise the signer read at proposal, as the
-- canonical JSON of the proof's `prem` claim; NULL for an operation
-- without one. A proof is consumed only if its `prem` equals this.
ALTER TABLE proposals ADD COLUMN premise TEXT;
