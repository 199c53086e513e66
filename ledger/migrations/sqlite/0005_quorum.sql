-- countersign ledger, SQLite schema version 5: quorum decisions. An
-- operation may require M approvals out of N named approvers (`quorum` in
-- the registry, part of its contract revision). Each approver's decision on
-- such a proposal is a row here, written by the signer under the
-- proposal's lock with its chained event (`quorum_approved`, or `denied`
-- naming the approver); the M-th approval writes the approve decision and
-- the issuance in the same transaction. Only the signer writes this table.
--
-- `approver`: `<principal>/<name>`, the named approver certificate that
-- decided. `seq`: the decision's place among the proposal's decisions
-- (1, 2, ...), so two approvers deciding at the same instant can never
-- both be the M-th. `required`: the quorum's M as the signer read it from
-- the contract. `passkey`: the credential of the approver's passkey
-- assertion, when one authorized the approval.
CREATE TABLE quorum_decisions (
    proposal_id TEXT NOT NULL REFERENCES proposals (id),
    approver    TEXT NOT NULL,
    seq         INTEGER NOT NULL CHECK (seq BETWEEN 1 AND 16),
    required    INTEGER NOT NULL CHECK (required BETWEEN 1 AND 16),
    decision    TEXT NOT NULL CHECK (decision IN ('approve', 'deny')),
    reason      TEXT CHECK ((decision = 'deny') = (reason IS NOT NULL)),
    passkey     TEXT,
    decided_at  TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver),
    UNIQUE (proposal_id, seq)
) STRICT;

-- What the signer checks, held again by the schema: a quorum decision is
-- made by an approver of the proposal's own principal, on a proposal not
-- yet decided, at the next place; and a proposal with quorum decisions is
-- approved (so issued) only when its approvals reach the required count.
CREATE TRIGGER quorum_decisions_need_pending BEFORE INSERT ON quorum_decisions
WHEN substr(NEW.approver, 1, length((SELECT principal FROM proposals WHERE id = NEW.proposal_id)) + 1)
     IS NOT (SELECT principal FROM proposals WHERE id = NEW.proposal_id) || '/'
  OR EXISTS (SELECT 1 FROM decisions WHERE proposal_id = NEW.proposal_id)
  OR NEW.seq IS NOT 1 + (SELECT count(*) FROM quorum_decisions WHERE proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'a quorum decision needs a pending proposal of its principal, in order');
END;

CREATE TRIGGER decisions_need_quorum BEFORE INSERT ON decisions
WHEN NEW.decision = 'approve'
 AND EXISTS (SELECT 1 FROM quorum_decisions WHERE proposal_id = NEW.proposal_id)
 AND (SELECT count(*) FROM quorum_decisions
      WHERE proposal_id = NEW.proposal_id AND decision = 'approve')
     IS NOT (SELECT max(required) FROM quorum_decisions WHERE proposal_id = NEW.proposal_id)
BEGIN
    SELECT RAISE(ABORT, 'a quorum proposal is approved only by its required approvals');
END;

-- Append-only, as every fact table (0001), and no `INSERT OR REPLACE` (0002).
CREATE TRIGGER quorum_decisions_no_update BEFORE UPDATE ON quorum_decisions
BEGIN
    SELECT RAISE(ABORT, 'quorum decisions are append-only');
END;
CREATE TRIGGER quorum_decisions_no_delete BEFORE DELETE ON quorum_decisions
BEGIN
    SELECT RAISE(ABORT, 'quorum decisions are append-only');
END;
CREATE TRIGGER quorum_decisions_no_replace BEFORE INSERT ON quorum_decisions
WHEN EXISTS (SELECT 1 FROM quorum_decisions
             WHERE proposal_id = NEW.proposal_id
               AND (approver = NEW.approver OR seq = NEW.seq))
BEGIN
    SELECT RAISE(ABORT, 'quorum decisions are append-only: the key exists');
END;
