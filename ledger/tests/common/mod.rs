//! Shared fixtures for the ledger's integration tests: a ledger on a real
//! SQLite file in a temp dir or a fresh database on the PostgreSQL server,
//! the same test on both (`on_both_backends!`), proposals, and proofs signed with a fixed-seed
//! test key and verified by the real verifier.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use countersign_ledger::testing::TempPgDatabase;
use countersign_ledger::{IssuanceRecord, Ledger, PremiseRunner, Proposal, ResignedProof};
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::{Claims, Expectations, KeyRing, Proof, VerifiedProof, key_id, paseto};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use time::OffsetDateTime;

pub const PRINCIPAL: &str = "pr_0123456789abcdef0123456789abcdef";
pub const SESSION: &str = "session-1";
/// The lease of intents recorded by tests: none, so a person may resolve
/// them at once.
pub const NO_LEASE: time::Duration = time::Duration::ZERO;
pub const AUDIENCE: &str = "countersign-test";
pub const CREV: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const PREV: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// The backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// `on_both_backends!(name);` above `async fn name(kind: Kind)`: two tests,
/// `name::sqlite` and `name::postgres`, running the same body on each.
#[macro_export]
macro_rules! on_both_backends {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name($crate::common::Kind::Sqlite).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name($crate::common::Kind::Postgres).await
            }
        }
    };
}

/// A ledger on a fresh SQLite file or a fresh PostgreSQL database; keep
/// the value alive while using it (dropping it removes the database).
pub struct TestLedger {
    pub kind: Kind,
    pub dir: tempfile::TempDir,
    pub url: String,
    pub ledger: Ledger,
    pub pg: Option<TempPgDatabase>,
}

impl TestLedger {
    /// A SQLite ledger (for tests about the file itself).
    pub async fn new() -> TestLedger {
        TestLedger::on(Kind::Sqlite).await
    }

    pub async fn on(kind: Kind) -> TestLedger {
        let dir = tempfile::tempdir().unwrap();
        let (url, pg) = match kind {
            Kind::Sqlite => (
                format!("sqlite://{}", dir.path().join("ledger.db").display()),
                None,
            ),
            Kind::Postgres => {
                let db = TempPgDatabase::create().await.unwrap();
                (db.url().to_string(), Some(db))
            }
        };
        let ledger = Ledger::open(&url)
            .await
            .unwrap()
            .with_premise_runner(premise_runner());
        TestLedger {
            kind,
            dir,
            url,
            ledger,
            pg,
        }
    }

    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("ledger.db")
    }

    /// A raw connection to the database, as an attacker (or a test) with
    /// direct write access would have.
    pub async fn raw(&self) -> Raw {
        use sqlx::Connection as _;
        match self.kind {
            Kind::Sqlite => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(self.path())
                    .busy_timeout(std::time::Duration::from_secs(5));
                Raw::Sqlite(
                    sqlx::SqliteConnection::connect_with(&options)
                        .await
                        .unwrap(),
                )
            }
            Kind::Postgres => Raw::Postgres(sqlx::PgConnection::connect(&self.url).await.unwrap()),
        }
    }

    /// The statements that let a raw writer update and delete events.
    pub fn unguard_events(&self) -> &'static [&'static str] {
        match self.kind {
            Kind::Sqlite => &[
                "DROP TRIGGER events_no_update",
                "DROP TRIGGER events_no_delete",
            ],
            Kind::Postgres => &["ALTER TABLE events DISABLE TRIGGER events_append_only"],
        }
    }

    /// Make inserts into `table` fail with "injected failure" (`on`), or
    /// stop doing so (`!on`).
    pub async fn inject_insert_failure(&self, table: &str, on: bool) {
        self.inject_failure(table, "TRUE", on).await;
    }

    /// [`TestLedger::inject_insert_failure`] for the rows of one proposal
    /// only (`table` has a `proposal_id` column).
    pub async fn inject_insert_failure_for(&self, table: &str, proposal_id: &str, on: bool) {
        let when = format!("NEW.proposal_id = '{proposal_id}'");
        self.inject_failure(table, &when, on).await;
    }

    /// Inserts into `table` for which `when` holds fail, or stop failing.
    async fn inject_failure(&self, table: &str, when: &str, on: bool) {
        let sql = match (self.kind, on) {
            (Kind::Sqlite, true) => format!(
                "CREATE TRIGGER inject_failure BEFORE INSERT ON {table} WHEN {when}
                 BEGIN SELECT RAISE(ABORT, 'injected failure'); END"
            ),
            (Kind::Sqlite, false) => "DROP TRIGGER inject_failure".to_string(),
            (Kind::Postgres, true) => format!(
                "CREATE FUNCTION inject_failure() RETURNS trigger LANGUAGE plpgsql AS $$
                 BEGIN
                   IF {when} THEN RAISE EXCEPTION 'injected failure'; END IF;
                   RETURN NEW;
                 END $$;
                 CREATE TRIGGER inject_failure BEFORE INSERT ON {table}
                 FOR EACH ROW EXECUTE FUNCTION inject_failure()"
            ),
            (Kind::Postgres, false) => {
                format!("DROP TRIGGER inject_failure ON {table}; DROP FUNCTION inject_failure()")
            }
        };
        let mut raw = self.raw().await;
        raw.exec(&sql).await.unwrap();
        raw.close().await;
    }

    /// Rows in `table`, read raw.
    pub async fn count(&self, table: &str) -> i64 {
        let mut raw = self.raw().await;
        let n = raw
            .scalar_i64(&format!("SELECT COUNT(*) FROM {table}"))
            .await
            .unwrap();
        raw.close().await;
        n
    }
}

/// A raw connection of either backend.
pub enum Raw {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Raw {
    /// Run one statement; the database's message on failure.
    pub async fn exec(&mut self, sql: &str) -> Result<(), String> {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Raw::Sqlite(c) => sqlx::raw_sql(sql).execute(c).await.map(|_| ()),
            Raw::Postgres(c) => sqlx::raw_sql(sql).execute(c).await.map(|_| ()),
        }
        .map_err(|e| e.to_string())
    }

    /// The first column of the first row, as an integer.
    pub async fn scalar_i64(&mut self, sql: &str) -> Result<i64, String> {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Raw::Sqlite(c) => sqlx::query_scalar(sql).fetch_one(c).await,
            Raw::Postgres(c) => sqlx::query_scalar(sql).fetch_one(c).await,
        }
        .map_err(|e| e.to_string())
    }

    /// The first column of the first row, as text.
    pub async fn scalar_text(&mut self, sql: &str) -> Result<String, String> {
        let sql = sqlx::AssertSqlSafe(sql.to_string());
        match self {
            Raw::Sqlite(c) => sqlx::query_scalar(sql).fetch_one(c).await,
            Raw::Postgres(c) => sqlx::query_scalar(sql).fetch_one(c).await,
        }
        .map_err(|e| e.to_string())
    }

    pub async fn close(self) {
        use sqlx::Connection as _;
        match self {
            Raw::Sqlite(c) => c.close().await.unwrap(),
            Raw::Postgres(c) => c.close().await.unwrap(),
        }
    }
}

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc().replace_nanosecond(0).unwrap()
}

/// Proposal number `n` for `operation` with `args`.
pub fn proposal(n: u32, operation: &str, args: Value) -> Proposal {
    let arguments_json = to_canonical(&args).unwrap();
    Proposal {
        id: format!("prop_{n:032x}").parse().unwrap(),
        principal: PRINCIPAL.parse().unwrap(),
        session: SESSION.parse().unwrap(),
        operation: operation.into(),
        arguments_sha256: sha256_hex(arguments_json.as_bytes()),
        arguments_json,
        contract_revision: CREV.into(),
        policy_revision: PREV.into(),
        note: "note".into(),
        preview: "preview".into(),
        created_at: now(),
        premise: None,
        decide_by: None,
        policy: None,
    }
}

pub fn create_schedule(n: u32, name: &str) -> Proposal {
    proposal(
        n,
        "schedule.create",
        json!({"name": name, "cron": "0 * * * *"}),
    )
}

fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

/// The key of a second signer of the ledger, which signs a handoff again
/// when the first is lost ([`resign`]).
fn second_signing_key() -> SigningKey {
    SigningKey::from_bytes(&[8u8; 32])
}

/// Both signers' keys, as every head of a pair verifies with.
pub fn keys() -> KeyRing {
    let mut ring = KeyRing::new();
    ring.insert(signing_key().verifying_key());
    ring.insert(second_signing_key().verifying_key());
    ring
}

/// A proof for `p` and the issuance record the signer would store.
pub fn issue(p: &Proposal, n: u32, lifetime_secs: i64) -> (String, IssuanceRecord) {
    issue_as(p, n, lifetime_secs, None, "human:cli")
}

/// [`issue`] with the provenance `prov`.
pub fn issue_with_provenance(
    p: &Proposal,
    n: u32,
    lifetime_secs: i64,
    prov: &str,
) -> (String, IssuanceRecord) {
    issue_as(p, n, lifetime_secs, None, prov)
}

/// [`issue`], under `grant` (provenance `rule:<id>@<version>`) if given.
pub fn issue_under(
    p: &Proposal,
    n: u32,
    lifetime_secs: i64,
    grant: Option<countersign_verifier::Grant>,
) -> (String, IssuanceRecord) {
    let prov = grant
        .as_ref()
        .map_or_else(|| "human:cli".to_string(), |g| g.provenance());
    issue_as(p, n, lifetime_secs, grant, &prov)
}

/// A proof for `p` under `grant` with provenance `prov`, and its issuance.
fn issue_as(
    p: &Proposal,
    n: u32,
    lifetime_secs: i64,
    grant: Option<countersign_verifier::Grant>,
    prov: &str,
) -> (String, IssuanceRecord) {
    let iat = now();
    let claims = Claims {
        iss: "countersign-signer".into(),
        aud: AUDIENCE.into(),
        sub: p.principal.to_string(),
        sid: p.session.to_string(),
        pid: p.id.to_string(),
        op: p.operation.clone(),
        args: serde_json::from_str(&p.arguments_json).unwrap(),
        args_sha256: p.arguments_sha256.clone(),
        crev: p.contract_revision.clone(),
        prev: p.policy_revision.clone(),
        grant,
        prov: prov.into(),
        jti: format!("{n:0>42}A"),
        iat,
        nbf: iat,
        exp: iat + time::Duration::seconds(lifetime_secs),
        passkey: None,
        premise: p.premise.clone(),
    };
    let token = sign(&claims, &signing_key());
    let record = IssuanceRecord::from_claims(&claims, &Proof::from_text(token.clone()).unwrap());
    (token, record)
}

/// `claims` as a PASETO v4.public token under `key`.
fn sign(claims: &Claims, key: &SigningKey) -> String {
    let payload = claims.to_canonical_json().unwrap();
    let footer = to_canonical(&json!({"kid": key_id(&key.verifying_key())})).unwrap();
    let input = paseto::signing_input(payload.as_bytes(), footer.as_bytes());
    let signature = key.sign(&input).to_bytes();
    paseto::assemble(payload.as_bytes(), &signature, footer.as_bytes())
}

/// The statement that inserts `r` into `resigned_proofs` directly, as a
/// raw writer would.
pub fn resigned_row_insert(r: &ResignedProof) -> String {
    format!(
        "INSERT INTO resigned_proofs (nonce, proposal_id, proof_sha256, consume_digest,
             key_id, replaces_key_id, resigned_at)
         VALUES ('{}', '{}', '{}', '{}', '{}', '{}', '2026-12-07T00:00:00Z')",
        r.nonce, r.proposal_id, r.proof_sha256, r.consume_digest, r.key_id, r.replaces_key_id
    )
}

/// The issued proof `token`'s claims signed again by the second signer's
/// key, as a signer does for a handoff whose issuing signer was lost: the
/// new token and the record of it.
pub fn resign(token: &str) -> (String, ResignedProof) {
    let proof = Proof::from_text(token.to_string()).unwrap();
    let (claims, issued_by) = countersign_verifier::verify::authenticate(&proof, &keys()).unwrap();
    let key = second_signing_key();
    let again = sign(&claims, &key);
    let resigned = Proof::from_text(again.clone()).unwrap();
    let record = ResignedProof {
        proposal_id: claims.pid.clone(),
        nonce: claims.jti.clone(),
        proof_sha256: resigned.sha256_hex(),
        consume_digest: resigned.consume_key().digest(),
        key_id: key_id(&key.verifying_key()),
        replaces_key_id: issued_by,
    };
    (again, record)
}

/// Verify `token` for proposal `p` with the real verifier.
pub fn verified(p: &Proposal, token: &str) -> VerifiedProof {
    let proof = Proof::from_text(token.to_string()).unwrap();
    let expect = Expectations {
        audience: AUDIENCE,
        principal: &p.principal,
        session: &p.session,
        proposal_id: &p.id,
        operation: &p.operation,
        arguments_sha256: &p.arguments_sha256,
        contract_revision: &p.contract_revision,
        policy_revision: &p.policy_revision,
        now: now(),
        max_lifetime: time::Duration::seconds(1800),
    };
    countersign_verifier::verify(&proof, &keys(), &expect).unwrap()
}

/// Insert proposal `p`, approve it, and return its proof text.
pub async fn approve(ledger: &Ledger, p: &Proposal, n: u32) -> String {
    ledger.insert_proposal(p).await.unwrap();
    let (token, record) = issue(p, n, 300);
    ledger.record_approval(&record).await.unwrap();
    token
}

/// Propose, approve and begin consuming `operation(args)` as proposal `n`:
/// the intent the ledger recorded.
pub async fn consumed(
    ledger: &Ledger,
    n: u32,
    operation: &str,
    args: Value,
) -> countersign_ledger::Intent {
    let p = proposal(n, operation, args);
    let token = approve(ledger, &p, n).await;
    match ledger
        .begin_consume(&verified(&p, &token), NO_LEASE)
        .await
        .unwrap()
    {
        countersign_ledger::ConsumeStart::Fresh(intent) => intent,
        countersign_ledger::ConsumeStart::Replay(d) => panic!("unexpected replay {d:?}"),
    }
}

/// The names of the schedules in [`PRINCIPAL`]'s state, in order.
pub async fn schedule_keys(ledger: &Ledger) -> Vec<String> {
    ledger
        .state(PRINCIPAL, "schedules")
        .await
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// The hash of an event row whose hashed body is `body`, after `prev`, as
/// someone who knows the scheme computes it: `sha256(prev || canonical
/// body)`, hex.
pub fn chained_hash(prev: &str, body: &Value) -> String {
    use sha2::{Digest as _, Sha256};
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(to_canonical(body).unwrap().as_bytes());
    hex::encode(h.finalize())
}

/// The workspace's premise runner (`countersign-premise`, a binary of
/// `countersign-process`, which `cargo test -p countersign-ledger` does not
/// build), built once per test process, hiding nothing: these tests are
/// about the ledger; the restriction has its own tests in `process/tests`.
pub fn premise_runner() -> PremiseRunner {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = std::process::Command::new(cargo)
            .args(["build", "-q", "-p", "countersign-process", "--bin"])
            .arg(countersign_process::premise::RUNNER_NAME)
            .status()
            .unwrap();
        assert!(status.success(), "building the premise runner: {status}");
    });
    PremiseRunner::beside_this_program(Vec::new())
}

/// Opens in `ledger`, as a signer's BeginDecision, BeginEnrolment or
/// BeginRemoval would have, the challenge `a` answers (for a minute), so
/// that the write recording `a` can take it. An earlier unanswered one of
/// the same challenge is replaced.
#[allow(dead_code)]
pub async fn open_challenge(ledger: &Ledger, a: &countersign_ledger::PasskeyAssertionRecord) {
    // The delivery a challenge can have been issued for (an assertion
    // that does not fit its write is the ledger's to refuse).
    let delivery = match (a.purpose, a.delivery.as_str()) {
        (countersign_ledger::AssertionPurpose::Decision, "handoff") => "handoff",
        (countersign_ledger::AssertionPurpose::Decision, _) => "direct",
        _ => "",
    };
    open_challenge_as(ledger, &a.challenge, a.purpose, &a.subject, delivery).await;
}

/// Opens the creation challenge an enrolment `e` answers, as
/// [`open_challenge`] does.
#[allow(dead_code)]
pub async fn open_enrolment_challenge(ledger: &Ledger, e: &countersign_ledger::PasskeyEnrolment) {
    let purpose = countersign_ledger::AssertionPurpose::Enrol;
    open_challenge_as(ledger, &e.challenge, purpose, "", "").await;
}

async fn open_challenge_as(
    ledger: &Ledger,
    challenge: &str,
    purpose: countersign_ledger::AssertionPurpose,
    subject: &str,
    delivery: &str,
) {
    ledger.discard_passkey_challenge(challenge).await.unwrap();
    ledger
        .issue_passkey_challenge(&countersign_ledger::PasskeyChallenge {
            id: challenge.into(),
            challenge: challenge.into(),
            random: challenge.into(),
            approver: "test".into(),
            purpose,
            subject: subject.into(),
            delivery: delivery.into(),
            session: String::new(),
            expires_at: OffsetDateTime::now_utc() + time::Duration::minutes(1),
        })
        .await
        .unwrap();
}

/// The passkey writes of [`Ledger`], each after opening the challenges it
/// answers ([`open_challenge`], [`open_enrolment_challenge`]): what a
/// signer does between its Begin* call and the write.
#[allow(dead_code, async_fn_in_trait)]
pub trait OpensChallenges {
    /// [`Ledger::enrol_passkey`] with its challenges open.
    async fn enrol_opened(
        &self,
        e: &countersign_ledger::PasskeyEnrolment,
        a: Option<&countersign_ledger::PasskeyAssertionRecord>,
    ) -> Result<(), countersign_ledger::LedgerError>;
    /// [`Ledger::remove_passkey`] with its challenge open.
    async fn remove_opened(
        &self,
        credential_id: &str,
        removed_by: &str,
        authorized_by: &str,
        a: Option<&countersign_ledger::PasskeyAssertionRecord>,
    ) -> Result<countersign_ledger::PasskeyRemoval, countersign_ledger::LedgerError>;
    /// [`Ledger::record_passkey_approval`] with its challenge open.
    async fn approve_opened(
        &self,
        i: &IssuanceRecord,
        a: &countersign_ledger::PasskeyAssertionRecord,
    ) -> Result<(), countersign_ledger::LedgerError>;
}

impl OpensChallenges for Ledger {
    async fn enrol_opened(
        &self,
        e: &countersign_ledger::PasskeyEnrolment,
        a: Option<&countersign_ledger::PasskeyAssertionRecord>,
    ) -> Result<(), countersign_ledger::LedgerError> {
        open_enrolment_challenge(self, e).await;
        if let Some(a) = a {
            open_challenge(self, a).await;
        }
        self.enrol_passkey(e, a).await
    }

    async fn remove_opened(
        &self,
        credential_id: &str,
        removed_by: &str,
        authorized_by: &str,
        a: Option<&countersign_ledger::PasskeyAssertionRecord>,
    ) -> Result<countersign_ledger::PasskeyRemoval, countersign_ledger::LedgerError> {
        if let Some(a) = a {
            open_challenge(self, a).await;
        }
        self.remove_passkey(credential_id, removed_by, authorized_by, a)
            .await
    }

    async fn approve_opened(
        &self,
        i: &IssuanceRecord,
        a: &countersign_ledger::PasskeyAssertionRecord,
    ) -> Result<(), countersign_ledger::LedgerError> {
        open_challenge(self, a).await;
        self.record_passkey_approval(i, a).await
    }
}

/// The checkpoint chore's lease, taken (or renewed) by the test's one
/// holder: what a serving signer holds while it writes checkpoints.
pub async fn checkpoint_lease(ledger: &Ledger) -> countersign_ledger::Lease {
    ledger
        .take_lease(
            countersign_ledger::leases::CHECKPOINTS_CHORE,
            "test-holder",
            time::Duration::minutes(5),
        )
        .await
        .unwrap()
        .expect("the test's holder takes the checkpoint chore")
}
