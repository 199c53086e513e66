//! Shared fixtures for the ledger's integration tests: a ledger on a real
//! SQLite file in a temp dir, proposals, and proofs signed with a fixed-seed
//! test key and verified by the real verifier.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use countersign_ledger::{IssuanceRecord, Ledger, NewProposal};
use countersign_verifier::canonical::{sha256_hex, to_canonical};
use countersign_verifier::{Claims, Expectations, KeyRing, Proof, VerifiedProof, key_id, paseto};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use time::OffsetDateTime;

pub const PRINCIPAL: &str = "pr_0123456789abcdef0123456789abcdef";
pub const SESSION: &str = "session-1";
pub const AUDIENCE: &str = "countersign-test";
pub const CREV: &str = "1111111111111111111111111111111111111111111111111111111111111111";
pub const PREV: &str = "2222222222222222222222222222222222222222222222222222222222222222";

/// A ledger on a fresh file; keep the `TempDir` alive with it.
pub struct TestLedger {
    pub dir: tempfile::TempDir,
    pub url: String,
    pub ledger: Ledger,
}

impl TestLedger {
    pub async fn new() -> TestLedger {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("ledger.db").display());
        let ledger = Ledger::open(&url).await.unwrap();
        TestLedger { dir, url, ledger }
    }

    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("ledger.db")
    }

    /// A raw connection to the file, as an attacker (or a test) would have.
    pub async fn raw(&self) -> sqlx::SqliteConnection {
        use sqlx::Connection as _;
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(self.path())
            .busy_timeout(std::time::Duration::from_secs(5));
        sqlx::SqliteConnection::connect_with(&options)
            .await
            .unwrap()
    }
}

pub fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc().replace_nanosecond(0).unwrap()
}

/// Proposal number `n` for `operation` with `args`.
pub fn proposal(n: u32, operation: &str, args: Value) -> NewProposal {
    let arguments_json = to_canonical(&args).unwrap();
    NewProposal {
        id: format!("prop_{n:032x}"),
        principal: PRINCIPAL.into(),
        session: SESSION.into(),
        operation: operation.into(),
        arguments_sha256: sha256_hex(arguments_json.as_bytes()),
        arguments_json,
        contract_revision: CREV.into(),
        policy_revision: PREV.into(),
        note: "note".into(),
        preview: "preview".into(),
        created_at: now(),
    }
}

pub fn create_schedule(n: u32, name: &str) -> NewProposal {
    proposal(
        n,
        "schedule.create",
        json!({"name": name, "cron": "0 * * * *"}),
    )
}

fn signing_key() -> SigningKey {
    SigningKey::from_bytes(&[7u8; 32])
}

pub fn keys() -> KeyRing {
    let mut ring = KeyRing::new();
    ring.insert(signing_key().verifying_key());
    ring
}

/// A proof for `p` and the issuance record the signer would store.
pub fn issue(p: &NewProposal, n: u32, lifetime_secs: i64) -> (String, IssuanceRecord) {
    let iat = now();
    let claims = Claims {
        iss: "countersign-signer".into(),
        aud: AUDIENCE.into(),
        sub: p.principal.clone(),
        sid: p.session.clone(),
        pid: p.id.clone(),
        op: p.operation.clone(),
        args: serde_json::from_str(&p.arguments_json).unwrap(),
        args_sha256: p.arguments_sha256.clone(),
        crev: p.contract_revision.clone(),
        prev: p.policy_revision.clone(),
        grant: None,
        prov: "human:cli".into(),
        jti: format!("{n:0>42}A"),
        iat,
        nbf: iat,
        exp: iat + time::Duration::seconds(lifetime_secs),
    };
    let payload = claims.to_canonical_json().unwrap();
    let key = signing_key();
    let footer = to_canonical(&json!({"kid": key_id(&key.verifying_key())})).unwrap();
    let input = paseto::signing_input(payload.as_bytes(), footer.as_bytes());
    let signature = key.sign(&input).to_bytes();
    let token = paseto::assemble(payload.as_bytes(), &signature, footer.as_bytes());
    let record = IssuanceRecord {
        proof_sha256: Proof::from_text(token.clone()).unwrap().sha256_hex(),
        nonce: claims.jti.clone(),
        principal: claims.sub.clone(),
        session: claims.sid.clone(),
        proposal_id: claims.pid.clone(),
        operation: claims.op.clone(),
        arguments_sha256: claims.args_sha256.clone(),
        contract_revision: claims.crev.clone(),
        policy_revision: claims.prev.clone(),
        provenance: claims.prov.clone(),
        audience: claims.aud.clone(),
        issued_at: claims.iat,
        expires_at: claims.exp,
    };
    (token, record)
}

/// Verify `token` for proposal `p` with the real verifier.
pub fn verified(p: &NewProposal, token: &str) -> VerifiedProof {
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
pub async fn approve(ledger: &Ledger, p: &NewProposal, n: u32) -> String {
    ledger.insert_proposal(p).await.unwrap();
    let (token, record) = issue(p, n, 300);
    ledger.record_approval(&record).await.unwrap();
    token
}
