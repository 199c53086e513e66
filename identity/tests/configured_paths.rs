//! The registry and a SQLite ledger named by `config.toml`, inside the home
//! or outside it: `Config::load` refuses them unless nobody but the user
//! (and root) can write them or any directory on the way to them.
#![allow(clippy::unwrap_used)]

use std::fs::Permissions;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use countersign_identity::files::write_private_new;
use countersign_identity::{Config, ConfiguredFile, Home, IdentityError, check_configured_file};

/// An initialized home and, beside it, a place outside it (0700, real path).
struct Setup {
    _dir: tempfile::TempDir,
    home: Home,
    outside: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    chmod(&base, 0o700);
    let home = Home::at(base.join("cs")).unwrap();
    home.init().unwrap();
    let outside = base.join("outside");
    std::fs::create_dir(&outside).unwrap();
    chmod(&outside, 0o700);
    Setup {
        _dir: dir,
        home,
        outside,
    }
}

impl Setup {
    /// Replaces `config.toml` with `text`.
    fn configure(&self, text: &str) {
        std::fs::remove_file(self.home.config_path()).unwrap();
        write_private_new(&self.home.config_path(), text.as_bytes()).unwrap();
    }

    /// Points `[registry] path` at `path`.
    fn registry_at(&self, path: &Path) {
        self.configure(&format!("[registry]\npath = \"{}\"\n", path.display()));
    }

    /// Points `[ledger] url` at the SQLite file `path`.
    fn ledger_at(&self, path: &Path) {
        self.configure(&format!(
            "[ledger]\nurl = \"sqlite://{}\"\n",
            path.display()
        ));
    }

    /// Creates `outside/name`, a directory with exactly `mode`.
    fn dir(&self, name: &str, mode: u32) -> PathBuf {
        let dir = self.outside.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        chmod(&dir, mode);
        dir
    }

    /// Writes `dir/operations.toml` with exactly `mode` and points
    /// `[registry] path` at it.
    fn registry_in(&self, dir: &Path, mode: u32) -> PathBuf {
        let registry = dir.join("operations.toml");
        file(&registry, mode, "");
        self.registry_at(&registry);
        registry
    }

    fn load(&self) -> Result<Config, IdentityError> {
        Config::load(&self.home)
    }
}

/// The refusal of `path`, which the group or others can write.
fn writable(path: &Path, mode: u32) -> Result<Config, IdentityError> {
    Err(IdentityError::WritableByOthers {
        path: path.to_path_buf(),
        mode,
    })
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
}

/// A file with exactly `mode`, whatever the umask.
fn file(path: &Path, mode: u32, text: &str) {
    std::fs::write(path, text).unwrap();
    chmod(path, mode);
}

fn is_root() -> bool {
    rustix::process::getuid().as_raw() == 0
}

#[test]
fn accepts_a_registry_outside_the_home_that_only_its_owner_can_write() {
    let s = setup();
    let registry = s.registry_in(&s.dir("shared", 0o755), 0o644);
    assert_eq!(s.load().unwrap().registry, registry);
}

#[test]
fn refuses_a_world_writable_registry_outside_the_home() {
    let s = setup();
    let registry = s.registry_in(&s.outside, 0o666);
    assert_eq!(s.load(), writable(&registry, 0o666));
}

#[test]
fn refuses_a_group_writable_registry_outside_the_home() {
    let s = setup();
    let registry = s.registry_in(&s.outside, 0o664);
    assert_eq!(s.load(), writable(&registry, 0o664));
}

#[test]
fn refuses_a_registry_in_a_directory_others_can_write_even_if_sticky() {
    for mode in [0o777, 0o775, 0o1777] {
        let s = setup();
        let shared = s.dir("shared", mode);
        s.registry_in(&shared, 0o644);
        assert_eq!(s.load(), writable(&shared, mode), "{mode:o}");
    }
}

#[test]
fn refuses_a_registry_below_a_world_writable_directory() {
    let s = setup();
    let open = s.dir("open", 0o777);
    s.registry_in(&s.dir("open/mine", 0o755), 0o644);
    assert_eq!(s.load(), writable(&open, 0o777));
}

#[test]
fn accepts_a_sticky_world_writable_directory_above_the_registrys_own() {
    let s = setup();
    s.dir("tmp", 0o1777);
    let registry = s.registry_in(&s.dir("tmp/mine", 0o700), 0o600);
    assert_eq!(s.load().unwrap().registry, registry);
}

#[test]
fn refuses_a_symlinked_registry_outside_the_home() {
    let s = setup();
    let real = s.outside.join("real.toml");
    file(&real, 0o644, "");
    let link = s.outside.join("operations.toml");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    s.registry_at(&link);
    assert_eq!(s.load(), Err(IdentityError::Symlink(link)));
}

#[test]
fn refuses_a_registry_that_is_not_a_regular_file() {
    let s = setup();
    let registry = s.dir("operations.toml", 0o700);
    s.registry_at(&registry);
    assert_eq!(s.load(), Err(IdentityError::NotAFile(registry)));
}

#[test]
fn follows_a_symlinked_directory_and_refuses_where_it_leads() {
    let s = setup();
    let open = s.dir("open", 0o777);
    let target = s.dir("open/ops", 0o755);
    file(&target.join("operations.toml"), 0o644, "");
    // The link itself sits in a safe directory; what it leads through does not.
    let link = s.outside.join("ops");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    s.registry_at(&link.join("operations.toml"));
    assert_eq!(s.load(), writable(&open, 0o777));
}

#[test]
fn refuses_a_symlinked_directory_that_sits_in_a_world_writable_directory() {
    let s = setup();
    let safe = s.dir("safe", 0o755);
    file(&safe.join("operations.toml"), 0o644, "");
    let open = s.dir("open", 0o777);
    // Anyone could repoint this link.
    std::os::unix::fs::symlink(&safe, open.join("ops")).unwrap();
    s.registry_at(&open.join("ops").join("operations.toml"));
    assert_eq!(s.load(), writable(&open, 0o777));
}

#[test]
fn accepts_a_registry_through_a_safe_symlinked_directory() {
    let s = setup();
    let safe = s.dir("safe", 0o755);
    file(&safe.join("operations.toml"), 0o644, "");
    std::os::unix::fs::symlink("safe", s.outside.join("ops")).unwrap();
    s.registry_at(&s.outside.join("ops").join("operations.toml"));
    s.load().unwrap();
}

#[test]
fn refuses_a_registry_in_a_subdirectory_of_the_home_that_others_can_write() {
    let s = setup();
    let ops = s.home.root().join("ops");
    std::fs::create_dir(&ops).unwrap();
    chmod(&ops, 0o777);
    file(&ops.join("x.toml"), 0o600, "");
    s.configure("[registry]\npath = \"ops/x.toml\"\n");
    assert_eq!(s.load(), writable(&ops, 0o777));
}

#[test]
fn refuses_a_registry_or_a_directory_of_another_user_when_root_can_test_it() {
    if !is_root() {
        return;
    }
    let s = setup();
    let shared = s.dir("shared", 0o755);
    let registry = s.registry_in(&shared, 0o644);
    let other_owner = |path: &Path| {
        Err(IdentityError::WrongOwner {
            path: path.to_path_buf(),
            owner: 12345,
            expected: 0,
        })
    };
    std::os::unix::fs::chown(&registry, Some(12345), None).unwrap();
    assert_eq!(s.load(), other_owner(&registry));
    std::os::unix::fs::chown(&registry, Some(0), None).unwrap();
    std::os::unix::fs::chown(&shared, Some(12345), None).unwrap();
    assert_eq!(s.load(), other_owner(&shared));
}

#[test]
fn refuses_another_users_symlink_in_a_sticky_directory_when_root_can_test_it() {
    if !is_root() {
        return;
    }
    let s = setup();
    let safe = s.dir("safe", 0o755);
    file(&safe.join("operations.toml"), 0o644, "");
    let link = s.dir("tmp", 0o1777).join("ops");
    std::os::unix::fs::symlink(&safe, &link).unwrap();
    std::os::unix::fs::lchown(&link, Some(12345), None).unwrap();
    s.registry_at(&link.join("operations.toml"));
    assert_eq!(
        s.load(),
        Err(IdentityError::WrongOwner {
            path: link,
            owner: 12345,
            expected: 0
        })
    );
}

#[test]
fn accepts_a_ledger_outside_the_home_that_does_not_exist_yet() {
    let s = setup();
    let ledger = s.outside.join("ledger.db");
    s.ledger_at(&ledger);
    assert_eq!(
        s.load().unwrap().ledger_url,
        format!("sqlite://{}", ledger.display())
    );
}

#[test]
fn refuses_a_ledger_outside_the_home_readable_by_others() {
    let s = setup();
    let ledger = s.outside.join("ledger.db");
    file(&ledger, 0o644, "");
    s.ledger_at(&ledger);
    assert_eq!(
        s.load(),
        Err(IdentityError::FileMode {
            path: ledger,
            mode: 0o644
        })
    );
}

#[test]
fn refuses_a_planted_file_beside_a_ledger_outside_the_home() {
    for suffix in ["-wal", "-shm", "-journal", ".lock"] {
        let s = setup();
        let ledger = s.outside.join("ledger.db");
        file(&ledger, 0o600, "");
        let planted = s.outside.join(format!("ledger.db{suffix}"));
        file(&planted, 0o666, "");
        s.ledger_at(&ledger);
        assert_eq!(
            s.load(),
            Err(IdentityError::FileMode {
                path: planted,
                mode: 0o666
            }),
            "{suffix}"
        );
    }
}

#[test]
fn refuses_a_ledger_in_a_directory_others_can_write_even_before_it_exists() {
    let s = setup();
    let open = s.dir("open", 0o1777);
    s.ledger_at(&open.join("ledger.db"));
    assert_eq!(s.load(), writable(&open, 0o1777));
}

#[test]
fn refuses_a_symlinked_ledger_outside_the_home() {
    let s = setup();
    let real = s.outside.join("real.db");
    file(&real, 0o600, "");
    let link = s.outside.join("ledger.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    s.ledger_at(&link);
    assert_eq!(s.load(), Err(IdentityError::Symlink(link)));
}

#[test]
fn a_postgres_ledger_names_no_file_to_check() {
    let s = setup();
    s.configure("[ledger]\nurl = \"postgres://u@127.0.0.1/db\"\n");
    s.load().unwrap();
}

#[test]
fn refuses_a_relative_configured_path() {
    assert_eq!(
        check_configured_file(Path::new("ops/x.toml"), ConfiguredFile::Registry),
        Err(IdentityError::RelativePath(PathBuf::from("ops/x.toml")))
    );
}

/// `[policy] cedar` and `cedar_log_only` are held as the registry is: a
/// policy file another user can write, or that another user owns, is
/// refused before the signer reads it (a forbid it could delete, a permit
/// it could add).
#[test]
fn refuses_a_cedar_policy_file_others_can_write_or_own() {
    let s = setup();
    let policy = s.home.root().join("policy.cedar");
    for key in ["cedar", "cedar_log_only"] {
        file(&policy, 0o666, "");
        s.configure(&format!("[policy]\n{key} = \"policy.cedar\"\n"));
        assert_eq!(s.load(), writable(&policy, 0o666), "{key}");
        chmod(&policy, 0o644);
        s.load().unwrap();
        if is_root() {
            std::os::unix::fs::chown(&policy, Some(12345), None).unwrap();
            assert_eq!(
                s.load(),
                Err(IdentityError::WrongOwner {
                    path: policy.clone(),
                    owner: 12345,
                    expected: 0,
                }),
                "{key}"
            );
            std::os::unix::fs::chown(&policy, Some(0), None).unwrap();
        }
    }
}
