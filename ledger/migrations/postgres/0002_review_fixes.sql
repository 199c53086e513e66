-- countersign ledger, PostgreSQL schema version 2: what an adversarial
-- review of version 1 found. The same columns as
-- migrations/sqlite/0002_review_fixes.sql, plus the proof-possession check.

-- An intent records the contract revision its proof was issued under, so
-- reconcile replays an interrupted effect only under the contract a person
-- approved, and until when its head may still be running the effect (its
-- lease: the effect's timeout plus a margin), so neither reconcile nor a
-- person's resolution overtakes a running execution, and which process
-- recorded it (its owner; when that process is known to have exited, the
-- lease holds nobody back). '' on intents written before this version:
-- unknown revision (never replayed), lease expired, owner unknown.
ALTER TABLE intents ADD COLUMN contract_revision TEXT NOT NULL DEFAULT '';
ALTER TABLE intents ADD COLUMN lease_until TEXT NOT NULL DEFAULT '';
ALTER TABLE intents ADD COLUMN owner TEXT NOT NULL DEFAULT '';

-- The state store is keyed by principal: one principal's schedules are
-- invisible to another's effects on a shared ledger. Existing rows go to
-- the principal of the last applied effect that named them.
ALTER TABLE state ADD COLUMN principal TEXT;
UPDATE state s SET principal = COALESCE((
    SELECT t.principal
    FROM events e JOIN intents t ON t.proposal_id = e.proposal_id
    WHERE e.kind = 'effect_applied'
      AND (t.arguments_json::json ->> 'name') = s.key
    ORDER BY e.id DESC LIMIT 1), '');
ALTER TABLE state ALTER COLUMN principal SET NOT NULL;
ALTER TABLE state DROP CONSTRAINT state_pkey;
ALTER TABLE state ADD PRIMARY KEY (principal, namespace, key);

-- Proof possession. The signer stores SHA-256 of the proof's consume key
-- (itself SHA-256 of a domain tag and the proof text, see the verifier's
-- `Proof::consume_key`) with the issuance; a consumed nonce must carry the
-- key, which only a holder of the proof can compute. So the head role,
-- which can read every table, still cannot mark an approved proposal
-- consumed (and through it intended, completed or applied) without the
-- proof the signer issued. The key is checked and then dropped: it is
-- never stored.
ALTER TABLE issuances ADD COLUMN consume_digest TEXT;
ALTER TABLE consumed_nonces ADD COLUMN consume_key TEXT;

CREATE FUNCTION countersign_consumption_needs_proof() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public AS $$
BEGIN
    IF NEW.consume_key IS NULL
       OR NEW.consume_key !~ '^[0-9a-f]{64}$'
       OR NOT EXISTS (
           SELECT 1 FROM issuances i
           WHERE i.nonce = NEW.nonce AND i.proposal_id = NEW.proposal_id
             AND i.consume_digest = encode(sha256(decode(NEW.consume_key, 'hex')), 'hex'))
    THEN
        RAISE EXCEPTION 'a consumption needs the issued proof';
    END IF;
    NEW.consume_key := NULL;
    RETURN NEW;
END $$;
CREATE TRIGGER consumed_nonces_need_proof BEFORE INSERT ON consumed_nonces
FOR EACH ROW EXECUTE FUNCTION countersign_consumption_needs_proof();
