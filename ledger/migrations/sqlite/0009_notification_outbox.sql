-- countersign ledger, SQLite schema version 9: the notification outbox.
--
-- The signer opens no outbound connection: when a proposal waits for a
-- person, or a passkey is enrolled or removed, it records a row here (only
-- with `[notify]` configured), and the notify process (`countersign notify
-- serve`, role `notifier`) reads the rows of its principal over the
-- signer's RPCs and acknowledges each once its own delivery state is
-- durable; the acknowledgement deletes the row.
--
-- A row is not an audit record (the proposal and the passkey change have
-- their own events): it is only "not yet taken by the notify process", so
-- it may be deleted, and it holds nothing that authorizes anything.
--
-- `id`:         `ntf_` + 32 lowercase hex, drawn by the signer.
-- `principal`:  whose person is told; a notifier certificate reads only
--               its own principal's rows.
-- `created_at`: when it was recorded (the ledger's timestamp form).
-- `body`:       JSON: the kind, proposal id, operation, arguments' SHA-256
--               and console link, or the passkey change; never a proof.
CREATE TABLE notification_outbox (
    id         TEXT PRIMARY KEY NOT NULL,
    principal  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    body       TEXT NOT NULL
) STRICT;
CREATE INDEX notification_outbox_by_principal ON notification_outbox (principal, created_at, id);
