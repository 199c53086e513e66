-- countersign on PostgreSQL: separate roles for the signer and the heads.
--
-- Run as the owner of the ledger's tables (the role whose URL first opened
-- the ledger and so applied the migrations), in the ledger's database:
--
--     psql "postgres://owner@db.example/countersign" -f deploy/postgres-roles.sql
--
-- then give the signer `postgres://countersign_signer:...@.../countersign`
-- and every head `postgres://countersign_head:...@.../countersign` as
-- `[ledger] url`, and set passwords (`\password countersign_head`) or
-- certificate authentication in pg_hba.conf. Re-running it is harmless.
--
-- What each role may write (everything else is refused by privilege):
--   signer: proposals, decisions, issuances, revocations, events,
--           completions that record a person's resolution, passkeys
--           (enrolments, removals and the assertions it accepted), and
--           quorum decisions (each approver's approval or denial),
--           auto-approval rules (their versions and each use), and the
--           notification outbox (insert, and delete on acknowledgement),
--           and the transparency log (it sequences events into the tree
--           and stores the checkpoints its log key signed), and the
--           witnesses' cosignatures with the witnessing client's state,
--           and its open decision state (passkey challenges and enrolment
--           code hashes: insert and delete; the head role cannot even
--           read them)
--   head:   consumed_nonces, intents, completions, effect_applied, events,
--           and the builtin effects' state store, and the witnesses'
--           cosignatures with the witnessing client's state (it runs
--           beside the heads, never in the signer)
-- So a head cannot mint an issuance, change a proposal's canonical
-- arguments or a decision, record a quorum approval, enrol a passkey or
-- record an assertion, create, widen or count a rule, and the signer
-- cannot consume a proof.
--
-- Grants are per table: re-run this script after a migration adds tables
-- (schema version 3 adds the passkey tables, version 4 the rule tables:
-- the head role must be able to read `rules` and `rule_uses`, since its
-- consume transaction refuses a proof whose rule was revoked; version 5
-- `quorum_decisions` and `quorum_passkey_assertions`; version 8 the
-- per-principal chain heads and the sequence event ids are drawn from;
-- version 9 the notification outbox; version 12 the transparency log;
-- version 13 the witnesses' cosignatures; version 14 the signer's open
-- decision state; version 15 chore leases, checkpointed heads and the
-- signers' published keys).
--
-- Independent of roles, the schema's triggers make every table except
-- `state` and the bookkeeping of version 15 (`chore_leases`,
-- `checkpointed_heads`, `signer_keys`, none of them a record: every
-- change that matters is also an event) append-only for everybody, the owner included (no UPDATE, DELETE
-- or TRUNCATE of events, proposals, decisions, issuances, ...), and the
-- chain heads move only by the SECURITY DEFINER trigger of an event insert
-- (a chain's head is locked, and created if new, by the SECURITY DEFINER
-- function `countersign_lock_chain`; no role may write `chain_heads`).
--
-- Why both roles get UPDATE on one column of `proposals`: PostgreSQL
-- requires an UPDATE privilege for `SELECT ... FOR UPDATE`, the row lock
-- that serializes consumption and revocation. The append-only trigger
-- refuses every UPDATE of `proposals`.

DO $$
BEGIN
    BEGIN
        CREATE ROLE countersign_signer LOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    BEGIN
        CREATE ROLE countersign_head LOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END;
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO countersign_signer, countersign_head',
                   current_database());
END $$;

GRANT USAGE ON SCHEMA public TO countersign_signer, countersign_head;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM countersign_signer, countersign_head;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO countersign_signer, countersign_head;

-- Row locks (see above).
GRANT UPDATE (id) ON proposals TO countersign_signer, countersign_head;
-- The signer compares a passkey's signature counter under the credential's
-- row lock (`SELECT ... FOR UPDATE`), so that two signers cannot both
-- accept a counter that does not increase; the append-only trigger
-- refuses every UPDATE of `passkeys`.
GRANT UPDATE (credential_id) ON passkeys TO countersign_signer;

-- Both roles append events; their ids come from this sequence.
GRANT USAGE ON SEQUENCE events_id_seq TO countersign_signer, countersign_head;

-- The signer: proposals, decisions, issuances and revocations.
GRANT INSERT ON proposals, decisions, issuances, revocations, events TO countersign_signer;

-- A person's resolution of an uncertain execution goes through the signer
-- (ResolveUncertain, approver role): it records the completion.
GRANT INSERT ON completions TO countersign_signer;

-- Passkeys: only the signer verifies WebAuthn assertions, so only it
-- records credentials, their removal and the assertions it accepted.
GRANT INSERT ON passkeys, passkey_removals, passkey_assertions TO countersign_signer;

-- The notification outbox: the signer records what the notify process
-- should tell a person, and deletes a row when the notify process
-- acknowledges it (the only table any role deletes from; it is no record
-- of anything, see migrations/*/0009_notification_outbox.sql).
GRANT INSERT, DELETE ON notification_outbox TO countersign_signer;

-- Quorum decisions: only the signer checks an approver's certificate, so
-- only it records an approver's approval or denial of a quorum proposal.
GRANT INSERT ON quorum_decisions, quorum_passkey_assertions TO countersign_signer;
-- Rules: only the signer, after a person's decision through an approver
-- interface, creates, revises or revokes a rule, and counts its uses.
GRANT INSERT ON rules, rule_uses TO countersign_signer;
-- Policy sets (schema version 16): the signer records the text of each
-- Cedar policy set it evaluates a proposal under, by its digest.
GRANT INSERT ON policy_sets TO countersign_signer;
-- Web Push devices (schema version 17): the signer records and forgets
-- the devices of the consoles' sessions, and deletes those whose session
-- ended (`SetPushDevices`). A subscription reaches a person's device and
-- nothing a head needs: the head role may not even read them.
GRANT INSERT, UPDATE, DELETE ON push_devices TO countersign_signer;
REVOKE ALL ON push_devices FROM countersign_head;
-- Resigned proofs (schema version 18): the signer records the hash and
-- consume digest of a handoff it signed again after the signer that
-- issued it was lost. A head reads them to consume that proof.
GRANT INSERT ON resigned_proofs TO countersign_signer;

-- The transparency log (schema version 12): only the signer sequences
-- events into the tree (leaves, the compact tree, the queue it empties)
-- and stores signed checkpoints. An event insert, by either role, queues
-- its event through a SECURITY DEFINER trigger, so no role inserts into
-- `tlog_pending` itself.
GRANT INSERT ON tlog_leaves, tlog_nodes, tlog_checkpoints TO countersign_signer;
GRANT UPDATE ON tlog_tree TO countersign_signer;
GRANT DELETE ON tlog_pending TO countersign_signer;

-- The witnesses' cosignatures (schema version 13): the witnessing client
-- runs in `countersign up` or `countersign witness serve`, never in the
-- signer process (which makes no outbound connection), with the ledger URL
-- of the home it runs in: a head's, or the signer user's. It stores each
-- witness's cosignature (append-only; checked over the stored checkpoint
-- before it is written and again when read, so a row under a key no
-- policy trusts proves nothing) and its per-witness queue state, and
-- records gap and rollback events (both roles insert events).
GRANT INSERT ON tlog_cosignatures TO countersign_signer, countersign_head;
GRANT INSERT, UPDATE ON tlog_witnesses TO countersign_signer, countersign_head;

-- The signer's open decision state (schema version 14): the passkey
-- challenges it issued and not yet saw answered, taken (deleted) by the
-- write that records the answer, and each approver's enrolment code (its
-- SHA-256), deleted when redeemed. No record of anything (rows are
-- deleted, never updated), and nothing a head needs: the head role may
-- not even read them.
GRANT INSERT, DELETE ON passkey_challenges, enrolment_codes TO countersign_signer;
REVOKE ALL ON passkey_challenges, enrolment_codes FROM countersign_head;

-- Two signers (schema version 15): only a signer writes checkpoints (and
-- the chains' heads they named) and publishes its proof keys. A chore's
-- lease is taken by a signer (the checkpoints) or by the witnessing
-- client, which runs with a head's ledger URL too.
GRANT INSERT, UPDATE ON checkpointed_heads, signer_keys TO countersign_signer;
GRANT INSERT, UPDATE ON chore_leases TO countersign_signer, countersign_head;

-- The heads: consumption, completion, builtin effects.
GRANT INSERT ON consumed_nonces, intents, completions, effect_applied, events
    TO countersign_head;
GRANT INSERT, UPDATE, DELETE ON state TO countersign_head;
