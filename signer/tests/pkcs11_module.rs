//! The PKCS#11 `module-path` gets the registry's file checks before the
//! library is loaded: loading runs its code inside the signer, beside the
//! key, so nobody but the signer's user and root may be able to change it
//! or any directory on the way to it.
//!
//! The module here is a tiny shared library whose constructor creates a
//! marker file when it is loaded (built with the system C compiler, which
//! the build needs anyway): a refusal with no marker proves nothing was
//! loaded, and the control case (a safe copy, loaded, marker written)
//! proves the marker would have told. Without `cc` the tests print SKIPPED.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_signer::key::KeyError;
use countersign_signer::pkcs11::{Pkcs11Key, Pkcs11Uri};

/// A directory holding `lib/module.so` (mode 0644, directory 0755) whose
/// constructor creates `loaded` beside `lib/`.
struct Module {
    dir: tempfile::TempDir,
}

impl Module {
    /// Builds the module, or `None` (SKIPPED) without a C compiler.
    fn build(test: &str) -> Option<Module> {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        std::fs::create_dir(&lib).unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o755)).unwrap();
        let source = dir.path().join("module.c");
        let marker = dir.path().join("loaded");
        std::fs::write(
            &source,
            format!(
                "#include <stdio.h>\n__attribute__((constructor)) static void loaded(void) {{ FILE *f = fopen({:?}, \"w\"); if (f) fclose(f); }}\n",
                marker.display().to_string()
            ),
        )
        .unwrap();
        let module = lib.join("module.so");
        let Ok(out) = Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&module)
            .arg(&source)
            .output()
        else {
            println!("SKIPPED {test}: no C compiler (cc)");
            return None;
        };
        assert!(out.status.success(), "{out:?}");
        std::fs::set_permissions(&module, std::fs::Permissions::from_mode(0o644)).unwrap();
        Some(Module { dir })
    }

    fn lib(&self) -> PathBuf {
        self.dir.path().join("lib")
    }

    fn path(&self) -> PathBuf {
        self.lib().join("module.so")
    }

    fn was_loaded(&self) -> bool {
        self.dir.path().join("loaded").exists()
    }

    /// What the signer answers when asked to use a key behind `module`.
    fn open(&self, module: &Path) -> KeyError {
        let pin = self.dir.path().join("pin");
        std::fs::write(&pin, "1234\n").unwrap();
        std::fs::set_permissions(&pin, std::fs::Permissions::from_mode(0o600)).unwrap();
        let uri = Pkcs11Uri::parse(&format!(
            "pkcs11:token=t;object=proof?module-path={}&pin-source=file:{}",
            module.display(),
            pin.display()
        ))
        .unwrap();
        Pkcs11Key::reachable(&uri).unwrap_err()
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn refused(path: &Path, reason: String) -> KeyError {
    KeyError::Pkcs11ModuleRefused(path.to_path_buf(), reason)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

#[test]
fn a_safe_module_is_loaded_so_the_marker_would_tell() {
    let Some(m) = Module::build("a_safe_module_is_loaded_so_the_marker_would_tell") else {
        return;
    };
    // Not a PKCS#11 library (no C_GetFunctionList), but it passed the
    // checks and was loaded: its constructor ran.
    assert!(matches!(m.open(&m.path()), KeyError::Pkcs11Module(p, _) if p == m.path()));
    assert!(m.was_loaded());
}

#[test]
fn refuses_a_group_or_world_writable_module_before_loading_it() {
    let Some(m) = Module::build("refuses_a_group_or_world_writable_module_before_loading_it")
    else {
        return;
    };
    for mode in [0o664, 0o646] {
        chmod(&m.path(), mode);
        assert_eq!(
            m.open(&m.path()),
            refused(
                &m.path(),
                format!(
                    "{} has mode {mode:04o}: the group or others can write to it",
                    m.path().display()
                )
            )
        );
        assert!(!m.was_loaded());
    }
}

#[test]
fn refuses_a_module_in_a_directory_others_can_write_before_loading_it() {
    let Some(m) =
        Module::build("refuses_a_module_in_a_directory_others_can_write_before_loading_it")
    else {
        return;
    };
    chmod(&m.lib(), 0o777);
    assert_eq!(
        m.open(&m.path()),
        refused(
            &m.path(),
            format!(
                "{} has mode 0777: the group or others can write to it",
                m.lib().display()
            )
        )
    );
    assert!(!m.was_loaded());
    // Through a symbolic link from a safe directory: the target's directory
    // is checked just the same.
    let link = m.dir.path().join("link.so");
    std::os::unix::fs::symlink(m.path(), &link).unwrap();
    assert_eq!(
        m.open(&link),
        refused(
            &link,
            format!(
                "{} has mode 0777: the group or others can write to it",
                m.lib().display()
            )
        )
    );
    assert!(!m.was_loaded());
}

#[test]
fn refuses_a_module_owned_by_another_user_before_loading_it() {
    let Some(m) = Module::build("refuses_a_module_owned_by_another_user_before_loading_it") else {
        return;
    };
    if !is_root() {
        println!("SKIPPED: needs root to give the module to another user");
        return;
    }
    // nobody (65534), present on every Debian system.
    std::os::unix::fs::chown(m.path(), Some(65534), None).unwrap();
    assert_eq!(
        m.open(&m.path()),
        refused(
            &m.path(),
            format!(
                "{} is owned by uid 65534, expected uid 0",
                m.path().display()
            )
        )
    );
    assert!(!m.was_loaded());
}

#[test]
fn the_distributions_softhsm_module_passes_the_checks() {
    let module = Path::new("/usr/lib/softhsm/libsofthsm2.so");
    if !module.exists() {
        println!("SKIPPED: softhsm2 is not installed (scripts/test installs it)");
        return;
    }
    // A symbolic link into /usr/lib/x86_64-linux-gnu/softhsm/, root's.
    countersign_identity::check_configured_file(
        module,
        countersign_identity::ConfiguredFile::Pkcs11Module,
    )
    .unwrap();
}
