//! The signer's key set: which key signs now, which keys still verify, and
//! how a rotation or a retirement changes that.
//!
//! Owns: the index `signer/keys.json` (0600, replaced atomically under
//! `signer/keys.json.lock`), the key files it names (`signer/ed25519.key`
//! for the first key, `signer/keys/<kid>.key` after that, each 0600 through
//! `key.rs`) or the `pkcs11:` URI of a key on a token (`pkcs11/`), the
//! transparent migration of a home that has only `ed25519.key`, and the
//! running signer's cached view, re-read when the index file changes (a
//! `stat` per use; an active token key already open is kept, so its one
//! session is reused). Must not: sign (that is `issue.rs` through
//! `ProofSigner`), log or print key material, or publish a retired key
//! again: a retirement deletes the key file, or destroys the key pair on
//! the token, and keeps only the index line.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use countersign_identity::IdentityError;
use countersign_identity::files::{read_private, replace_private_locked};
use countersign_verifier::keys::{key_id, parse_paserk_public, paserk_public};
use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};

use crate::key::{KeyError, ProofKey, ProofSigner};
use crate::pkcs11::{Pkcs11Key, Pkcs11Uri};

/// The index file, in the signer directory.
const INDEX: &str = "keys.json";
/// The lock every change of the index takes.
const INDEX_LOCK: &str = "keys.json.lock";
/// The directory of keys made by rotations, in the signer directory.
const KEYS_DIR: &str = "keys";
/// The first key's file, in the signer directory (kept where it always was).
const FIRST_KEY: &str = "ed25519.key";

/// Why the key set could not be read or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyStoreError {
    /// A key file was refused or could not be made.
    #[error("{0}")]
    Key(#[from] KeyError),
    /// The index or the keys directory could not be read or written.
    #[error("key index: {0}")]
    File(#[from] IdentityError),
    /// The index is not what this signer writes (or names no active key).
    #[error("key index {0} is malformed: {1}")]
    Malformed(PathBuf, String),
    /// No key with that id in the index.
    #[error("no key {0} in the key index")]
    UnknownKey(String),
    /// Only a verifying key can be retired; the active one signs.
    #[error("key {0} is {1}: only a verifying key can be retired (rotate first)")]
    NotVerifying(String, &'static str),
    /// The audit chain refused the change, so it was not made.
    #[error("recording the change in the audit chain: {0}")]
    Audit(String),
}

/// What a key of the set is for now: the verifier's key-set status
/// (active signs; verifying only verifies, until retired; retired is never
/// published again and its key file is deleted), written in the index as
/// its name.
pub use countersign_verifier::KeyStatus;

/// The index writes a status as its name (`KeyStatus::as_str`).
mod status_name {
    use countersign_verifier::KeyStatus;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(status: &KeyStatus, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(status.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<KeyStatus, D::Error> {
        let name = String::deserialize(d)?;
        KeyStatus::parse(&name)
            .ok_or_else(|| D::Error::custom(format!("unknown key status {name:?}")))
    }
}

/// One line of the index. A key is either a file (`"file"`, as every index
/// before token keys wrote it) or on a token (`"pkcs11"`, its URI): exactly
/// one of the two.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyEntry {
    /// PASERK `k4.pid` id.
    pub key_id: String,
    /// PASERK `k4.public` of the verifying key.
    pub public: String,
    /// What the key is for now.
    #[serde(with = "status_name")]
    pub status: KeyStatus,
    /// The key file, relative to the signer directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    file: Option<String>,
    /// The canonical `pkcs11:` URI of a key on a token (no secret in it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pkcs11: Option<String>,
}

impl KeyEntry {
    /// Where the key is held, as `keys list` shows it: `file` or its `pkcs11:` URI.
    pub fn backend(&self) -> &str {
        self.pkcs11.as_deref().unwrap_or("file")
    }
}

/// Where an index entry's private key is.
enum Location {
    File(PathBuf),
    Token(Pkcs11Uri),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Index {
    keys: Vec<KeyEntry>,
}

/// A verifying key's signer, or why it could not be opened.
pub(crate) type OpenedSigner = Result<Arc<dyn ProofSigner>, KeyStoreError>;

/// A key the signer publishes (active or verifying).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKey {
    /// PASERK `k4.pid` id.
    pub key_id: String,
    /// The verifying key.
    pub key: VerifyingKey,
    /// Active or verifying.
    pub status: KeyStatus,
}

/// The key set as loaded at one version of the index.
#[derive(Debug, Clone)]
pub(crate) struct Current {
    /// The key that signs.
    pub(crate) signer: Arc<dyn ProofSigner>,
    /// The keys to publish: the active one first, then the verifying ones.
    pub(crate) published: Arc<Vec<PublishedKey>>,
}

/// Identifies one version of the index file cheaply: a rename makes a new inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    modified_ns: i64,
    len: u64,
}

/// The key set of one signer directory, with the running signer's cache.
#[derive(Debug)]
pub struct KeyStore {
    dir: PathBuf,
    cache: Mutex<Option<(Stamp, Current)>>,
}

impl KeyStore {
    /// The signer directory this key set lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key set of `signer_dir` (`<home>/signer`), creating the first
    /// key or migrating a lone `ed25519.key` if there is no index yet.
    /// Returns the store and whether a key was created.
    pub fn open(signer_dir: &Path) -> Result<(KeyStore, bool), KeyStoreError> {
        let store = KeyStore {
            dir: signer_dir.to_path_buf(),
            cache: Mutex::new(None),
        };
        let created = store.ensure_index()?;
        Ok((store, created))
    }

    fn index_path(&self) -> PathBuf {
        self.dir.join(INDEX)
    }

    /// Writes the index if it is missing: naming `ed25519.key` (created if
    /// absent) as the active key.
    fn ensure_index(&self) -> Result<bool, KeyStoreError> {
        if self.index_path().exists() {
            return Ok(false);
        }
        let mut created = false;
        let first = self.dir.join(FIRST_KEY);
        let key = if first.exists() {
            ProofKey::load_file(&first)?
        } else {
            created = true;
            match ProofKey::create_file(&first) {
                Ok(key) => key,
                // Lost a race with another process creating it: load theirs.
                Err(_) if first.exists() => {
                    created = false;
                    ProofKey::load_file(&first)?
                }
                Err(e) => return Err(e.into()),
            }
        };
        let entry = entry_for(&key, KeyStatus::Active, Some(FIRST_KEY.to_owned()), None);
        self.change(|index| {
            // Another process may have written it meanwhile: keep theirs.
            if index.keys.is_empty() {
                index.keys.push(entry);
            }
            Ok(())
        })?;
        Ok(created)
    }

    /// Every key of the index, retired ones included, in order of creation.
    pub fn list(&self) -> Result<Vec<KeyEntry>, KeyStoreError> {
        Ok(self.read_index()?.keys)
    }

    /// The keys published now: the active one first, then the verifying ones.
    pub fn published(&self) -> Result<Vec<PublishedKey>, KeyStoreError> {
        Ok(self.current()?.published.as_ref().clone())
    }

    /// The key set as the index says now: reloaded only when the index file
    /// changed since the last call (one `stat` otherwise).
    pub(crate) fn current(&self) -> Result<Current, KeyStoreError> {
        let path = self.index_path();
        let meta = std::fs::symlink_metadata(&path).map_err(|e| io_error(&path, &e))?;
        let stamp = Stamp {
            inode: meta.ino(),
            modified_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            len: meta.len(),
        };
        // A poisoned cache only means a panic elsewhere; reload.
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, current)) = cache.as_ref()
            && *seen == stamp
        {
            return Ok(current.clone());
        }
        let current = self.load(cache.as_ref().map(|(_, c)| c))?;
        *cache = Some((stamp, current.clone()));
        Ok(current)
    }

    fn load(&self, previous: Option<&Current>) -> Result<Current, KeyStoreError> {
        let index = self.read_index()?;
        let mut active: Option<Arc<dyn ProofSigner>> = None;
        let mut published = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        for entry in &index.keys {
            let key = self.public_of(entry)?;
            if !seen.insert(entry.key_id.as_str()) {
                return Err(self.malformed("a key is listed twice"));
            }
            match entry.status {
                KeyStatus::Active if active.is_some() => {
                    return Err(self.malformed("more than one active key"));
                }
                KeyStatus::Active => {
                    let signer: Arc<dyn ProofSigner> = match self.location(entry)? {
                        Location::File(path) => {
                            let signer = ProofKey::load_file(&path)?;
                            if ProofSigner::verifying_key(&signer) != key {
                                return Err(self.malformed("an active key file holds another key"));
                            }
                            Arc::new(signer)
                        }
                        // The same token key as before: keep it and its session.
                        Location::Token(_)
                            if previous.is_some_and(|p| p.signer.key_id() == entry.key_id) =>
                        {
                            previous
                                .map(|p| p.signer.clone())
                                .ok_or_else(|| self.malformed("no active key"))?
                        }
                        Location::Token(uri) => Arc::new(Pkcs11Key::open(&uri, key)?),
                    };
                    active = Some(signer);
                    published.insert(
                        0,
                        PublishedKey {
                            key_id: entry.key_id.clone(),
                            key,
                            status: KeyStatus::Active,
                        },
                    );
                }
                KeyStatus::Verifying => published.push(PublishedKey {
                    key_id: entry.key_id.clone(),
                    key,
                    status: KeyStatus::Verifying,
                }),
                KeyStatus::Retired => {}
            }
        }
        let signer = active.ok_or_else(|| self.malformed("no active key"))?;
        Ok(Current {
            signer,
            published: Arc::new(published),
        })
    }

    /// The signers of the verifying keys (not the active one), each loaded
    /// from its file or opened on its token, or why it could not be.
    ///
    /// For one purpose only: re-deriving, byte for byte, a proof that a key
    /// issued while it was active (`recover.rs`), which creates no new
    /// authorization. A verifying key never signs new claims: `Decide`
    /// signs with [`Current::signer`] alone. A retired key has no file or
    /// token key any more and is not listed.
    pub(crate) fn verifying_signers(&self) -> Result<Vec<(String, OpenedSigner)>, KeyStoreError> {
        let index = self.read_index()?;
        let open = |entry: &KeyEntry| -> Result<Arc<dyn ProofSigner>, KeyStoreError> {
            let key = self.public_of(entry)?;
            Ok(match self.location(entry)? {
                Location::File(path) => {
                    let signer = ProofKey::load_file(&path)?;
                    if ProofSigner::verifying_key(&signer) != key {
                        return Err(self.malformed("a verifying key file holds another key"));
                    }
                    Arc::new(signer)
                }
                Location::Token(uri) => Arc::new(Pkcs11Key::open(&uri, key)?),
            })
        };
        Ok(index
            .keys
            .iter()
            .filter(|e| e.status == KeyStatus::Verifying)
            .map(|e| (e.key_id.clone(), open(e)))
            .collect())
    }

    /// Makes a new key active; the active key becomes verifying. `record`
    /// writes the `key_rotated` event first: if the audit chain refuses,
    /// nothing changes. Returns the new key id.
    pub async fn rotate<F, Fut, E>(&self, record: F) -> Result<String, KeyStoreError>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let keys_dir = self.dir.join(KEYS_DIR);
        make_private_dir(&keys_dir)?;
        let key = ProofKey::generate()?;
        let file = format!("{KEYS_DIR}/{}.key", key.key_id());
        let path = self.dir.join(&file);
        key.write_new_file(&path)?;
        let entry = entry_for(&key, KeyStatus::Active, Some(file), None);
        let undo = || {
            let _ = std::fs::remove_file(&path);
        };
        self.activate(entry, record, undo).await
    }

    /// Makes a new key, generated on the token `uri` names, active; the
    /// active key becomes verifying. The same `key_rotated` event as
    /// [`Self::rotate`]; if the audit chain refuses, the new key pair is
    /// destroyed and nothing changes. A URI, PIN or token that does not
    /// work changes nothing either. Returns the new key id.
    pub async fn rotate_to_token<F, Fut, E>(
        &self,
        uri: &str,
        record: F,
    ) -> Result<String, KeyStoreError>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let uri = Pkcs11Uri::parse(uri)?;
        // The index must be readable before the token is changed.
        self.read_index()?;
        let (key, named) = Pkcs11Key::generate(&uri)?;
        let entry = KeyEntry {
            key_id: ProofSigner::key_id(&key).to_owned(),
            public: paserk_public(&ProofSigner::verifying_key(&key)),
            status: KeyStatus::Active,
            file: None,
            pkcs11: Some(named.to_string()),
        };
        drop(key);
        let undo = || {
            let _ = Pkcs11Key::destroy(&named);
        };
        self.activate(entry, record, undo).await
    }

    /// Records `entry`'s rotation, then writes it as the active key.
    async fn activate<F, Fut, E>(
        &self,
        entry: KeyEntry,
        record: F,
        undo: impl FnOnce(),
    ) -> Result<String, KeyStoreError>
    where
        F: FnOnce(String) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let kid = entry.key_id.clone();
        if let Err(e) = record(kid.clone()).await {
            undo();
            return Err(KeyStoreError::Audit(e.to_string()));
        }
        self.change(|index| {
            for old in &mut index.keys {
                if old.status == KeyStatus::Active {
                    old.status = KeyStatus::Verifying;
                }
            }
            index.keys.push(entry);
            Ok(())
        })?;
        Ok(kid)
    }

    /// Retires a verifying key: it is never published again and its key
    /// file is deleted. `record` writes the `key_retired` event first.
    pub async fn retire<F, Fut, E>(&self, key_id: &str, record: F) -> Result<(), KeyStoreError>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: std::fmt::Display,
    {
        let check = |index: &Index| -> Result<KeyEntry, KeyStoreError> {
            let entry = index
                .keys
                .iter()
                .find(|e| e.key_id == key_id)
                .ok_or_else(|| KeyStoreError::UnknownKey(key_id.to_owned()))?;
            match entry.status {
                KeyStatus::Verifying => Ok(entry.clone()),
                other => Err(KeyStoreError::NotVerifying(
                    key_id.to_owned(),
                    other.as_str(),
                )),
            }
        };
        let entry = check(&self.read_index()?)?;
        // A token key is destroyed after the index changes: find out now
        // whether the token can be reached, before anything is recorded.
        if let Location::Token(uri) = self.location(&entry)? {
            Pkcs11Key::reachable(&uri)?;
        }
        record()
            .await
            .map_err(|e| KeyStoreError::Audit(e.to_string()))?;
        let mut retired = None;
        self.change(|index| {
            let entry = check(index)?;
            for e in &mut index.keys {
                if e.key_id == key_id {
                    e.status = KeyStatus::Retired;
                }
            }
            retired = Some(entry);
            Ok(())
        })?;
        match retired.map(|entry| self.location(&entry)).transpose()? {
            Some(Location::File(path)) => match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_error(&path, &e).into()),
            },
            Some(Location::Token(uri)) => Pkcs11Key::destroy(&uri)?,
            None => {}
        }
        Ok(())
    }

    fn read_index(&self) -> Result<Index, KeyStoreError> {
        let bytes = read_private(&self.index_path())?;
        self.parse(&bytes)
    }

    fn parse(&self, bytes: &[u8]) -> Result<Index, KeyStoreError> {
        serde_json::from_slice(bytes).map_err(|e| self.malformed(&e.to_string()))
    }

    /// Changes the index under its lock, atomically.
    fn change(
        &self,
        edit: impl FnOnce(&mut Index) -> Result<(), KeyStoreError>,
    ) -> Result<(), KeyStoreError> {
        replace_private_locked(
            &self.index_path(),
            &self.dir.join(INDEX_LOCK),
            |current| -> Result<Vec<u8>, KeyStoreError> {
                let mut index = match current {
                    Some(bytes) => self.parse(bytes)?,
                    None => Index::default(),
                };
                edit(&mut index)?;
                serde_json::to_vec_pretty(&index).map_err(|e| self.malformed(&e.to_string()))
            },
        )
    }

    fn public_of(&self, entry: &KeyEntry) -> Result<VerifyingKey, KeyStoreError> {
        let key = parse_paserk_public(&entry.public)
            .ok_or_else(|| self.malformed("a public key is not a k4.public PASERK"))?;
        if key_id(&key) != entry.key_id {
            return Err(self.malformed("a key id does not match its key"));
        }
        Ok(key)
    }

    /// Where `entry`'s key is: a key file or a token, exactly one.
    fn location(&self, entry: &KeyEntry) -> Result<Location, KeyStoreError> {
        match (&entry.file, &entry.pkcs11) {
            (Some(_), None) => Ok(Location::File(self.key_file(entry)?)),
            (None, Some(uri)) => Ok(Location::Token(
                Pkcs11Uri::parse(uri).map_err(|e| self.malformed(&e.to_string()))?,
            )),
            _ => Err(self.malformed("a key names neither or both of a file and a pkcs11 URI")),
        }
    }

    /// The key file of `entry`: `ed25519.key` or `keys/<kid>.key`, nothing else.
    fn key_file(&self, entry: &KeyEntry) -> Result<PathBuf, KeyStoreError> {
        let well_formed = entry.key_id.strip_prefix("k4.pid.").is_some_and(|id| {
            !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if !well_formed {
            return Err(self.malformed("a key id is not a k4.pid"));
        }
        let expected = format!("{KEYS_DIR}/{}.key", entry.key_id);
        let file = entry.file.as_deref().unwrap_or_default();
        if file != FIRST_KEY && file != expected {
            return Err(self.malformed("a key file is outside the signer directory's key files"));
        }
        Ok(self.dir.join(file))
    }

    fn malformed(&self, why: &str) -> KeyStoreError {
        KeyStoreError::Malformed(self.index_path(), why.to_owned())
    }
}

fn entry_for(
    key: &ProofKey,
    status: KeyStatus,
    file: Option<String>,
    pkcs11: Option<String>,
) -> KeyEntry {
    KeyEntry {
        key_id: key.key_id().to_owned(),
        public: paserk_public(&key.verifying_key()),
        status,
        file,
        pkcs11,
    }
}

fn io_error(path: &Path, e: &std::io::Error) -> IdentityError {
    IdentityError::Io {
        path: path.to_path_buf(),
        kind: e.kind(),
        detail: e.to_string(),
    }
}

/// Creates `dir` with mode 0700 if it is absent.
fn make_private_dir(dir: &Path) -> Result<(), IdentityError> {
    use std::os::unix::fs::DirBuilderExt as _;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_error(dir, &e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    async fn recorded(_kid: String) -> Result<(), String> {
        Ok(())
    }

    #[tokio::test]
    async fn migrates_a_lone_key_then_rotates_and_retires() {
        let dir = tempfile::tempdir().unwrap();
        let first = ProofKey::create_file(&dir.path().join(FIRST_KEY)).unwrap();
        let (store, created) = KeyStore::open(dir.path()).unwrap();
        assert!(!created);
        assert_eq!(store.current().unwrap().signer.key_id(), first.key_id());

        let new = store.rotate(recorded).await.unwrap();
        let current = store.current().unwrap();
        assert_eq!(current.signer.key_id(), new);
        let statuses: Vec<_> = current
            .published
            .iter()
            .map(|k| (k.key_id.clone(), k.status))
            .collect();
        assert_eq!(
            statuses,
            [
                (new.clone(), KeyStatus::Active),
                (first.key_id().to_owned(), KeyStatus::Verifying)
            ]
        );

        assert_eq!(
            store
                .retire(&new, || async { Ok::<(), String>(()) })
                .await
                .unwrap_err(),
            KeyStoreError::NotVerifying(new.clone(), "active")
        );
        store
            .retire(first.key_id(), || async { Ok::<(), String>(()) })
            .await
            .unwrap();
        assert!(!dir.path().join(FIRST_KEY).exists());
        let published = store.published().unwrap();
        assert_eq!(published.len(), 1);
        assert_eq!(published[0].key_id, new);
        assert_eq!(store.list().unwrap()[0].status, KeyStatus::Retired);
    }

    #[tokio::test]
    async fn refuses_an_index_with_two_active_keys_or_a_path_for_an_id() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = KeyStore::open(dir.path()).unwrap();
        store.rotate(recorded).await.unwrap();
        let mut index = store.read_index().unwrap();
        index.keys[0].status = KeyStatus::Active;
        std::fs::remove_file(store.index_path()).unwrap();
        countersign_identity::files::write_private_new(
            &store.index_path(),
            &serde_json::to_vec(&index).unwrap(),
        )
        .unwrap();
        assert_eq!(
            store.current().unwrap_err(),
            store.malformed("more than one active key")
        );
        let entry = KeyEntry {
            key_id: "k4.pid.../../x".into(),
            public: String::new(),
            status: KeyStatus::Verifying,
            file: Some("keys/k4.pid.../../x.key".into()),
            pkcs11: None,
        };
        assert_eq!(
            store.key_file(&entry).unwrap_err(),
            store.malformed("a key id is not a k4.pid")
        );
    }

    #[test]
    fn an_entry_names_exactly_one_of_a_file_and_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = KeyStore::open(dir.path()).unwrap();
        let mut entry = store.list().unwrap().remove(0);
        // A file entry is written as every index before token keys wrote it.
        let text = serde_json::to_string(&entry).unwrap();
        assert!(text.contains(r#""file":"ed25519.key""#) && !text.contains("pkcs11"));
        assert_eq!(entry.backend(), "file");
        let uri = "pkcs11:token=t;object=o?module-path=/m.so&pin-source=file:/p";
        entry.pkcs11 = Some(uri.to_owned());
        assert!(matches!(
            store.location(&entry),
            Err(KeyStoreError::Malformed(_, why)) if why.contains("neither or both")
        ));
        entry.file = None;
        assert_eq!(entry.backend(), uri);
        assert!(matches!(store.location(&entry), Ok(Location::Token(_))));
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(serde_json::from_str::<KeyEntry>(&text).unwrap(), entry);
        entry.pkcs11 = Some("pkcs11:token=t;object=o?pin-value=1".to_owned());
        assert!(matches!(
            store.location(&entry),
            Err(KeyStoreError::Malformed(_, why)) if why.contains("pin-value is refused")
        ));
    }

    #[tokio::test]
    async fn a_refused_audit_record_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (store, created) = KeyStore::open(dir.path()).unwrap();
        assert!(created);
        let before = store.list().unwrap();
        let err = store
            .rotate(|_| async { Err::<(), _>("ledger down") })
            .await
            .unwrap_err();
        assert_eq!(err, KeyStoreError::Audit("ledger down".into()));
        assert_eq!(store.list().unwrap(), before);
        assert_eq!(
            std::fs::read_dir(dir.path().join(KEYS_DIR))
                .unwrap()
                .count(),
            0
        );
    }
}
