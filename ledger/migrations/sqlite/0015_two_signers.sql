-- countersign ledger, SQLite schema version 15: what a second signer of
-- the same ledger would need, kept here rather than in one signer's
-- memory. (A SQLite ledger has one signer, but the schema is the same on
-- both backends.) None of these tables is evidence: every change that
-- matters is also an event.
--
-- `checkpointed_heads`: each chain's head as the latest `checkpoint` event
--   on the global chain named it (`count` events, the last one's `hash`).
--   The next checkpoint names the chains whose head moved since; it writes
--   its event and these rows in one transaction under the global chain's
--   lock, so whichever signer writes it, no chain is named twice for one
--   head or missed.
-- `chore_leases`: who runs a chore that must run once per ledger (the
--   checkpoints and the transparency log's signing; the witnessing
--   client's sending): the `holder` (a random id of one process, with its
--   host name for people) until `expires_at`, and the fencing `token`,
--   raised by one each time another holder takes the chore. Every write
--   of the chore checks, in its own transaction, that the token is still
--   the one it took, so a holder that was paused past its lease and
--   resumes writes nothing.
-- `signer_keys`: the proof keys each signer of this ledger publishes
--   (`kid`, the PASERK public key, `status` as in its key index, the
--   `signer` that holds it, by host name), so that every signer serves
--   the whole key set and a head verifies the proofs of either. A key
--   retired here stays retired: no signer publishes it again.
CREATE TABLE checkpointed_heads (
    chain TEXT PRIMARY KEY NOT NULL,
    count INTEGER NOT NULL CHECK (count > 0),
    hash  TEXT NOT NULL
) STRICT;

CREATE TABLE chore_leases (
    chore      TEXT PRIMARY KEY NOT NULL,
    holder     TEXT NOT NULL,
    token      INTEGER NOT NULL CHECK (token > 0),
    expires_at TEXT NOT NULL
) STRICT;

CREATE TABLE signer_keys (
    kid        TEXT PRIMARY KEY NOT NULL,
    public_key TEXT NOT NULL UNIQUE,
    status     TEXT NOT NULL CHECK (status IN ('active', 'verifying', 'retired')),
    signer     TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE TRIGGER signer_keys_stay_retired BEFORE UPDATE ON signer_keys
WHEN OLD.status = 'retired' AND NEW.status <> 'retired'
BEGIN
    SELECT RAISE(ABORT, 'a retired signer key is never published again');
END;
