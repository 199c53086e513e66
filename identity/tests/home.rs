//! Home directory resolution, init and the permission checks.
#![allow(clippy::unwrap_used)]

use std::ffi::OsString;
use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use countersign_identity::{Config, Home, IdentityError, is_valid_principal};

fn fresh() -> (tempfile::TempDir, Home) {
    let dir = tempfile::tempdir().unwrap();
    let home = Home::at(dir.path().join("cs")).unwrap();
    (dir, home)
}

fn chmod(path: &std::path::Path, mode: u32) {
    std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
}

#[test]
fn resolves_countersign_home_before_home() {
    let h = Home::resolve_from(Some("/x/cs".into()), Some("/home/u".into())).unwrap();
    assert_eq!(h.root(), std::path::Path::new("/x/cs"));
    let h = Home::resolve_from(None, Some("/home/u".into())).unwrap();
    assert_eq!(
        h.root(),
        std::path::Path::new("/home/u/.config/countersign")
    );
    let h = Home::resolve_from(Some(OsString::new()), Some("/home/u".into())).unwrap();
    assert_eq!(
        h.root(),
        std::path::Path::new("/home/u/.config/countersign")
    );
}

#[test]
fn refuses_relative_countersign_home() {
    assert_eq!(
        Home::resolve_from(Some("rel/cs".into()), Some("/home/u".into())),
        Err(IdentityError::HomeNotAbsolute(PathBuf::from("rel/cs")))
    );
    assert_eq!(
        Home::resolve_from(None, Some("home".into())),
        Err(IdentityError::HomeNotAbsolute(PathBuf::from("home")))
    );
    assert_eq!(Home::resolve_from(None, None), Err(IdentityError::NoHome));
}

#[test]
fn init_creates_private_layout_once_and_keeps_the_principal() {
    let (_dir, home) = fresh();
    let first = home.init().unwrap();
    assert!(is_valid_principal(&first.principal));
    assert!(first.created.contains(&home.principal_path()));
    let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(home.root().to_path_buf()), 0o700);
    assert_eq!(mode(home.pki_dir()), 0o700);
    assert_eq!(mode(home.signer_dir()), 0o700);
    assert_eq!(mode(home.principal_path()), 0o600);
    assert_eq!(mode(home.config_path()), 0o600);

    let second = home.init().unwrap();
    assert_eq!(second.principal, first.principal);
    assert!(second.created.is_empty());
    home.check().unwrap();
    // The commented template parses to the defaults, and configures the console.
    let config = Config::load(&home).unwrap();
    assert_eq!(
        config.policy.audience,
        format!("countersign:{}", first.principal)
    );
    assert_eq!(
        config.console.map(|c| c.addr),
        Some(countersign_identity::DEFAULT_CONSOLE_ADDR.parse().unwrap())
    );
}

#[test]
fn refuses_home_directory_not_0700() {
    let (_dir, home) = fresh();
    home.init().unwrap();
    chmod(home.root(), 0o755);
    assert_eq!(
        home.check(),
        Err(IdentityError::DirMode {
            path: home.root().to_path_buf(),
            mode: 0o755
        })
    );
    // init refuses instead of silently repairing.
    assert!(matches!(home.init(), Err(IdentityError::DirMode { .. })));
}

#[test]
fn refuses_subdirectory_not_0700() {
    let (_dir, home) = fresh();
    home.init().unwrap();
    chmod(&home.pki_dir(), 0o750);
    assert_eq!(
        home.check(),
        Err(IdentityError::DirMode {
            path: home.pki_dir(),
            mode: 0o750
        })
    );
}

#[test]
fn refuses_file_wider_than_0600() {
    let (_dir, home) = fresh();
    home.init().unwrap();
    chmod(&home.config_path(), 0o644);
    assert_eq!(
        home.check(),
        Err(IdentityError::FileMode {
            path: home.config_path(),
            mode: 0o644
        })
    );
}

#[test]
fn refuses_symlinked_home() {
    let (dir, home) = fresh();
    home.init().unwrap();
    let link = Home::at(dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(home.root(), link.root()).unwrap();
    assert_eq!(
        link.check(),
        Err(IdentityError::Symlink(link.root().to_path_buf()))
    );
}

#[test]
fn refuses_symlinked_principal_and_config() {
    let (dir, home) = fresh();
    home.init().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::copy(home.config_path(), &elsewhere).unwrap();
    std::fs::remove_file(home.config_path()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, home.config_path()).unwrap();
    assert_eq!(
        home.check(),
        Err(IdentityError::Symlink(home.config_path()))
    );
    assert_eq!(
        Config::load(&home),
        Err(IdentityError::Symlink(home.config_path()))
    );
}

#[test]
fn refuses_files_owned_by_another_user_when_root_can_test_it() {
    // Changing ownership needs privileges; the check itself is unit-tested
    // through the mode and symlink cases, this asserts the exact error when possible.
    let (_dir, home) = fresh();
    home.init().unwrap();
    if rustix::process::getuid().as_raw() != 0 {
        return;
    }
    std::os::unix::fs::chown(home.config_path(), Some(12345), None).unwrap();
    assert_eq!(
        home.check(),
        Err(IdentityError::WrongOwner {
            path: home.config_path(),
            owner: 12345,
            expected: 0
        })
    );
}

#[test]
fn refuses_malformed_principal_file() {
    let (_dir, home) = fresh();
    home.init().unwrap();
    std::fs::remove_file(home.principal_path()).unwrap();
    countersign_identity::files::write_private_new(&home.principal_path(), b"pr_nothex\n").unwrap();
    assert_eq!(
        home.principal(),
        Err(IdentityError::BadPrincipal(home.principal_path()))
    );
}

#[test]
fn check_requires_an_initialized_home() {
    let (_dir, home) = fresh();
    assert_eq!(
        home.check(),
        Err(IdentityError::Missing(home.root().to_path_buf()))
    );
}
