-- countersign ledger, SQLite schema version 16: the operator's Cedar
-- policy (issue 51).
--
-- `proposals.policy`: what the policy said of the proposal when it was
--   made, canonical JSON `{"binding": {...}, "shadow": {...}}` (each
--   `{"set", "verdict", "policies", "quorum"?}`, see `ProposalPolicy`);
--   NULL without a policy set. The `proposed` event holds the same object,
--   so the chain commits to it. A decision reads it back: an edit of the
--   policy takes effect for new proposals only.
-- `policy_sets`: the text of every policy set a signer acted on, by the
--   SHA-256 hex of that text, so that whichever signer decides a proposal
--   evaluates it against the set it was proposed under, and anyone can
--   read which policies a digest in the chain names. Insert only.
ALTER TABLE proposals ADD COLUMN policy TEXT;

CREATE TABLE policy_sets (
    digest      TEXT PRIMARY KEY NOT NULL CHECK (length(digest) = 64),
    text        TEXT NOT NULL,
    recorded_at TEXT NOT NULL
) STRICT;
CREATE TRIGGER policy_sets_no_update BEFORE UPDATE ON policy_sets
BEGIN
    SELECT RAISE(ABORT, 'policy sets are append-only');
END;
CREATE TRIGGER policy_sets_no_delete BEFORE DELETE ON policy_sets
BEGIN
    SELECT RAISE(ABORT, 'policy sets are append-only');
END;
-- A digest names one text: a second insert of it is skipped, never a
-- replacement (`INSERT OR REPLACE` included).
CREATE TRIGGER policy_sets_no_replace BEFORE INSERT ON policy_sets
WHEN EXISTS (SELECT 1 FROM policy_sets WHERE digest = NEW.digest)
BEGIN
    SELECT RAISE(IGNORE);
END;
