-- countersign ledger, PostgreSQL schema version 4: auto-approval rules.
-- The same tables and columns as migrations/sqlite/0004_rules.sql, whose
-- comments say what each holds and why. Only the signer role may insert
-- into them (deploy/postgres-roles.sql; re-run it after this migration,
-- since it grants per table); the head role only reads them (the consume
-- transaction checks that a rule is live at the version a proof names).

CREATE TABLE rules (
    id                TEXT NOT NULL,
    version           BIGINT NOT NULL CHECK (version >= 1),
    principal         TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
    definition        TEXT NOT NULL,
    definition_sha256 TEXT NOT NULL,
    max_uses          BIGINT NOT NULL CHECK (max_uses >= 1),
    per_hour          BIGINT NOT NULL CHECK (per_hour >= 1),
    expires_at        TEXT NOT NULL,
    changed_by        TEXT NOT NULL,
    changed_at        TEXT NOT NULL,
    reason            TEXT NOT NULL,
    proposal_id       TEXT REFERENCES proposals (id),
    PRIMARY KEY (id, version)
);
CREATE INDEX rules_by_principal ON rules (principal, id);

CREATE FUNCTION countersign_rules_versions_follow() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT ((NEW.version = 1 AND NEW.status = 'active'
             AND NOT EXISTS (SELECT 1 FROM rules WHERE id = NEW.id))
            OR EXISTS (SELECT 1 FROM rules r
                       WHERE r.id = NEW.id AND r.version = NEW.version - 1
                         AND r.principal = NEW.principal AND r.status = 'active')) THEN
        RAISE EXCEPTION 'a rule version must follow its live version';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rules_versions_follow BEFORE INSERT ON rules
FOR EACH ROW EXECUTE FUNCTION countersign_rules_versions_follow();

CREATE TABLE rule_uses (
    proposal_id TEXT PRIMARY KEY NOT NULL REFERENCES issuances (proposal_id),
    rule_id     TEXT NOT NULL,
    version     BIGINT NOT NULL,
    principal   TEXT NOT NULL,
    used_at     TEXT NOT NULL,
    FOREIGN KEY (rule_id, version) REFERENCES rules (id, version)
);
CREATE INDEX rule_uses_by_rule ON rule_uses (rule_id, used_at);

CREATE FUNCTION countersign_rule_uses_need_a_rule_issuance() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT provenance FROM issuances WHERE proposal_id = NEW.proposal_id)
           IS DISTINCT FROM ('rule:' || NEW.rule_id || '@' || NEW.version)
       OR (SELECT principal FROM issuances WHERE proposal_id = NEW.proposal_id)
           IS DISTINCT FROM NEW.principal
       OR (SELECT principal FROM rules WHERE id = NEW.rule_id AND version = NEW.version)
           IS DISTINCT FROM NEW.principal THEN
        RAISE EXCEPTION 'a rule use needs an issuance under that rule version';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER rule_uses_need_a_rule_issuance BEFORE INSERT ON rule_uses
FOR EACH ROW EXECUTE FUNCTION countersign_rule_uses_need_a_rule_issuance();

-- Append-only, as every fact table (0001).
DO $$
DECLARE
    guarded TEXT[][] := ARRAY[
        ['rules', 'rules'],
        ['rule_uses', 'rule uses']
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
