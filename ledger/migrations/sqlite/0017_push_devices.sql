-- countersign ledger, SQLite schema version 17: the Web Push devices of
-- the consoles (issue 50).
--
-- `push_devices`: one row per console session whose browser subscribed to
--   Web Push, written by the signer for that console (`SetPushDevices`,
--   role approver, keyed by the caller's principal and approver name) and
--   read by it for the notify process (`PushDevices`), so that every
--   signer of one ledger answers the same and no signer reads a console's
--   files. `endpoint`, `p256dh` and `auth` are the browser's subscription
--   (capabilities to reach a person's device: never logged);
--   `application_server_key` the VAPID public key the console gives
--   browsers to subscribe with;
--   `expires_at` when the session ends (not answered after it; rows past
--   it are deleted at the next write of that principal). Not part of the
--   audit trail: a device decides nothing, and the console's own store
--   remains the record of its sessions.
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
) STRICT;
