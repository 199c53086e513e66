-- countersign ledger, PostgreSQL schema version 3: passkeys. The same
-- tables and columns as migrations/sqlite/0003_passkeys.sql, whose
-- comments say what each holds and why. Only the signer role may insert
-- into them (deploy/postgres-roles.sql; re-run it after this migration,
-- since it grants per table); the head role only reads them.

CREATE TABLE passkeys (
    credential_id      TEXT PRIMARY KEY NOT NULL,
    principal          TEXT NOT NULL,
    name               TEXT NOT NULL,
    public_key         TEXT NOT NULL,
    sign_count         BIGINT NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    attestation_object TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    enrolled_at        TEXT NOT NULL,
    enrolled_by        TEXT NOT NULL,
    authorized_by      TEXT NOT NULL
);
CREATE INDEX passkeys_by_principal ON passkeys (principal, enrolled_at);

CREATE TABLE passkey_removals (
    credential_id TEXT PRIMARY KEY NOT NULL REFERENCES passkeys (credential_id),
    removed_at    TEXT NOT NULL,
    removed_by    TEXT NOT NULL,
    authorized_by TEXT NOT NULL
);

-- `id` is an identity column: inserting needs no privilege on its
-- sequence, so the signer role's INSERT grant is enough. The challenge's
-- constraint is named: the backend reads that name as a reused challenge.
CREATE TABLE passkey_assertions (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    credential_id      TEXT NOT NULL REFERENCES passkeys (credential_id),
    purpose            TEXT NOT NULL CHECK (purpose IN ('decision', 'enrol', 'remove')),
    subject            TEXT NOT NULL,
    challenge          TEXT NOT NULL,
    challenge_random   TEXT NOT NULL,
    delivery           TEXT NOT NULL CHECK (
        (purpose = 'decision' AND delivery IN ('direct', 'handoff'))
        OR (purpose <> 'decision' AND delivery = '')),
    authenticator_data TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    signature          TEXT NOT NULL,
    sign_count         BIGINT NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    at                 TEXT NOT NULL,
    CONSTRAINT passkey_challenges_single_use UNIQUE (challenge),
    UNIQUE (purpose, subject)
);
CREATE INDEX passkey_assertions_by_credential ON passkey_assertions (credential_id);

-- What the signer checks, held again by the schema (as on SQLite). Not
-- SECURITY DEFINER: they only read tables every role may read.
CREATE FUNCTION countersign_passkey_active(credential TEXT, owner TEXT) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM passkeys k
                   WHERE k.credential_id = credential AND k.principal = owner
                     AND NOT EXISTS (SELECT 1 FROM passkey_removals r
                                     WHERE r.credential_id = k.credential_id))
$$;

CREATE FUNCTION countersign_passkey_needs_authority() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorized_by IS DISTINCT FROM 'enrolment-code'
       AND NOT countersign_passkey_active(NEW.authorized_by, NEW.principal) THEN
        RAISE EXCEPTION 'a passkey needs an enrolment code or an enrolled passkey';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER passkeys_need_authority BEFORE INSERT ON passkeys
FOR EACH ROW EXECUTE FUNCTION countersign_passkey_needs_authority();

CREATE FUNCTION countersign_passkey_removal_needs_authority() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.authorized_by IS DISTINCT FROM 'signer-admin'
       AND NOT countersign_passkey_active(
           NEW.authorized_by,
           (SELECT principal FROM passkeys WHERE credential_id = NEW.credential_id)) THEN
        RAISE EXCEPTION 'a passkey removal needs signer-admin or an enrolled passkey';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER passkey_removals_need_authority BEFORE INSERT ON passkey_removals
FOR EACH ROW EXECUTE FUNCTION countersign_passkey_removal_needs_authority();

CREATE FUNCTION countersign_passkey_assertion_needs_subject() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    subject_principal TEXT;
BEGIN
    IF NEW.purpose = 'decision' THEN
        SELECT principal INTO subject_principal FROM issuances WHERE proposal_id = NEW.subject;
    ELSE
        SELECT principal INTO subject_principal FROM passkeys WHERE credential_id = NEW.subject;
    END IF;
    IF subject_principal IS NULL
       OR NOT countersign_passkey_active(NEW.credential_id, subject_principal) THEN
        RAISE EXCEPTION
            'a passkey assertion needs an enrolled passkey and a subject of its principal';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER passkey_assertions_need_subject BEFORE INSERT ON passkey_assertions
FOR EACH ROW EXECUTE FUNCTION countersign_passkey_assertion_needs_subject();

-- Append-only, as every fact table (0001).
DO $$
DECLARE
    guarded TEXT[][] := ARRAY[
        ['passkeys', 'passkeys'],
        ['passkey_removals', 'passkey removals'],
        ['passkey_assertions', 'passkey assertions']
    ];
    i INTEGER;
BEGIN
    FOR i IN 1 .. array_length(guarded, 1) LOOP
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON %I
             FOR EACH ROW EXECUTE FUNCTION countersign_append_only(%L)',
            guarded[i][1] || '_append_only', guarded[i][1], guarded[i][2]);
        EXECUTE format(
            'CREATE TRIGGER %I BEFORE TRUNCATE ON %I
             FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only(%L)',
            guarded[i][1] || '_no_truncate', guarded[i][1], guarded[i][2]);
    END LOOP;
END $$;
