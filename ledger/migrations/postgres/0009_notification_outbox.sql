-- countersign ledger, PostgreSQL schema version 9: the notification
-- outbox. The same columns as migrations/sqlite/0009_notification_outbox.sql,
-- whose comments say what each holds and why. deploy/postgres-roles.sql
-- grants the signer INSERT and DELETE on it (re-run it after this
-- migration); the heads only read it, like every table.
CREATE TABLE notification_outbox (
    id         TEXT PRIMARY KEY NOT NULL,
    principal  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX notification_outbox_by_principal ON notification_outbox (principal, created_at, id);
