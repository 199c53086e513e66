//! A proof key on a PKCS#11 token (SoftHSM2): `keys rotate --pkcs11`
//! (the real binary) moves a signer from its file key to a key generated
//! on the token; the running signer then signs with the token key, and
//! proofs from both keys verify with the published key set. The token's
//! private key is sensitive and never extractable. A wrong PIN, a missing
//! token, a missing key and a PIN in the URI are refused with clear errors
//! and change nothing.
//!
//! SoftHSM2 reads its configuration (`SOFTHSM2_CONF`) from the process
//! environment, which a test cannot set safely while other tests run: each
//! test makes a fresh token, then runs itself again in a child process
//! whose environment names that token. Without `softhsm2-util` (installed
//! by scripts/test) the tests print SKIPPED and pass.
#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_proto::v1::{Delivery, ProposalView, PublicKeysRequest};
use countersign_signer::testing::TestSigner;
use countersign_verifier::{Expectations, KeyRing, Proof, verify};
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::object::{Attribute, AttributeInfo, AttributeType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::AuthPin;
use ed25519_dalek::VerifyingKey;
use time::{Duration, OffsetDateTime};

use support::{SESSION, approved, head, propose};

const BIN: &str = env!("CARGO_BIN_EXE_countersign-signer");
const MODULE: &str = "/usr/lib/softhsm/libsofthsm2.so";
/// Set in the child process: the directory of its token.
const CHILD: &str = "COUNTERSIGN_TEST_SOFTHSM2_DIR";
const LABEL: &str = "countersign-test";
const PIN: &str = "1234";

/// A fresh SoftHSM2 token, as the child process sees it.
struct Token {
    dir: PathBuf,
}

impl Token {
    /// A `pkcs11:` URI naming `object` on this token, the PIN read from `pin_file`.
    fn uri_with(&self, token: &str, object: &str, pin_file: &str) -> String {
        format!(
            "pkcs11:token={token};object={object}?module-path={MODULE}&pin-source=file:{}",
            self.dir.join(pin_file).display()
        )
    }

    fn uri(&self, object: &str) -> String {
        self.uri_with(LABEL, object, "pin")
    }

    /// A logged-in session through cryptoki, as another program on this machine would have.
    fn session(&self) -> Session {
        let pkcs11 = Pkcs11::new(MODULE).unwrap();
        // The signer in this process may have initialized the module already.
        let _ = pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK));
        let slot = pkcs11
            .get_slots_with_token()
            .unwrap()
            .into_iter()
            .find(|s| pkcs11.get_token_info(*s).unwrap().label().trim_end() == LABEL)
            .unwrap();
        let session = pkcs11.open_rw_session(slot).unwrap();
        let _ = session.login(UserType::User, Some(&AuthPin::from(PIN)));
        session
    }

    fn objects(&self, session: &Session, class: ObjectClass, label: &str) -> Vec<ObjectHandle> {
        session
            .find_objects(&[
                Attribute::Class(class),
                Attribute::Label(label.as_bytes().to_vec()),
            ])
            .unwrap()
    }
}

/// Runs `body` with a fresh token: in a child process of this test binary
/// whose `SOFTHSM2_CONF` names it.
fn on_a_token(test: &str, body: impl FnOnce(Token)) {
    if let Some(dir) = std::env::var_os(CHILD) {
        return body(Token { dir: dir.into() });
    }
    if Command::new("softhsm2-util")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIPPED {test}: softhsm2-util is not installed (scripts/test installs softhsm2)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::create_dir(&tokens).unwrap();
    let conf = dir.path().join("softhsm2.conf");
    std::fs::write(
        &conf,
        format!(
            "directories.tokendir = {}\nobjectstore.backend = file\nlog.level = ERROR\n",
            tokens.display()
        ),
    )
    .unwrap();
    let init = Command::new("softhsm2-util")
        .args(["--init-token", "--free", "--label", LABEL, "--pin", PIN])
        .args(["--so-pin", "5678"])
        .env("SOFTHSM2_CONF", &conf)
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    for (name, text) in [("pin", format!("{PIN}\n")), ("wrong-pin", "9999".into())] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let child = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("SOFTHSM2_CONF", &conf)
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && out.contains("1 passed"),
        "{out}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
}

/// `countersign-signer keys ARGS --home HOME`: success, stdout, stderr.
fn keys(home: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("keys")
        .args(args)
        .arg("--home")
        .arg(home)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn index_of(signer: &TestSigner) -> Vec<u8> {
    std::fs::read(signer.home().signer_dir().join("keys.json")).unwrap()
}

/// A new proposal approved directly, and its proof.
async fn a_proof(signer: &TestSigner) -> (ProposalView, String) {
    let view = propose(&mut head(signer).await).await;
    let proof = approved(signer, &view.id, Delivery::Direct).await.proof;
    (view, proof)
}

fn kid_of(proof: &str) -> String {
    let footer = proof.rsplit('.').next().unwrap();
    let footer = base64_decode(footer);
    let footer: serde_json::Value = serde_json::from_slice(&footer).unwrap();
    footer["kid"].as_str().unwrap().to_owned()
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

/// Verifies `proof` with every key the signer publishes now, as a head would.
async fn verifies_with_published_keys(signer: &TestSigner, (view, proof): &(ProposalView, String)) {
    let published = head(signer)
        .await
        .public_keys(PublicKeysRequest {})
        .await
        .unwrap()
        .into_inner();
    let ring =
        KeyRing::from_keys(published.keys.iter().map(|k| {
            VerifyingKey::from_bytes(k.public_key.as_slice().try_into().unwrap()).unwrap()
        }));
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
    let proof = Proof::from_text(proof.clone()).unwrap();
    verify(&proof, &ring, &expect).unwrap();
}

#[test]
fn rotates_from_a_file_key_to_a_token_key_that_signs_verifiable_proofs() {
    on_a_token(
        "rotates_from_a_file_key_to_a_token_key_that_signs_verifiable_proofs",
        |token| {
            tokio::runtime::Runtime::new()
                .unwrap()
                .block_on(rotation(token))
        },
    );
}

async fn rotation(token: Token) {
    let signer = TestSigner::start().await.unwrap();
    let home = signer.home().root().to_path_buf();
    let early = a_proof(&signer).await;
    let file_kid = kid_of(&early.1);

    let (ok, out, err) = keys(&home, &["rotate", "--pkcs11", &token.uri("proof")]);
    assert!(ok, "{err}");
    let token_kid = out.trim().to_owned();
    assert!(token_kid.starts_with("k4.pid."), "{token_kid}");
    assert_ne!(token_kid, file_kid);

    let (_, list, _) = keys(&home, &["list"]);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert_eq!(lines[0], format!("{file_kid} verifying file"));
    let prefix = format!("{token_kid} active pkcs11:token={LABEL};object=proof;id=%");
    assert!(lines[1].starts_with(&prefix), "{list}");
    assert!(
        lines[1].ends_with(&format!(
            "?module-path={MODULE}&pin-source=file:{}",
            token.dir.join("pin").display()
        )),
        "{list}"
    );
    // No PIN anywhere in the index.
    assert!(!String::from_utf8(index_of(&signer)).unwrap().contains(PIN));

    // The running signer picks the token key up and signs with it.
    let late = a_proof(&signer).await;
    assert_eq!(kid_of(&late.1), token_kid);
    verifies_with_published_keys(&signer, &late).await;
    verifies_with_published_keys(&signer, &early).await;
    assert_eq!(signer.state().key_id().unwrap(), token_kid);

    // The private key is on the token, sensitive and never extractable.
    let session = token.session();
    let private = token.objects(&session, ObjectClass::PRIVATE_KEY, "proof");
    assert_eq!(private.len(), 1);
    let attrs = session
        .get_attributes(
            private[0],
            &[
                AttributeType::Token,
                AttributeType::Sensitive,
                AttributeType::Extractable,
                AttributeType::NeverExtractable,
            ],
        )
        .unwrap();
    for expected in [
        Attribute::Token(true),
        Attribute::Sensitive(true),
        Attribute::Extractable(false),
        Attribute::NeverExtractable(true),
    ] {
        assert!(
            attrs
                .iter()
                .any(|a| format!("{a:?}") == format!("{expected:?}")),
            "{expected:?} not in {attrs:?}"
        );
    }
    // C_GetAttributeValue(CKA_VALUE) answers CKR_ATTRIBUTE_SENSITIVE: no value comes back.
    assert!(matches!(
        session
            .get_attribute_info(private[0], &[AttributeType::Value])
            .unwrap()
            .as_slice(),
        [AttributeInfo::Sensitive]
    ));
    assert!(
        session
            .get_attributes(private[0], &[AttributeType::Value])
            .unwrap()
            .is_empty()
    );

    // The rotation is in the audit chain like a file rotation.
    let events = signer.state().ledger().events().await.unwrap();
    let rotated: Vec<_> = events.iter().filter(|e| e.kind == "key_rotated").collect();
    assert_eq!(rotated.len(), 1);
    assert!(rotated[0].details.to_string().contains(&token_kid));

    // Back to a file key; retiring the token key destroys its key pair.
    let (ok, out, err) = keys(&home, &["rotate"]);
    assert!(ok, "{err}");
    let (ok, _, err) = keys(&home, &["retire", &token_kid]);
    assert!(ok, "{err}");
    assert!(
        token
            .objects(&session, ObjectClass::PRIVATE_KEY, "proof")
            .is_empty()
    );
    assert!(
        token
            .objects(&session, ObjectClass::PUBLIC_KEY, "proof")
            .is_empty()
    );
    let last = a_proof(&signer).await;
    assert_eq!(kid_of(&last.1), out.trim());
}

#[test]
fn a_wrong_pin_file_is_refused_and_changes_nothing() {
    on_a_token("a_wrong_pin_file_is_refused_and_changes_nothing", |token| {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let signer = TestSigner::start().await.unwrap();
            let home = signer.home().root().to_path_buf();
            let before = index_of(&signer);
            let uri = token.uri_with(LABEL, "proof", "wrong-pin");
            let (ok, out, err) = keys(&home, &["rotate", "--pkcs11", &uri]);
            assert!(!ok);
            assert_eq!(out, "");
            assert_eq!(
                err,
                format!(
                    "countersign-signer: signing keys: token \"{LABEL}\" refused the PIN from the pin-source file (PinIncorrect)\n"
                )
            );
            assert!(!err.contains("9999"));
            // A PIN file others can read is refused before the token is asked.
            let loose = token.dir.join("pin");
            std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).unwrap();
            let (ok, _, err) = keys(&home, &["rotate", "--pkcs11", &token.uri("proof")]);
            assert!(!ok);
            assert!(err.contains("expected at most 0600"), "{err}");
            std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o600)).unwrap();

            assert_eq!(index_of(&signer), before);
            let session = token.session();
            assert!(token.objects(&session, ObjectClass::PRIVATE_KEY, "proof").is_empty());
            assert!(signer.state().ledger().events().await.unwrap().is_empty());
        });
    });
}

#[test]
fn a_uri_naming_a_missing_token_or_key_is_refused() {
    on_a_token("a_uri_naming_a_missing_token_or_key_is_refused", |token| {
        tokio::runtime::Runtime::new().unwrap().block_on(async {
            let signer = TestSigner::start().await.unwrap();
            let home = signer.home().root().to_path_buf();
            let before = index_of(&signer);
            let refusals = [
                (
                    token.uri_with("absent", "proof", "pin"),
                    "no PKCS#11 token labelled \"absent\" is present (is it plugged in, and is module-path right?)".to_owned(),
                ),
                (
                    format!("pkcs11:token={LABEL};object=proof?module-path={MODULE}&pin-value={PIN}"),
                    "pkcs11 URI refused: pin-value is refused: put the PIN in a 0600 file and name it with pin-source=file:/path".to_owned(),
                ),
                (
                    token.uri("proof").replace(MODULE, "/nonexistent/libpkcs11.so"),
                    "PKCS#11 module /nonexistent/libpkcs11.so not loaded: /nonexistent: No such file or directory".to_owned(),
                ),
            ];
            for (uri, why) in refusals {
                let (ok, _, err) = keys(&home, &["rotate", "--pkcs11", &uri]);
                assert!(!ok);
                assert!(err.starts_with(&format!("countersign-signer: signing keys: {why}")), "{err}");
                assert!(!err.contains(PIN) || !uri.contains("pin-value"), "{err}");
                assert_eq!(index_of(&signer), before);
            }

            // A key that is no longer on the token: the signer says so, and
            // issues nothing rather than fall back to another key.
            let (ok, out, err) = keys(&home, &["rotate", "--pkcs11", &token.uri("gone")]);
            assert!(ok, "{err}");
            let session = token.session();
            for class in [ObjectClass::PRIVATE_KEY, ObjectClass::PUBLIC_KEY] {
                for object in token.objects(&session, class, "gone") {
                    session.destroy_object(object).unwrap();
                }
            }
            let keygen = Command::new(BIN)
                .args(["keygen", "--home"])
                .arg(&home)
                .output()
                .unwrap();
            assert!(!keygen.status.success());
            let err = String::from_utf8(keygen.stderr).unwrap();
            assert!(
                err.starts_with(&format!(
                    "countersign-signer: signing keys: token \"{LABEL}\" holds no Ed25519 private key with object \"gone\" id "
                )),
                "{err}"
            );
            assert_eq!(
                signer.state().key_id().unwrap_err().to_string(),
                err.trim_end().trim_start_matches("countersign-signer: signing keys: ")
            );
            let _ = out;
        });
    });
}
