-- countersign ledger, PostgreSQL schema version 17: the Web Push devices
-- of the consoles. The same table as migrations/sqlite/0017_push_devices.sql,
-- whose comments say what each column holds. Only the signer role reads
-- and writes it (deploy/postgres-roles.sql; re-run it after this
-- migration).
CREATE TABLE push_devices (
    principal              TEXT NOT NULL,
    approver               TEXT NOT NULL,
    session_id             TEXT NOT NULL,
    endpoint               TEXT NOT NULL,
    p256dh                 TEXT NOT NULL,
    auth                   TEXT NOT NULL,
    application_server_key TEXT NOT NULL,
    expires_at             TEXT NOT NULL,
    recorded_at            TEXT NOT NULL,
    PRIMARY KEY (principal, approver, session_id)
);
