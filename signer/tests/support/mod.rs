//! Shared helpers of the signer's integration tests: clients with
//! arbitrary certificates, and the common requests.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

pub mod pair;
pub mod passkey;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::pki::{CaMaterial, issue_client_cert};
use countersign_identity::{Role, tls};
use countersign_proto::v1::PublicKeysRequest;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, DecideResponse, Delivery, Interface, ProposalStatus, ProposalView,
    ProposeRequest, WatchProposalRequest,
};
use countersign_signer::testing::TestSigner;
use countersign_verifier::{Claims, Expectations, KeyRing, Proof, VerifiedProof, verify};
use ed25519_dalek::VerifyingKey;
use time::{Duration, OffsetDateTime};
use tonic::transport::{Channel, ClientTlsConfig};

pub const SESSION: &str = "agent-session-1";
pub const ARGS: &str = r#"{"name":"nightly","cron":"0 3 * * *"}"#;

pub async fn start() -> TestSigner {
    TestSigner::start().await.unwrap()
}

/// A client TLS configuration trusting `trusted_ca`, presenting a
/// certificate `issuer` made for `role`/`principal`, valid from
/// `now + from` until `now + until`.
pub fn tls_with_cert(
    trusted_ca: &CaMaterial,
    issuer: &CaMaterial,
    role: Role,
    principal: &str,
    (from, until): (Duration, Duration),
) -> ClientTlsConfig {
    let now = OffsetDateTime::now_utc();
    let cert = issue_client_cert(issuer, role, principal, now + from, now + until).unwrap();
    tls::client_config_from_pem(trusted_ca.cert_pem(), &cert.cert_pem, &cert.key_pem)
}

/// Valid for the next hour (and the past one).
pub const VALID_NOW: (Duration, Duration) = (Duration::hours(-1), Duration::hours(1));

/// A client whose certificate the signer's CA issued for `role`/`principal`.
pub async fn client_as(signer: &TestSigner, role: Role, principal: &str) -> SignerClient<Channel> {
    let ca = CaMaterial::load(signer.home()).unwrap();
    let config = tls_with_cert(&ca, &ca, role, principal, VALID_NOW);
    signer.client_with(config).await.unwrap()
}

/// A client presenting a named approver certificate `name` of the
/// signer's principal (`countersign://approver/<principal>/<name>`),
/// issued by its CA.
pub async fn named_approver(signer: &TestSigner, name: &str) -> SignerClient<Channel> {
    signer.named_approver(name).await.unwrap()
}

/// Approves `proposal_id` as the home's approver.
pub async fn approved(
    signer: &TestSigner,
    proposal_id: &str,
    delivery: Delivery,
) -> DecideResponse {
    approver(signer)
        .await
        .decide(approve(proposal_id, delivery))
        .await
        .unwrap()
        .into_inner()
}

pub async fn head(signer: &TestSigner) -> SignerClient<Channel> {
    signer.client(Role::Head).await.unwrap()
}

pub async fn approver(signer: &TestSigner) -> SignerClient<Channel> {
    signer.client(Role::Approver).await.unwrap()
}

pub fn propose_request(session: &str) -> ProposeRequest {
    ProposeRequest {
        operation: "schedule.create".into(),
        arguments_json: ARGS.into(),
        session: session.into(),
        note: "please approve".into(),
        idempotency_key: String::new(),
        head: "cli".into(),
    }
}

pub async fn propose(head: &mut SignerClient<Channel>) -> ProposalView {
    head.propose(propose_request(SESSION))
        .await
        .unwrap()
        .into_inner()
}

pub fn approve(proposal_id: &str, delivery: Delivery) -> DecideRequest {
    DecideRequest {
        proposal_id: proposal_id.into(),
        approve: true,
        reason: String::new(),
        delivery: delivery as i32,
        interface: Interface::Cli as i32,
        execute_in_session: String::new(),
        dry_run: false,
        passkey: None,
    }
}

/// The reason code a refusal carries.
/// Create the rule `definition` as a person would: a dry run (whose scope
/// says it approves without asking a person), then the real request with
/// the hash the dry run showed.
pub async fn create_rule(
    approver: &mut SignerClient<Channel>,
    definition: &serde_json::Value,
) -> countersign_proto::v1::RuleView {
    let request = |dry_run, definition_sha256| countersign_proto::v1::CreateRuleRequest {
        definition_json: definition.to_string(),
        dry_run,
        definition_sha256,
    };
    let shown = approver
        .create_rule(request(true, String::new()))
        .await
        .unwrap()
        .into_inner();
    assert!(
        shown.scope.contains("WITHOUT asking a person"),
        "{}",
        shown.scope
    );
    approver
        .create_rule(request(false, shown.definition_sha256))
        .await
        .unwrap()
        .into_inner()
}

/// One plain HTTP/1.1 GET, answered in full (the listener closes after).
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// The signer's metrics page (its `[metrics] signer` must be set).
pub async fn metrics_text(signer: &TestSigner) -> String {
    http_get(signer.metrics_addr().unwrap(), "/metrics").await
}

pub fn reason_of(status: &tonic::Status) -> String {
    status
        .metadata()
        .get(countersign_proto::reason::METADATA_KEY)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

pub fn deny(proposal_id: &str, reason: &str) -> DecideRequest {
    DecideRequest {
        proposal_id: proposal_id.into(),
        approve: false,
        reason: reason.into(),
        ..Default::default()
    }
}

/// Another valid principal id.
pub const OTHER_PRINCIPAL: &str = "pr_00000000000000000000000000000bad";

/// The payload of a PASETO v4.public proof, as JSON (the signature is not
/// checked here; the gate tests check proofs).
pub fn claims_of(proof: &str) -> serde_json::Value {
    let body = proof
        .strip_prefix("v4.public.")
        .unwrap()
        .split('.')
        .next()
        .unwrap();
    let bytes = URL_SAFE_NO_PAD.decode(body).unwrap();
    serde_json::from_slice(&bytes[..bytes.len() - 64]).unwrap()
}

/// The claims of `proof_text`, verified as a gate would for `view`.
pub async fn verified_claims(
    signer: &TestSigner,
    head: &mut SignerClient<Channel>,
    view: &ProposalView,
    proof_text: &str,
) -> Claims {
    let proof = Proof::from_text(proof_text.to_owned()).unwrap();
    let keys = head
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    let bytes: [u8; 32] = keys.keys[0].public_key.as_slice().try_into().unwrap();
    let ring = KeyRing::from_keys([VerifyingKey::from_bytes(&bytes).unwrap()]);
    let policy = signer.state().policy();
    let expect = Expectations {
        audience: &policy.audience,
        principal: signer.principal(),
        session: SESSION,
        proposal_id: &view.id,
        operation: "schedule.create",
        arguments_sha256: &view.arguments_sha256,
        contract_revision: &view.contract_revision,
        policy_revision: &view.policy_revision,
        now: OffsetDateTime::now_utc(),
        max_lifetime: Duration::seconds(1800),
    };
    verify(&proof, &ring, &expect).unwrap().claims().clone()
}

/// `proof_text` verified as the gate verifies for `id`.
pub async fn verified(signer: &TestSigner, id: &str, proof_text: &str) -> VerifiedProof {
    let record = signer.state().ledger().proposal(id).await.unwrap().unwrap();
    let keys = head(signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    let ring = KeyRing::from_keys(keys.keys.iter().map(|k| {
        let bytes: [u8; 32] = k.public_key.as_slice().try_into().unwrap();
        VerifyingKey::from_bytes(&bytes).unwrap()
    }));
    let policy = signer.state().policy();
    verify(
        &Proof::from_text(proof_text.to_owned()).unwrap(),
        &ring,
        &Expectations {
            audience: &policy.audience,
            principal: signer.principal(),
            session: SESSION,
            proposal_id: id,
            operation: &record.proposal.operation,
            arguments_sha256: &record.proposal.arguments_sha256,
            contract_revision: &record.proposal.contract_revision,
            policy_revision: &record.proposal.policy_revision,
            now: OffsetDateTime::now_utc(),
            max_lifetime: Duration::seconds(1800),
        },
    )
    .unwrap()
}

/// A fresh home for a `countersign-signer` process: development PKI, the
/// default registry, the signer on 127.0.0.1:0.
pub fn process_home() -> (tempfile::TempDir, countersign_identity::Home) {
    use countersign_identity::files::write_private_new;
    let dir = tempfile::tempdir().unwrap();
    let home = countersign_identity::Home::at(dir.path().join("home")).unwrap();
    let principal = home.init().unwrap().principal;
    countersign_identity::pki::create_dev_pki(&home, &principal).unwrap();
    let registry = countersign_registry::Registry::default_toml();
    write_private_new(&home.registry_path(), registry.as_bytes()).unwrap();
    std::fs::remove_file(home.config_path()).unwrap();
    write_private_new(&home.config_path(), b"[signer]\naddr = \"127.0.0.1:0\"\n").unwrap();
    (dir, home)
}

/// `countersign-signer serve` (the binary `bin`: this module is shared
/// with crates that do not build it) of `home`, logging warnings (and its
/// ready lines) to the standard error returned, to read the ready lines
/// from.
pub fn spawn_serve(
    bin: &str,
    home: &countersign_identity::Home,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
) {
    spawn_serve_with_fault(bin, home, None)
}

/// [`spawn_serve`] with `COUNTERSIGN_FAULT=<fault>` when `fault` is some:
/// the process kills itself with SIGKILL at that point
/// (`countersign_ledger::fault`).
pub fn spawn_serve_with_fault(
    bin: &str,
    home: &countersign_identity::Home,
    fault: Option<&str>,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
) {
    let mut command = std::process::Command::new(bin);
    command
        .args(["serve", "--home"])
        .arg(home.root())
        .env("COUNTERSIGN_LOG", "warn")
        .env_remove(countersign_ledger::fault::FAULT_VAR)
        .stderr(std::process::Stdio::piped());
    if let Some(point) = fault {
        command.env(countersign_ledger::fault::FAULT_VAR, point);
    }
    let mut child = command.spawn().unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    (child, stderr)
}

/// The ready line of a signer process's standard error `stderr`, past
/// any warning logged before it (say, of a premise runner the build
/// lacks).
pub fn ready_line(stderr: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    while !line.starts_with("countersign-signer listening on ") {
        line.clear();
        assert_ne!(stderr.read_line(&mut line).unwrap(), 0, "no ready line");
    }
    line
}

/// The address and the key id a signer's ready line names
/// (`countersign-signer listening on ADDR key KID`).
pub fn listening_on(line: &str) -> (String, String) {
    let (addr, kid) = line
        .trim_end()
        .strip_prefix("countersign-signer listening on ")
        .and_then(|rest| rest.split_once(" key "))
        .unwrap_or_else(|| panic!("unexpected ready line {line:?}"));
    (addr.to_owned(), kid.to_owned())
}

/// A client of the signer process at `addr` with `home`'s credential for `role`.
pub async fn process_client(
    addr: &str,
    home: &countersign_identity::Home,
    role: Role,
) -> SignerClient<Channel> {
    tls::install_crypto_provider();
    let channel = tonic::transport::Endpoint::from_shared(format!("https://{addr}"))
        .unwrap()
        .tls_config(tls::client_config(home, role).unwrap())
        .unwrap()
        .connect()
        .await
        .unwrap();
    SignerClient::new(channel)
}

/// Sends SIGTERM to the signer process `child` and asserts it exits successfully.
pub async fn stop_with_sigterm(mut child: std::process::Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// `<bin> keys <args> --home <home>` (`bin`: the `countersign-signer`
/// binary of the test's build): success, stdout, stderr.
pub fn keys_command(
    bin: &str,
    home: &countersign_identity::Home,
    args: &[&str],
) -> (bool, String, String) {
    let out = std::process::Command::new(bin)
        .arg("keys")
        .args(args)
        .arg("--home")
        .arg(home.root())
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Generous: a watch hears a change, even across signers, in milliseconds.
pub const WATCH_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// The next message of the watch `stream`, within [`WATCH_PATIENCE`].
pub async fn next<T>(stream: &mut tonic::Streaming<T>) -> T {
    tokio::time::timeout(WATCH_PATIENCE, stream.message())
        .await
        .expect("a message within the patience")
        .unwrap()
        .expect("the stream goes on")
}

/// `WatchProposal` of `id` through `client`, past its first (pending) view.
pub async fn watch_past_pending(
    mut client: SignerClient<Channel>,
    id: &str,
) -> tonic::Streaming<ProposalView> {
    let mut views = client
        .watch_proposal(WatchProposalRequest {
            proposal_id: id.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(next(&mut views).await.status(), ProposalStatus::Pending);
    views
}
