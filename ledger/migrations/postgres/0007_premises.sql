-- countersign ledger, PostgreSQL schema version 7: premises. The same
-- columns as migrations/sqlite/0007_premises.sql, whose comments say what
-- each holds and why. Existing grants cover them (INSERT on proposals for
-- the signer, INSERT/UPDATE on state for the head).
ALTER TABLE state ADD COLUMN version BIGINT NOT NULL DEFAULT 0;
ALTER TABLE proposals ADD COLUMN premise TEXT;
