-- countersign ledger, PostgreSQL schema version 18: a handoff re-signed by
-- another signer. The same column and table as
-- migrations/sqlite/0018_resigned_proofs.sql, whose comments say what each
-- holds. Only the signer role writes them (deploy/postgres-roles.sql;
-- re-run it after this migration).
ALTER TABLE issuances ADD COLUMN key_id TEXT;

CREATE TABLE resigned_proofs (
    nonce           TEXT PRIMARY KEY NOT NULL REFERENCES issuances (nonce),
    proposal_id     TEXT NOT NULL UNIQUE REFERENCES issuances (proposal_id),
    proof_sha256    TEXT NOT NULL UNIQUE CHECK (length(proof_sha256) = 64),
    consume_digest  TEXT NOT NULL CHECK (length(consume_digest) = 64),
    key_id          TEXT NOT NULL,
    replaces_key_id TEXT NOT NULL,
    resigned_at     TEXT NOT NULL
);
-- Every proposal read joins this table, and every consumption: where the
-- deployment's roles exist, both may read it from this migration on,
-- before deploy/postgres-roles.sql is run again (which also grants the
-- signer its INSERT).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'countersign_head') THEN
        GRANT SELECT ON resigned_proofs TO countersign_head;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'countersign_signer') THEN
        GRANT SELECT ON resigned_proofs TO countersign_signer;
    END IF;
END $$;
CREATE TRIGGER resigned_proofs_append_only BEFORE UPDATE OR DELETE ON resigned_proofs
FOR EACH ROW EXECUTE FUNCTION countersign_append_only('resigned proofs');
CREATE TRIGGER resigned_proofs_no_truncate BEFORE TRUNCATE ON resigned_proofs
FOR EACH STATEMENT EXECUTE FUNCTION countersign_append_only('resigned proofs');

-- Of the issuance it names, before its nonce is consumed. SECURITY
-- DEFINER: it reads consumed_nonces whatever the inserting role may read.
CREATE FUNCTION countersign_resigned_proof_needs_issuance() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NOT EXISTS (
           SELECT 1 FROM issuances i
           WHERE i.nonce = NEW.nonce AND i.proposal_id = NEW.proposal_id
             AND i.proof_sha256 <> NEW.proof_sha256)
       OR EXISTS (SELECT 1 FROM consumed_nonces n WHERE n.nonce = NEW.nonce)
    THEN
        RAISE EXCEPTION 'a resigned proof needs its unconsumed issuance';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER resigned_proofs_of_a_live_issuance BEFORE INSERT ON resigned_proofs
FOR EACH ROW EXECUTE FUNCTION countersign_resigned_proof_needs_issuance();

-- Proof possession (schema version 2), now of either proof of the nonce:
-- the issued one, or the one another signer signed again for it.
CREATE OR REPLACE FUNCTION countersign_consumption_needs_proof() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
DECLARE
    digest TEXT;
BEGIN
    IF NEW.consume_key IS NULL OR NEW.consume_key !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION 'a consumption needs the issued proof';
    END IF;
    digest := encode(sha256(decode(NEW.consume_key, 'hex')), 'hex');
    IF NOT EXISTS (
           SELECT 1 FROM issuances i
           WHERE i.nonce = NEW.nonce AND i.proposal_id = NEW.proposal_id
             AND i.consume_digest = digest)
       AND NOT EXISTS (
           SELECT 1 FROM resigned_proofs r
           WHERE r.nonce = NEW.nonce AND r.proposal_id = NEW.proposal_id
             AND r.consume_digest = digest)
    THEN
        RAISE EXCEPTION 'a consumption needs the issued proof';
    END IF;
    NEW.consume_key := NULL;
    RETURN NEW;
END $$;
