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

-- A quorum approver's passkey assertion, on an operation that needs one:
-- each approval's own (the M-th's is also stored in passkey_assertions with
-- the issuance), so `audit --verify` can recheck every approver's. The
-- columns are passkey_assertions' (0003); the subject is the proposal, the
-- challenge derived from its digest with the proposing session.
CREATE TABLE quorum_passkey_assertions (
    proposal_id        TEXT NOT NULL,
    approver           TEXT NOT NULL,
    credential_id      TEXT NOT NULL REFERENCES passkeys (credential_id),
    challenge          TEXT NOT NULL UNIQUE,
    challenge_random   TEXT NOT NULL,
    delivery           TEXT NOT NULL CHECK (delivery IN ('direct', 'handoff')),
    authenticator_data TEXT NOT NULL,
    client_data_json   TEXT NOT NULL,
    signature          TEXT NOT NULL,
    sign_count         INTEGER NOT NULL CHECK (sign_count BETWEEN 0 AND 4294967295),
    at                 TEXT NOT NULL,
    PRIMARY KEY (proposal_id, approver),
    FOREIGN KEY (proposal_id, approver) REFERENCES quorum_decisions (proposal_id, approver)
) STRICT;
CREATE INDEX quorum_passkey_assertions_by_credential
    ON quorum_passkey_assertions (credential_id);

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

-- An approver's assertion comes from an enrolled, unremoved passkey of the
-- proposal's principal that this approver enrolled.
CREATE TRIGGER quorum_passkey_assertions_need_own_passkey
BEFORE INSERT ON quorum_passkey_assertions
WHEN NOT EXISTS (SELECT 1 FROM passkeys k
                 WHERE k.credential_id = NEW.credential_id
                   AND k.enrolled_by = NEW.approver
                   AND k.principal = (SELECT principal FROM proposals WHERE id = NEW.proposal_id)
                   AND NOT EXISTS (SELECT 1 FROM passkey_removals r
                                   WHERE r.credential_id = k.credential_id))
BEGIN
    SELECT RAISE(ABORT, 'a quorum passkey assertion needs an active passkey the approver enrolled');
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

CREATE TRIGGER quorum_passkey_assertions_no_update BEFORE UPDATE ON quorum_passkey_assertions
BEGIN
    SELECT RAISE(ABORT, 'quorum passkey assertions are append-only');
END;
CREATE TRIGGER quorum_passkey_assertions_no_delete BEFORE DELETE ON quorum_passkey_assertions
BEGIN
    SELECT RAISE(ABORT, 'quorum passkey assertions are append-only');
END;
CREATE TRIGGER quorum_passkey_assertions_no_replace BEFORE INSERT ON quorum_passkey_assertions
WHEN EXISTS (SELECT 1 FROM quorum_passkey_assertions
             WHERE (proposal_id = NEW.proposal_id AND approver = NEW.approver)
                OR challenge = NEW.challenge)
BEGIN
    SELECT RAISE(ABORT, 'quorum passkey assertions are append-only: the key exists');
END;
