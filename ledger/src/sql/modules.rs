// The queries both backends compile, each under its own dialect macros
// (`locking!`, `db_now!`, `check_joins!`, ...): included by
// `sqlite/mod.rs` and `postgres/mod.rs`, so the list is written once.
#[path = "../sql/batch.rs"]
mod batch;
#[path = "../sql/batch_writes.rs"]
mod batch_writes;
#[path = "../sql/chores.rs"]
mod chores;
#[path = "../sql/challenges.rs"]
mod challenges;
#[path = "../sql/consume.rs"]
mod consume;
#[path = "../sql/effects.rs"]
mod effects;
#[path = "../sql/events.rs"]
mod events;
#[path = "../sql/facts.rs"]
mod facts;
#[path = "../sql/fast_batch.rs"]
mod fast_batch;
#[path = "../sql/intents.rs"]
mod intents;
#[path = "../sql/locks.rs"]
mod locks;
#[path = "../sql/migrate.rs"]
mod migrate;
#[path = "../sql/outbox.rs"]
mod outbox;
#[path = "../sql/passkeys.rs"]
mod passkeys;
#[path = "../sql/policy_sets.rs"]
mod policy_sets;
#[path = "../sql/premise.rs"]
mod premise;
#[path = "../sql/push_devices.rs"]
mod push_devices;
#[path = "../sql/quorum.rs"]
mod quorum;
#[path = "../sql/reissue.rs"]
mod reissue;
#[path = "../sql/resign.rs"]
mod resign;
#[path = "../sql/rows.rs"]
mod rows;
#[path = "../sql/rules.rs"]
mod rules;
#[path = "../sql/signer_keys.rs"]
mod signer_keys;
#[path = "../sql/signer.rs"]
mod signer;
#[path = "../sql/tlog.rs"]
mod tlog;
#[path = "../sql/tlog_audit.rs"]
mod tlog_audit;
#[path = "../sql/witness.rs"]
mod witness;
