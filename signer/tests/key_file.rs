//! The signing key file: created new with mode 0600, read back strictly.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use countersign_identity::IdentityError;
use countersign_signer::key::{KeyError, ProofKey, SECRET_PREFIX};

#[test]
fn created_key_file_round_trips_with_mode_0600() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ed25519.key");
    let key = ProofKey::create_file(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(SECRET_PREFIX));
    assert_eq!(text.len(), SECRET_PREFIX.len() + 86);
    let loaded = ProofKey::load_file(&path).unwrap();
    assert_eq!(loaded.key_id(), key.key_id());
    assert_eq!(loaded.verifying_key(), key.verifying_key());
}

#[test]
fn generated_keys_differ() {
    let a = ProofKey::generate().unwrap();
    let b = ProofKey::generate().unwrap();
    assert_ne!(a.key_id(), b.key_id());
}

#[test]
fn refuses_to_overwrite_an_existing_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ed25519.key");
    ProofKey::create_file(&path).unwrap();
    assert_eq!(
        ProofKey::create_file(&path).unwrap_err(),
        KeyError::File(IdentityError::AlreadyExists(path.clone()))
    );
}

#[test]
fn refuses_key_file_readable_by_group_or_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ed25519.key");
    ProofKey::from_seed(&[9u8; 32])
        .write_new_file(&path)
        .unwrap();
    for mode in [0o644, 0o640, 0o604, 0o660] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = ProofKey::load_file(&path).unwrap_err();
        assert_eq!(
            err,
            KeyError::File(IdentityError::FileMode {
                path: path.clone(),
                mode
            })
        );
        assert!(err.to_string().contains(&format!("{mode:04o}")), "{err}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert!(ProofKey::load_file(&path).is_ok());
}

#[test]
fn refuses_symlinked_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.key");
    ProofKey::from_seed(&[9u8; 32])
        .write_new_file(&real)
        .unwrap();
    let link = dir.path().join("ed25519.key");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    assert_eq!(
        ProofKey::load_file(&link).unwrap_err(),
        KeyError::File(IdentityError::Symlink(link.clone()))
    );
}

#[test]
fn refuses_key_file_with_anything_but_one_paserk_string() {
    let dir = tempfile::tempdir().unwrap();
    let good_path = dir.path().join("good.key");
    ProofKey::from_seed(&[9u8; 32])
        .write_new_file(&good_path)
        .unwrap();
    let good = std::fs::read_to_string(&good_path).unwrap();
    for (i, bad) in [
        format!("{good}\n"),
        format!(" {good}"),
        "k4.secret.".to_owned(),
        String::new(),
    ]
    .into_iter()
    .enumerate()
    {
        let path = dir.path().join(format!("bad{i}.key"));
        std::fs::write(&path, bad).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(ProofKey::load_file(&path).unwrap_err(), KeyError::Format);
    }
}

#[test]
fn refuses_missing_key_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.key");
    assert_eq!(
        ProofKey::load_file(&path).unwrap_err(),
        KeyError::File(IdentityError::Missing(path.clone()))
    );
}
