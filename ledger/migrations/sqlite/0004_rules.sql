-- countersign ledger, SQLite schema version 4: auto-approval rules.
--
-- A rule lets the signer approve proposals inside a scope a person set
-- (operations, argument constraints, sessions) up to a number of uses, a
-- rate per hour and an expiry. Only the signer writes these tables, and
-- only after a person created or changed the rule through an approver
-- interface.
--
-- `rules` holds every version of every rule, append-only: creation is
-- version 1, each revision and the revocation one more. The live version
-- is the latest, if its status is `active` and it has not expired; a
-- revoked rule takes no further version. `definition` is the canonical
-- JSON a person saw (its SHA-256 beside it); `max_uses`, `per_hour` and
-- `expires_at` are read from it, and kept as columns so that the
-- transaction that counts a use reads them without parsing JSON.
-- `changed_by`: the approver who made this version (`<principal>` or
-- `<principal>/<name>`); `reason`: why it was revoked, else ''.
-- `proposal_id`: on version 1 of a rule a person created by approving a
-- model's `rule.create` proposal, that proposal (whose canonical
-- arguments are the definition); NULL otherwise.
CREATE TABLE rules (
    id                TEXT NOT NULL,
    version           INTEGER NOT NULL CHECK (version >= 1),
    principal         TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    definition        TEXT NOT NULL,
    definition_sha256 TEXT NOT NULL,
    max_uses          INTEGER NOT NULL CHECK (max_uses >= 1),
    per_hour          INTEGER NOT NULL CHECK (per_hour >= 1),
    expires_at        TEXT NOT NULL,
    changed_by        TEXT NOT NULL,
    changed_at        TEXT NOT NULL,
    reason            TEXT NOT NULL,
    proposal_id       TEXT REFERENCES proposals (id),
    PRIMARY KEY (id, version)
) STRICT;
CREATE INDEX rules_by_principal ON rules (principal, id);

-- Versions follow each other: 1 (active) for a new id, otherwise exactly
-- one more than an active version of the same principal.
CREATE TRIGGER rules_versions_follow BEFORE INSERT ON rules
WHEN NOT ((NEW.version = 1 AND NEW.status = 'active'
           AND NOT EXISTS (SELECT 1 FROM rules WHERE id = NEW.id))
          OR EXISTS (SELECT 1 FROM rules r
                     WHERE r.id = NEW.id AND r.version = NEW.version - 1
                       AND r.principal = NEW.principal AND r.status = 'active'))
BEGIN
    SELECT RAISE(ABORT, 'a rule version must follow its live version');
END;

-- One row per proof issued under a rule: the proposal, the rule version it
-- was issued under (the proof's `grant`) and when. Written in the
-- approval's own transaction, which counts the uses and the last hour's
-- uses before it writes, so concurrent approvals never exceed either.
CREATE TABLE rule_uses (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES issuances (proposal_id),
    rule_id     TEXT NOT NULL,
    version     INTEGER NOT NULL,
    principal   TEXT NOT NULL,
    used_at     TEXT NOT NULL,
    FOREIGN KEY (rule_id, version) REFERENCES rules (id, version)
) STRICT;
CREATE INDEX rule_uses_by_rule ON rule_uses (rule_id, used_at);

-- A use names exactly the rule version its issuance's provenance names,
-- of the same principal.
CREATE TRIGGER rule_uses_need_a_rule_issuance BEFORE INSERT ON rule_uses
WHEN (SELECT provenance FROM issuances WHERE proposal_id = NEW.proposal_id)
         IS NOT ('rule:' || NEW.rule_id || '@' || NEW.version)
  OR (SELECT principal FROM issuances WHERE proposal_id = NEW.proposal_id) IS NOT NEW.principal
  OR (SELECT principal FROM rules WHERE id = NEW.rule_id AND version = NEW.version)
         IS NOT NEW.principal
BEGIN
    SELECT RAISE(ABORT, 'a rule use needs an issuance under that rule version');
END;

-- Append-only, as every fact table (0001), and no `INSERT OR REPLACE` (0002).
CREATE TRIGGER rules_no_update BEFORE UPDATE ON rules
BEGIN
    SELECT RAISE(ABORT, 'rules are append-only');
END;
CREATE TRIGGER rules_no_delete BEFORE DELETE ON rules
BEGIN
    SELECT RAISE(ABORT, 'rules are append-only');
END;
CREATE TRIGGER rules_no_replace BEFORE INSERT ON rules
WHEN EXISTS (SELECT 1 FROM rules WHERE id = NEW.id AND version = NEW.version)
BEGIN
    SELECT RAISE(ABORT, 'rules are append-only: the key exists');
END;
CREATE TRIGGER rule_uses_no_update BEFORE UPDATE ON rule_uses
BEGIN
    SELECT RAISE(ABORT, 'rule uses are append-only');
END;
CREATE TRIGGER rule_uses_no_delete BEFORE DELETE ON rule_uses
BEGIN
    SELECT RAISE(ABORT, 'rule uses are append-only');
END;
CREATE TRIGGER rule_uses_no_replace BEFORE INSERT ON rule_uses
WHEN EXISTS (SELECT 1 FROM rule_uses WHERE proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'rule uses are append-only: the key exists');
END;
