//! A proof key held on a PKCS#11 token: the second implementation of
//! `ProofSigner`, beside the file key of `key.rs`.
//!
//! Owns: loading a PKCS#11 module once per process (never finalized, so
//! that two keys on one module cannot pull it from under each other),
//! only after the registry's file checks passed on it and every directory
//! on the way (a regular file of the signer's user or root that nobody
//! else can write),
//! finding a token and a key by a [`Pkcs11Uri`], logging in with the PIN
//! from the URI's `pin-source` file (0600, read through
//! `countersign_identity::files::read_private`, held only for the
//! `C_Login` call), generating Ed25519 key pairs on the token (`CKA_TOKEN`,
//! `CKA_SENSITIVE`, not `CKA_EXTRACTABLE`), signing with pure `CKM_EDDSA`
//! through one logged-in session per key, serialized by a mutex, and
//! destroying a retired key pair. Every signature the token returns is
//! verified against the key the index records before it is used, so a
//! token that holds another key, or answers wrongly, cannot make the signer
//! issue a proof its published keys do not verify.
//!
//! Must not: read, log or print the PIN or any key material; panic on a
//! token failure (every failure is a [`KeyError`]).

mod uri;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use countersign_identity::ConfiguredFile;
use countersign_identity::files::read_private;
use countersign_verifier::key_id;
use cryptoki::context::{CInitializeArgs, CInitializeFlags, Pkcs11};
use cryptoki::error::{Error as CkError, RvError};
use cryptoki::mechanism::Mechanism;
use cryptoki::mechanism::eddsa::{EddsaParams, EddsaSignatureScheme};
use cryptoki::object::{Attribute, AttributeType, KeyType, ObjectClass, ObjectHandle};
use cryptoki::session::{Session, UserType};
use cryptoki::types::RawAuthPin;
use ed25519_dalek::{Signature, VerifyingKey};

pub use uri::Pkcs11Uri;

use crate::key::{KeyError, ProofSigner};

/// DER of the edwards25519 curve OID 1.3.101.112 (`CKA_EC_PARAMS`).
const ED25519_OID_DER: [u8; 5] = [0x06, 0x03, 0x2B, 0x65, 0x70];
/// The label a generated key gets when the URI names none.
const DEFAULT_LABEL: &str = "countersign-proof";
/// Signed and verified when a key is opened: proves the token holds the key.
const PROBE: &[u8] = b"countersign-signer pkcs11 key check";

/// Modules loaded by this process, initialized once and kept.
static MODULES: Mutex<Vec<(PathBuf, Pkcs11)>> = Mutex::new(Vec::new());

/// A PKCS#11 call failed: which call, and the return value's name.
fn call(token: &str, e: &CkError) -> KeyError {
    let detail = match e {
        CkError::Pkcs11(rv, function) => format!("{function} returned {rv:?}"),
        other => other.to_string(),
    };
    KeyError::Token(token.to_owned(), detail)
}

/// Whether `e` means the session (or the token) is gone, so that a new
/// session may succeed where this one failed.
fn session_lost(e: &CkError) -> bool {
    matches!(
        e,
        CkError::Pkcs11(
            RvError::SessionHandleInvalid
                | RvError::SessionClosed
                | RvError::DeviceRemoved
                | RvError::TokenNotPresent
                | RvError::UserNotLoggedIn
                | RvError::KeyHandleInvalid
                | RvError::ObjectHandleInvalid,
            _
        )
    )
}

fn module(path: &Path) -> Result<Pkcs11, KeyError> {
    // A poisoned list only means a panic elsewhere; the list itself is intact.
    let mut modules = MODULES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, loaded)) = modules.iter().find(|(p, _)| p == path) {
        return Ok(loaded.clone());
    }
    // Loading runs the library's code in this process, beside the key:
    // nobody but this user and root may be able to change what is loaded.
    countersign_identity::check_configured_file(path, ConfiguredFile::Pkcs11Module)
        .map_err(|e| KeyError::Pkcs11ModuleRefused(path.to_path_buf(), e.to_string()))?;
    let failed = |detail: String| KeyError::Pkcs11Module(path.to_path_buf(), detail);
    let pkcs11 = Pkcs11::new(path).map_err(|e| failed(e.to_string()))?;
    match pkcs11.initialize(CInitializeArgs::new(CInitializeFlags::OS_LOCKING_OK)) {
        Ok(()) | Err(CkError::Pkcs11(RvError::CryptokiAlreadyInitialized, _)) => {}
        Err(CkError::Pkcs11(rv, _)) => return Err(failed(format!("C_Initialize returned {rv:?}"))),
        Err(e) => return Err(failed(e.to_string())),
    }
    modules.push((path.to_path_buf(), pkcs11.clone()));
    Ok(pkcs11)
}

/// A logged-in session on the token `uri` names.
fn login(uri: &Pkcs11Uri) -> Result<Session, KeyError> {
    let pkcs11 = module(&uri.module_path)?;
    let token = uri.token.as_str();
    let mut found = Vec::new();
    for slot in pkcs11.get_slots_with_token().map_err(|e| call(token, &e))? {
        let info = pkcs11.get_token_info(slot).map_err(|e| call(token, &e))?;
        if info.label().trim_end_matches([' ', '\0']) == token {
            found.push(slot);
        }
    }
    let slot = match found.as_slice() {
        [slot] => *slot,
        [] => return Err(KeyError::TokenNotFound(token.to_owned())),
        _ => {
            return Err(KeyError::Token(
                token.to_owned(),
                "more than one token has this label".to_owned(),
            ));
        }
    };
    let session = pkcs11.open_rw_session(slot).map_err(|e| call(token, &e))?;
    let mut pin = read_private(&uri.pin_source)?;
    // `echo PIN > file` leaves one newline; it is not part of the PIN.
    if pin.last() == Some(&b'\n') {
        pin.pop();
    }
    let pin = RawAuthPin::new(Box::new(pin.to_vec()));
    match session.login_with_raw(UserType::User, &pin) {
        Ok(()) | Err(CkError::Pkcs11(RvError::UserAlreadyLoggedIn, _)) => Ok(session),
        Err(CkError::Pkcs11(
            rv @ (RvError::PinIncorrect
            | RvError::PinInvalid
            | RvError::PinLenRange
            | RvError::PinLocked
            | RvError::PinExpired),
            _,
        )) => Err(KeyError::TokenLogin(token.to_owned(), format!("{rv:?}"))),
        Err(e) => Err(call(token, &e)),
    }
}

/// The template naming `uri`'s key objects of `class`.
fn template(uri: &Pkcs11Uri, class: ObjectClass) -> Vec<Attribute> {
    let mut t = vec![
        Attribute::Class(class),
        Attribute::KeyType(KeyType::EC_EDWARDS),
        Attribute::Token(true),
    ];
    if let Some(object) = &uri.object {
        t.push(Attribute::Label(object.as_bytes().to_vec()));
    }
    if let Some(id) = &uri.id {
        t.push(Attribute::Id(id.clone()));
    }
    t
}

/// The one private key `uri` names.
fn find_private(session: &Session, uri: &Pkcs11Uri) -> Result<ObjectHandle, KeyError> {
    let found = session
        .find_objects(&template(uri, ObjectClass::PRIVATE_KEY))
        .map_err(|e| call(&uri.token, &e))?;
    match found.as_slice() {
        [key] => Ok(*key),
        [] => Err(KeyError::TokenKeyNotFound(
            uri.token.clone(),
            uri.key_name(),
        )),
        _ => Err(KeyError::Token(
            uri.token.clone(),
            format!("more than one Ed25519 private key has {}", uri.key_name()),
        )),
    }
}

/// `CKA_EC_POINT` of an Ed25519 public key: DER OCTET STRING (04 20 + 32
/// bytes), or the 32 bytes bare as some tokens return them.
fn point_of(
    session: &Session,
    uri: &Pkcs11Uri,
    key: ObjectHandle,
) -> Result<VerifyingKey, KeyError> {
    let attrs = session
        .get_attributes(key, &[AttributeType::EcPoint])
        .map_err(|e| call(&uri.token, &e))?;
    let point = attrs.iter().find_map(|a| match a {
        Attribute::EcPoint(p) => Some(p.as_slice()),
        _ => None,
    });
    let raw = match point {
        Some([0x04, 0x20, rest @ ..]) if rest.len() == 32 => rest,
        Some(bare) if bare.len() == 32 => bare,
        _ => {
            return Err(KeyError::Token(
                uri.token.clone(),
                "the public key's CKA_EC_POINT is not an Ed25519 point".to_owned(),
            ));
        }
    };
    let bytes: [u8; 32] = raw.try_into().map_err(|_| KeyError::Format)?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| {
        KeyError::Token(
            uri.token.clone(),
            "the public key's CKA_EC_POINT is not an Ed25519 point".to_owned(),
        )
    })
}

/// Pure Ed25519 (`CKM_EDDSA` without parameters) over `message`.
fn sign_raw(session: &Session, key: ObjectHandle, message: &[u8]) -> Result<[u8; 64], CkError> {
    let mechanism = Mechanism::Eddsa(EddsaParams::new(EddsaSignatureScheme::Pure));
    let signature = session.sign(&mechanism, key, message)?;
    signature.try_into().map_err(|_| CkError::InvalidValue)
}

/// A logged-in session and the private key in it.
#[derive(Debug)]
struct Opened {
    session: Session,
    key: ObjectHandle,
}

/// The Ed25519 proof key on a PKCS#11 token. `Debug` shows the algorithm,
/// the key id and the token label only.
pub struct Pkcs11Key {
    uri: Pkcs11Uri,
    key_id: String,
    verifying: VerifyingKey,
    /// One session per key, reused; `None` after the token was lost, until
    /// the next signature opens a new one.
    opened: Mutex<Option<Opened>>,
}

impl std::fmt::Debug for Pkcs11Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Pkcs11Key(Ed25519 {} on token {:?})",
            self.key_id, self.uri.token
        )
    }
}

impl Pkcs11Key {
    /// Opens the key `uri` names and checks that it is `expected`: its
    /// public key object's `CKA_EC_POINT` (if the token keeps one) and a
    /// probe signature must both match.
    pub fn open(uri: &Pkcs11Uri, expected: VerifyingKey) -> Result<Pkcs11Key, KeyError> {
        let key = Pkcs11Key {
            uri: uri.clone(),
            key_id: key_id(&expected),
            verifying: expected,
            opened: Mutex::new(None),
        };
        let opened = key.open_session()?;
        let public = opened
            .session
            .find_objects(&template(uri, ObjectClass::PUBLIC_KEY))
            .map_err(|e| call(&uri.token, &e))?;
        if let [public] = public.as_slice()
            && point_of(&opened.session, uri, *public)? != expected
        {
            return Err(KeyError::TokenKeyMismatch(uri.token.clone()));
        }
        *key.lock() = Some(opened);
        key.sign_checked(PROBE)?;
        Ok(key)
    }

    /// Generates an Ed25519 key pair on the token `uri` names: the private
    /// key stays on the token (`CKA_TOKEN`, `CKA_SENSITIVE`, not
    /// `CKA_EXTRACTABLE`). Labelled `uri`'s object (default
    /// `countersign-proof`) with `uri`'s id (default: 16 random bytes);
    /// refused if a key with that label or id exists. Returns the key and
    /// the URI that names exactly it.
    pub fn generate(uri: &Pkcs11Uri) -> Result<(Pkcs11Key, Pkcs11Uri), KeyError> {
        let id = match &uri.id {
            Some(id) => id.clone(),
            None => {
                let mut id = vec![0u8; 16];
                getrandom::fill(&mut id).map_err(|_| KeyError::Random)?;
                id
            }
        };
        let label = uri
            .object
            .clone()
            .unwrap_or_else(|| DEFAULT_LABEL.to_owned());
        let named = Pkcs11Uri {
            object: Some(label.clone()),
            ..uri.with_id(id.clone())
        };
        let session = login(&named)?;
        let token = named.token.as_str();
        for clash in [
            vec![Attribute::Label(label.as_bytes().to_vec())],
            vec![Attribute::Id(id.clone())],
        ] {
            let mut t = vec![Attribute::Class(ObjectClass::PRIVATE_KEY)];
            t.extend(clash);
            if !session
                .find_objects(&t)
                .map_err(|e| call(token, &e))?
                .is_empty()
            {
                return Err(KeyError::TokenKeyExists(token.to_owned(), named.key_name()));
            }
        }
        let public_template = [
            Attribute::Token(true),
            Attribute::Private(false),
            Attribute::Verify(true),
            Attribute::EcParams(ED25519_OID_DER.to_vec()),
            Attribute::Label(label.as_bytes().to_vec()),
            Attribute::Id(id.clone()),
        ];
        let private_template = [
            Attribute::Token(true),
            Attribute::Private(true),
            Attribute::Sensitive(true),
            Attribute::Extractable(false),
            Attribute::Sign(true),
            Attribute::Label(label.as_bytes().to_vec()),
            Attribute::Id(id),
        ];
        let (public, private) = session
            .generate_key_pair(
                &Mechanism::EccEdwardsKeyPairGen,
                &public_template,
                &private_template,
            )
            .map_err(|e| call(token, &e))?;
        let verifying = point_of(&session, &named, public)?;
        let key = Pkcs11Key {
            uri: named.clone(),
            key_id: key_id(&verifying),
            verifying,
            opened: Mutex::new(Some(Opened {
                session,
                key: private,
            })),
        };
        key.sign_checked(PROBE)?;
        Ok((key, named))
    }

    /// Destroys the key pair `uri` names on its token (a retirement, or a
    /// rotation the audit chain refused). Absent objects are not an error.
    pub fn destroy(uri: &Pkcs11Uri) -> Result<(), KeyError> {
        let session = login(uri)?;
        for class in [ObjectClass::PRIVATE_KEY, ObjectClass::PUBLIC_KEY] {
            let found = session
                .find_objects(&template(uri, class))
                .map_err(|e| call(&uri.token, &e))?;
            for object in found {
                session
                    .destroy_object(object)
                    .map_err(|e| call(&uri.token, &e))?;
            }
        }
        Ok(())
    }

    /// Whether the token `uri` names is present and takes the PIN.
    pub fn reachable(uri: &Pkcs11Uri) -> Result<(), KeyError> {
        login(uri).map(drop)
    }

    /// The URI naming this key (no secret in it).
    pub fn uri(&self) -> &Pkcs11Uri {
        &self.uri
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Opened>> {
        // A poisoned session slot only means a panic elsewhere; a session
        // in an unknown state is dropped and reopened.
        self.opened.lock().unwrap_or_else(|poisoned| {
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        })
    }

    fn open_session(&self) -> Result<Opened, KeyError> {
        let session = login(&self.uri)?;
        let key = find_private(&session, &self.uri)?;
        Ok(Opened { session, key })
    }

    /// Signs with the one session (reopened once if the token dropped it)
    /// and verifies the signature against the recorded key.
    fn sign_checked(&self, message: &[u8]) -> Result<[u8; 64], KeyError> {
        let mut opened = self.lock();
        let mut reopened = false;
        let signature = loop {
            if opened.is_none() {
                *opened = Some(self.open_session()?);
                reopened = true;
            }
            let Some(o) = opened.as_ref() else {
                continue;
            };
            match sign_raw(&o.session, o.key, message) {
                Ok(signature) => break signature,
                Err(e) if session_lost(&e) && !reopened => *opened = None,
                Err(e) => {
                    if session_lost(&e) {
                        *opened = None;
                    }
                    return Err(call(&self.uri.token, &e));
                }
            }
        };
        self.verifying
            .verify_strict(message, &Signature::from_bytes(&signature))
            .map_err(|_| KeyError::TokenKeyMismatch(self.uri.token.clone()))?;
        Ok(signature)
    }
}

impl ProofSigner for Pkcs11Key {
    fn key_id(&self) -> &str {
        &self.key_id
    }

    fn verifying_key(&self) -> VerifyingKey {
        self.verifying
    }

    fn sign(&self, message: &[u8]) -> Result<[u8; 64], KeyError> {
        self.sign_checked(message)
    }
}
