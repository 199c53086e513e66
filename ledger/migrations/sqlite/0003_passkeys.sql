-- countersign ledger, SQLite schema version 3: passkeys. The signer
-- requires a WebAuthn assertion with user verification for approvals; the
-- ledger is the durable, append-only record of the credentials it accepts
-- and of each assertion beside what it authorized, so `audit --verify`
-- can recheck every approval with public data only.
--
-- Binary values (credential ids, COSE keys, authenticator data,
-- clientDataJSON, signatures, challenges) are TEXT in base64url without
-- padding, as the browser sends them. Only the signer writes these tables.

-- An enrolled credential, with its registration as the browser sent it.
-- `sign_count` is the authenticator's counter at enrolment; the counter
-- the signer compares a new assertion against is the greatest of this and
-- every stored assertion's (rows never change). `enrolled_by`: who asked
-- (`<principal>/console`, `signer-admin`). `authorized_by`:
-- `enrolment-code` for a credential enrolled with a one-time enrolment
-- code, otherwise the credential whose assertion authorized this one.
CREATE TABLE passkeys (
    credential_id      TEXT PRIMARY KEY NOT NULL,
    principal          TEXT NOT NULL,
    name               TEXT NOT NULL,
    public_key         TEXT NOT NULL,
    sign_count         INTEGER NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    attestation_object TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    enrolled_at        TEXT NOT NULL,
    enrolled_by        TEXT NOT NULL,
    authorized_by      TEXT NOT NULL
) STRICT;
CREATE INDEX passkeys_by_principal ON passkeys (principal, enrolled_at);

-- A removal is a row of its own, not an edit: passkeys stay append-only
-- and the removed credential's past assertions stay verifiable.
-- `authorized_by`: the credential whose assertion authorized it, or
-- `signer-admin` (the administrative recovery path, without an assertion).
CREATE TABLE passkey_removals (
    credential_id TEXT PRIMARY KEY NOT NULL REFERENCES passkeys (credential_id),
    removed_at    TEXT NOT NULL,
    removed_by    TEXT NOT NULL,
    authorized_by TEXT NOT NULL
) STRICT;

-- Every assertion the signer accepted, with what it authorized: a
-- decision (subject: the proposal id; delivery: how the proof is
-- delivered, part of the signed proposal digest), an enrolment or a
-- removal (subject: the credential enrolled or removed). `challenge` is
-- the derived 32-byte challenge the authenticator signed: UNIQUE, so an
-- accepted challenge is never accepted again, durably. `challenge_random`
-- is the signer's random half, from which (with the proposal digest) an
-- auditor rederives it. One assertion per subject and purpose: one per
-- approval, enrolment and removal.
CREATE TABLE passkey_assertions (
    id                 INTEGER PRIMARY KEY NOT NULL,
    credential_id      TEXT NOT NULL REFERENCES passkeys (credential_id),
    purpose            TEXT NOT NULL CHECK (purpose IN ('decision', 'enrol', 'remove')),
    subject            TEXT NOT NULL,
    challenge          TEXT NOT NULL UNIQUE,
    challenge_random   TEXT NOT NULL,
    delivery           TEXT NOT NULL CHECK (
        (purpose = 'decision' AND delivery IN ('direct', 'handoff'))
        OR (purpose <> 'decision' AND delivery = '')),
    authenticator_data TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    signature          TEXT NOT NULL,
    sign_count         INTEGER NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    at                 TEXT NOT NULL,
    UNIQUE (purpose, subject)
) STRICT;
CREATE INDEX passkey_assertions_by_credential ON passkey_assertions (credential_id);

-- What the signer checks, held again by the schema: a credential is
-- enrolled by an enrolment code or by an enrolled, unremoved credential of
-- the same principal; a removal likewise, or by `signer-admin`; an
-- assertion comes from an enrolled, unremoved credential, about a subject
-- of its own principal (a decision: an issued proposal; else a credential).
CREATE TRIGGER passkeys_need_authority BEFORE INSERT ON passkeys
WHEN NEW.authorized_by IS NOT 'enrolment-code'
 AND NOT EXISTS (SELECT 1 FROM passkeys k
                 WHERE k.credential_id = NEW.authorized_by AND k.principal = NEW.principal
                   AND NOT EXISTS (SELECT 1 FROM passkey_removals r
                                   WHERE r.credential_id = k.credential_id))
BEGIN
    SELECT RAISE(ABORT, 'a passkey needs an enrolment code or an enrolled passkey');
END;

CREATE TRIGGER passkey_removals_need_authority BEFORE INSERT ON passkey_removals
WHEN NEW.authorized_by IS NOT 'signer-admin'
 AND NOT EXISTS (SELECT 1 FROM passkeys k
                 WHERE k.credential_id = NEW.authorized_by
                   AND k.principal = (SELECT principal FROM passkeys
                                      WHERE credential_id = NEW.credential_id)
                   AND NOT EXISTS (SELECT 1 FROM passkey_removals r
                                   WHERE r.credential_id = k.credential_id))
BEGIN
    SELECT RAISE(ABORT, 'a passkey removal needs signer-admin or an enrolled passkey');
END;

CREATE TRIGGER passkey_assertions_need_subject BEFORE INSERT ON passkey_assertions
WHEN NOT EXISTS (SELECT 1 FROM passkeys WHERE credential_id = NEW.credential_id)
  OR EXISTS (SELECT 1 FROM passkey_removals WHERE credential_id = NEW.credential_id)
  OR (SELECT principal FROM passkeys WHERE credential_id = NEW.credential_id) IS NOT
     CASE NEW.purpose
         WHEN 'decision' THEN (SELECT principal FROM issuances WHERE proposal_id = NEW.subject)
         ELSE (SELECT principal FROM passkeys WHERE credential_id = NEW.subject)
     END
BEGIN
    SELECT RAISE(ABORT, 'a passkey assertion needs an enrolled passkey and a subject of its principal');
END;

-- Append-only, as every fact table (0001), and no `INSERT OR REPLACE`
-- (0002). The challenge has its own trigger and message, so that a reused
-- challenge is told apart from any other existing key.
CREATE TRIGGER passkeys_no_update BEFORE UPDATE ON passkeys
BEGIN
    SELECT RAISE(ABORT, 'passkeys are append-only');
END;
CREATE TRIGGER passkeys_no_delete BEFORE DELETE ON passkeys
BEGIN
    SELECT RAISE(ABORT, 'passkeys are append-only');
END;
CREATE TRIGGER passkeys_no_replace BEFORE INSERT ON passkeys
WHEN EXISTS (SELECT 1 FROM passkeys WHERE credential_id = NEW.credential_id)
BEGIN
    SELECT RAISE(ABORT, 'passkeys are append-only: the key exists');
END;

CREATE TRIGGER passkey_removals_no_update BEFORE UPDATE ON passkey_removals
BEGIN
    SELECT RAISE(ABORT, 'passkey removals are append-only');
END;
CREATE TRIGGER passkey_removals_no_delete BEFORE DELETE ON passkey_removals
BEGIN
    SELECT RAISE(ABORT, 'passkey removals are append-only');
END;
CREATE TRIGGER passkey_removals_no_replace BEFORE INSERT ON passkey_removals
WHEN EXISTS (SELECT 1 FROM passkey_removals WHERE credential_id = NEW.credential_id)
BEGIN
    SELECT RAISE(ABORT, 'passkey removals are append-only: the key exists');
END;

CREATE TRIGGER passkey_assertions_no_update BEFORE UPDATE ON passkey_assertions
BEGIN
    SELECT RAISE(ABORT, 'passkey assertions are append-only');
END;
CREATE TRIGGER passkey_assertions_no_delete BEFORE DELETE ON passkey_assertions
BEGIN
    SELECT RAISE(ABORT, 'passkey assertions are append-only');
END;
CREATE TRIGGER passkey_assertions_no_replace BEFORE INSERT ON passkey_assertions
WHEN EXISTS (SELECT 1 FROM passkey_assertions WHERE id = NEW.id
             OR (purpose = NEW.purpose AND subject = NEW.subject))
BEGIN
    SELECT RAISE(ABORT, 'passkey assertions are append-only: the key exists');
END;
CREATE TRIGGER passkey_challenges_no_replace BEFORE INSERT ON passkey_assertions
WHEN EXISTS (SELECT 1 FROM passkey_assertions WHERE challenge = NEW.challenge)
BEGIN
    SELECT RAISE(ABORT, 'passkey challenges are single-use: the key exists');
END;
