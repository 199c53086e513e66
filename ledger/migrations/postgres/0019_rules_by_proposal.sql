-- countersign ledger, PostgreSQL schema version 19: the index on
-- `rules (proposal_id)` that every read of a proposal joins on. The same
-- index as migrations/sqlite/0019_rules_by_proposal.sql, whose comment
-- says why.
CREATE INDEX rules_by_proposal ON rules (proposal_id) WHERE proposal_id IS NOT NULL;
