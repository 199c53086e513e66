//! `countersign audit --verify` checks the transparency log too, on both
//! backends: the tree's size and the latest signed checkpoint, verified
//! under the log keys the signer publishes (or those given with
//! `--log-key`, a retired key's checkpoint included), and an edited event
//! named by its leaf index.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use countersign::CliError;
use countersign_signer::log_checkpoint::sign_new_checkpoint;
use countersign_signer::note_keys::Ed25519Signer;
use countersign_tlog::KeyName;
use sqlx::Connection as _;
use support::{Backend, CREATE_NIGHTLY, Harness};

/// Run `sql` on a raw connection to the harness's ledger.
async fn raw(h: &Harness, sql: &[&str]) {
    match &h.pg {
        Some(db) => {
            let mut conn = sqlx::PgConnection::connect(db.url()).await.unwrap();
            for s in sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string()))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            conn.close().await.unwrap();
        }
        None => {
            let path = h.signer.home().ledger_path();
            let url = format!("sqlite://{}", path.display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            for s in sql {
                sqlx::raw_sql(sqlx::AssertSqlSafe(s.to_string()))
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            conn.close().await.unwrap();
        }
    }
}

async fn reports_the_tree_and_names_the_leaf_of_an_edited_event(backend: Backend) {
    let h = Harness::start_on(backend, countersign_registry::Registry::default_toml()).await;
    h.propose("schedule.create", CREATE_NIGHTLY).await;
    h.propose("schedule.create", CREATE_NIGHTLY).await;

    // Nothing sequenced yet: the events are counted as pending.
    let before = h.cli(&["audit", "--verify"]).await;
    assert_eq!(before.result, Ok(()), "{}", before.stdout);
    let line = before.stdout.lines().nth(1).unwrap();
    assert!(
        line.starts_with("tree: 0 leaves (2 more not yet sequenced), root ")
            && line.ends_with(", no signed checkpoint yet"),
        "{line}"
    );

    let key = h.signer.state().log_key().unwrap();
    let signed = sign_new_checkpoint(h.ledger(), key).await.unwrap().unwrap();
    let vkey = key.verifier_key();
    let keys = h.cli(&["keys", "list"]).await;
    assert!(
        keys.stdout
            .contains(&format!("log key (checkpoints)  {vkey}\n")),
        "{}",
        keys.stdout
    );

    let audit = h.cli(&["audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
    assert_eq!(
        audit.stdout.lines().nth(1).unwrap(),
        format!(
            "tree: 2 leaves, root {}, latest checkpoint size 2 signed {}, signature verified ({}+{})",
            signed.root,
            signed.signed_at,
            vkey.name(),
            vkey.id()
        )
    );
    let json = h.cli(&["--json", "audit", "--verify"]).await.json();
    assert_eq!(json["tree"]["intact"], true);
    assert_eq!(json["tree"]["size"], 2);
    assert_eq!(json["tree"]["signature"]["log_key"], vkey.to_string());

    // A key of the same origin that did not sign it: refused.
    let other = Ed25519Signer::from_seed(KeyName::new(vkey.name().as_str()).unwrap(), &[9; 32]);
    let other = other.verifier_key().to_string();
    let refused = h
        .cli(&["audit", "--verify", "--log-key", other.as_str()])
        .await;
    assert_eq!(
        refused.result,
        Err(CliError::Error(
            "the audit trail has been tampered with".into()
        ))
    );
    assert_eq!(
        refused.stdout.lines().nth(1).unwrap(),
        "TAMPERED tree: the checkpoint of size 2 is not validly signed: the checkpoint is not signed by the log's key"
    );

    // An edited event: the chains name its row, the tree its leaf.
    let events = h.ledger().events().await.unwrap();
    let edited = &events[1];
    let leaf = h
        .ledger()
        .leaf_of_event(&edited.chain, edited.seq)
        .await
        .unwrap()
        .unwrap();
    let unguard = match backend {
        Backend::Sqlite => "DROP TRIGGER events_no_update",
        Backend::Postgres => "ALTER TABLE events DISABLE TRIGGER events_append_only",
    };
    let edit = format!(
        "UPDATE events SET actor = 'someone else' WHERE id = {}",
        edited.id
    );
    raw(&h, &[unguard, &edit]).await;
    let tampered = h.cli(&["audit", "--verify"]).await;
    assert_eq!(
        tampered.result,
        Err(CliError::Error(
            "the audit trail has been tampered with".into()
        ))
    );
    assert_eq!(
        tampered.stdout.lines().nth(1).unwrap(),
        format!(
            "TAMPERED tree: the event of leaf {leaf} (event {}) was edited",
            edited.id
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_tree_and_names_the_leaf_of_an_edited_event_on_sqlite() {
    reports_the_tree_and_names_the_leaf_of_an_edited_event(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_the_tree_and_names_the_leaf_of_an_edited_event_on_postgres() {
    reports_the_tree_and_names_the_leaf_of_an_edited_event(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_signer_stopped_the_signature_is_checked_only_with_log_key() {
    let mut h = Harness::start().await;
    h.propose("schedule.create", CREATE_NIGHTLY).await;
    let vkey = h.signer.state().log_key().unwrap().verifier_key();
    // Stopping signs the tree (the proposal and the chains' checkpoint).
    h.signer.halt().await.unwrap();
    let latest = h.ledger().latest_log_checkpoint().await.unwrap().unwrap();
    assert_eq!(latest.size, 2);

    let unchecked = h.cli(&["audit", "--verify"]).await;
    assert_eq!(unchecked.result, Ok(()), "{}", unchecked.stdout);
    let line = unchecked.stdout.lines().nth(1).unwrap();
    assert!(
        line.starts_with(&format!(
            "tree: 2 leaves, root {}, latest checkpoint size 2 signed {}, signature NOT checked: the signer did not answer (",
            latest.root, latest.signed_at
        )) && line.ends_with("): pass --log-key"),
        "{line}"
    );
    let given = vkey.to_string();
    let checked = h
        .cli(&["audit", "--verify", "--log-key", given.as_str()])
        .await;
    assert_eq!(checked.result, Ok(()), "{}", checked.stdout);
    assert!(
        checked.stdout.lines().nth(1).unwrap().ends_with(&format!(
            "signature verified ({}+{})",
            vkey.name(),
            vkey.id()
        )),
        "{}",
        checked.stdout
    );
}

/// After `countersign-signer log-key rotate`, the latest checkpoint may be
/// one the retired key signed: it verifies under whichever of the given
/// keys signed it, and under the new key alone it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_of_a_retired_log_key_verifies_under_the_keys_given() {
    let mut h = Harness::start().await;
    h.propose("schedule.create", CREATE_NIGHTLY).await;
    let (old, new) =
        countersign_signer::log_key::rotate(&h.signer.home().signer_dir(), h.signer.principal())
            .unwrap();
    // The running signer signs with the key it started with: the old one.
    assert_eq!(h.signer.state().log_key().unwrap().verifier_key(), old);
    h.signer.halt().await.unwrap();
    let (old, new) = (old.to_string(), new.to_string());

    let both = h
        .cli(&["audit", "--verify", "--log-key", &new, "--log-key", &old])
        .await;
    assert_eq!(both.result, Ok(()), "{}", both.stdout);
    let line = both.stdout.lines().nth(1).unwrap().to_owned();
    let (name, rest) = old.split_once('+').unwrap();
    let id = rest.split_once('+').unwrap().0;
    assert!(
        line.ends_with(&format!("signature verified ({name}+{id})")),
        "{line}"
    );
    let refused = h.cli(&["audit", "--verify", "--log-key", &new]).await;
    assert!(refused.result.is_err(), "{}", refused.stdout);
    assert!(
        refused
            .stdout
            .contains("the checkpoint is not signed by the log's key"),
        "{}",
        refused.stdout
    );
}

/// With witnesses: `audit --verify` names the latest cosigned checkpoint
/// and its witnesses, and with `[tlog] policy` whether it meets the
/// quorum; a quorum short of a witness is said, not hidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_the_latest_cosigned_checkpoint_and_judges_the_policys_quorum() {
    use countersign_signer::note_keys::Cosigner;
    use countersign_tlog::Checkpoint;

    let h = Harness::start().await;
    h.propose("schedule.create", CREATE_NIGHTLY).await;
    let key = h.signer.state().log_key().unwrap();
    let signed = sign_new_checkpoint(h.ledger(), key).await.unwrap().unwrap();
    // No witness, no policy: nothing is said.
    let audit = h.cli(&["audit", "--verify"]).await;
    assert!(!audit.stdout.contains("witnesses:"), "{}", audit.stdout);

    let w1 = Cosigner::from_seed(KeyName::new("w1.example").unwrap(), &[11; 32]);
    let w2 = Cosigner::from_seed(KeyName::new("w2.example").unwrap(), &[12; 32]);
    let checkpoint = Checkpoint::new(&key.origin(), signed.size, signed.root).unwrap();
    let line = w1.cosign(&checkpoint, 1_700_000_000).unwrap().to_string();
    h.ledger()
        .store_cosignature(signed.size, &w1.verifier_key(), &line)
        .await
        .unwrap();
    let audit = h.cli(&["audit", "--verify"]).await;
    assert_eq!(audit.result, Ok(()), "{}", audit.stdout);
    assert_eq!(
        audit.stdout.lines().nth(2).unwrap(),
        format!(
            "witnesses: latest cosigned checkpoint size {}, by w1.example",
            signed.size
        )
    );

    // A policy asking for both witnesses: said not met, by whom.
    let policy = h.scratch.path().join("tlog-policy");
    std::fs::write(
        &policy,
        format!(
            "log {}\nwitness W1 {}\nwitness W2 {}\ngroup both all W1 W2\nquorum both\n",
            key.verifier_key(),
            w1.verifier_key(),
            w2.verifier_key()
        ),
    )
    .unwrap();
    let config = h.signer.home().config_path();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}\n[tlog]\npolicy = \"{}\"\n", policy.display()),
    )
    .unwrap();
    let audit = h.cli(&["--json", "audit", "--verify"]).await.json();
    assert_eq!(audit["tree"]["witnesses"]["quorum_met"], false, "{audit}");
    let short = h.cli(&["audit", "--verify"]).await;
    assert_eq!(
        short.stdout.lines().nth(2).unwrap(),
        format!(
            "witnesses: latest cosigned checkpoint size {}, by w1.example, the policy's quorum NOT met: the quorum \"both\" is not met: cosigned by [\"W1\"]",
            signed.size
        )
    );
    let line = w2.cosign(&checkpoint, 1_700_000_001).unwrap().to_string();
    h.ledger()
        .store_cosignature(signed.size, &w2.verifier_key(), &line)
        .await
        .unwrap();
    let met = h.cli(&["audit", "--verify"]).await;
    assert!(
        met.stdout
            .lines()
            .nth(2)
            .unwrap()
            .ends_with("by w1.example, w2.example, the policy's quorum met"),
        "{}",
        met.stdout
    );
}
