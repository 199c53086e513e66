-- countersign ledger, PostgreSQL schema version 10: decision windows. The
-- same column as migrations/sqlite/0010_decision_windows.sql, whose
-- comments say what it holds and why. No grant changes: the signer
-- already inserts whole proposal rows.
ALTER TABLE proposals ADD COLUMN decide_by TEXT;
