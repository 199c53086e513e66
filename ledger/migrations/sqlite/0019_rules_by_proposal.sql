-- countersign ledger, SQLite schema version 19: every read of a proposal
-- joins `rules` on `proposal_id` (the rule a person created by approving
-- it), and no index had that column, so each read scanned every version
-- of every rule: 0.7 ms a read with 5 000 versions, on the signer's and
-- every head's path. Version 1 rows are the only ones that name a
-- proposal; the index holds those.
CREATE INDEX rules_by_proposal ON rules (proposal_id) WHERE proposal_id IS NOT NULL;
