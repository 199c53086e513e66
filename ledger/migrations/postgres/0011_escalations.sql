-- countersign ledger, PostgreSQL schema version 11: escalations. The same
-- columns as migrations/sqlite/0011_escalations.sql, whose comments say
-- what each holds and why. No grant changes: the signer already inserts,
-- reads and deletes whole outbox rows.
ALTER TABLE notification_outbox ADD COLUMN not_before TEXT;
ALTER TABLE notification_outbox ADD COLUMN escalates TEXT;
