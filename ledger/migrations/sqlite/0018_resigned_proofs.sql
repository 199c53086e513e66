-- countersign ledger, SQLite schema version 18: a handoff re-signed by
-- another signer (issue 50).
--
-- `issuances.key_id`: the id of the key that signed the issued proof (its
--   footer's `kid`); NULL for issuances recorded before this version.
-- `resigned_proofs`: an approval waiting for a head, whose proof the
--   signer that issued it still held in memory when it was lost, signed
--   again by another signer of the ledger under its own key: the same
--   claims (nonce, lifetime, binding), another signature, so another
--   SHA-256 and consume-key digest, which a consumption of that nonce may
--   present instead of the issuance's. At most one per nonce, never after
--   the nonce is consumed, and never the proof itself. Only PostgreSQL
--   ledgers hold rows: a signer refuses to re-sign on SQLite, whose file
--   its owner can write (the table exists so that both backends share one
--   schema and one consumption statement). Insert only.
ALTER TABLE issuances ADD COLUMN key_id TEXT;

CREATE TABLE resigned_proofs (
    nonce           TEXT PRIMARY KEY NOT NULL REFERENCES issuances (nonce),
    proposal_id     TEXT NOT NULL UNIQUE REFERENCES issuances (proposal_id),
    proof_sha256    TEXT NOT NULL UNIQUE CHECK (length(proof_sha256) = 64),
    consume_digest  TEXT NOT NULL CHECK (length(consume_digest) = 64),
    key_id          TEXT NOT NULL,
    replaces_key_id TEXT NOT NULL,
    resigned_at     TEXT NOT NULL
) STRICT;
CREATE TRIGGER resigned_proofs_no_update BEFORE UPDATE ON resigned_proofs
BEGIN
    SELECT RAISE(ABORT, 'resigned proofs are append-only');
END;
CREATE TRIGGER resigned_proofs_no_delete BEFORE DELETE ON resigned_proofs
BEGIN
    SELECT RAISE(ABORT, 'resigned proofs are append-only');
END;
CREATE TRIGGER resigned_proofs_no_replace BEFORE INSERT ON resigned_proofs
WHEN EXISTS (SELECT 1 FROM resigned_proofs WHERE nonce = NEW.nonce
             OR proposal_id = NEW.proposal_id OR proof_sha256 = NEW.proof_sha256)
BEGIN
    SELECT RAISE(ABORT, 'resigned proofs are append-only: the key exists');
END;
-- Of the issuance it names, before its nonce is consumed.
CREATE TRIGGER resigned_proofs_of_a_live_issuance BEFORE INSERT ON resigned_proofs
WHEN NOT EXISTS (SELECT 1 FROM issuances i
                 WHERE i.nonce = NEW.nonce AND i.proposal_id = NEW.proposal_id
                   AND i.proof_sha256 <> NEW.proof_sha256)
  OR EXISTS (SELECT 1 FROM consumed_nonces n WHERE n.nonce = NEW.nonce)
BEGIN
    SELECT RAISE(ABORT, 'a resigned proof needs its unconsumed issuance');
END;
