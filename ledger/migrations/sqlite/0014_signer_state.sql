-- countersign ledger, SQLite schema version 14: the signer's open
-- decision state, so that no decision depends on one signer's memory or
-- files (and, on PostgreSQL, a second signer can finish what the first
-- began). Neither table is evidence: a row is deleted when it is used or
-- found expired, and nothing is ever updated.
--
-- `passkey_challenges`: a WebAuthn challenge the signer issued
--   (BeginDecision, BeginEnrolment, BeginRemoval) and nobody answered yet.
--   `id` is the challenge id the browser sends back (16 random bytes, hex);
--   `challenge` the 32-byte challenge the authenticator signs and
--   `random` the signer's random bytes it was derived from (both base64url;
--   for an enrolment both are the creation challenge); `approver` the
--   approver path of the certificate it was issued to; `purpose`,
--   `subject` (a decision: the proposal id; a removal: the credential id;
--   an enrolment: empty), `delivery` and `session` (a decision's; empty
--   otherwise) what it may authorize; `expires_at` when it stops being
--   accepted (the ledger's timestamp form). The write that records the
--   answer (the approval, the enrolment, the removal) deletes the row in
--   its own transaction and fails if it is gone or expired: a challenge is
--   answered once, whichever signer issued it. `challenge` is UNIQUE, as
--   in `passkey_assertions`, which keeps an answered one refused for good.
-- `enrolment_codes`: the current enrolment code of each approver (its
--   name; empty for the approver certificate without a name): the
--   SHA-256 of the code (hex; the code itself is shown once to the
--   administrator and kept nowhere) and when it stops being accepted.
--   Redeeming deletes the row, whether the code was right or not.
CREATE TABLE passkey_challenges (
    id         TEXT PRIMARY KEY NOT NULL,
    challenge  TEXT NOT NULL UNIQUE,
    random     TEXT NOT NULL,
    approver   TEXT NOT NULL,
    purpose    TEXT NOT NULL CHECK (purpose IN ('decision', 'enrol', 'remove')),
    subject    TEXT NOT NULL,
    delivery   TEXT NOT NULL CHECK (
        (purpose = 'decision' AND delivery IN ('direct', 'handoff'))
        OR (purpose <> 'decision' AND delivery = '')),
    session    TEXT NOT NULL,
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;
CREATE INDEX passkey_challenges_by_expiry ON passkey_challenges (expires_at);
CREATE TRIGGER passkey_challenges_never_updated BEFORE UPDATE ON passkey_challenges
BEGIN
    SELECT RAISE(ABORT, 'passkey challenges are never changed, only deleted');
END;

CREATE TABLE enrolment_codes (
    approver   TEXT PRIMARY KEY NOT NULL,
    sha256     TEXT NOT NULL CHECK (length(sha256) = 64),
    issued_at  TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;
CREATE INDEX enrolment_codes_by_hash ON enrolment_codes (sha256);
CREATE TRIGGER enrolment_codes_never_updated BEFORE UPDATE ON enrolment_codes
BEGIN
    SELECT RAISE(ABORT, 'enrolment codes are never changed, only replaced');
END;
