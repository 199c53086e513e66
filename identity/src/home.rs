//! The countersign home directory: where it is, what lives in it, how it is
//! created (`init`) and the permission checks every process runs before
//! trusting it (`check`).
//!
//! The home is chosen by environment only (`$COUNTERSIGN_HOME`, else
//! `$HOME/.config/countersign`), never by the current working directory.
//! This module does not parse the configuration file nor create the PKI.

use std::ffi::OsString;
use std::fs::DirBuilder;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::IdentityError;
use crate::files::{
    check_private_dir_metadata, check_private_file_metadata, read_private, write_private_new,
};
use crate::peer::{ApproverName, ClientCredential, Role};

const CONFIG_TEMPLATE: &str = "\
# countersign configuration. Relative paths are anchored to this directory,
# never to the current working directory. Unknown keys are refused.
# Every commented value below is the default; uncomment to change it.
#
# [signer]
# addr = \"127.0.0.1:7443\"        # the signer listens here; heads connect here
# fallback_addrs = []              # other signers of this PostgreSQL ledger, tried in order
#
# [ledger]
# url = \"sqlite://ledger.db\"
#
# [registry]
# path = \"operations.toml\"
#
# [policy]
# audience = \"countersign:<principal>\"
# default_lifetime_secs = 300
# max_lifetime_secs = 1800          # the signer never issues longer than 1800
#
# [verifier]
# max_lifetime_secs = 1800

# The web console (`countersign console`), served over https only at
# https://console.localhost:7444/ (browsers resolve *.localhost to loopback;
# trust its CA once with `countersign console trust`). The MCP head points
# people at its page for a proposal. Without this section no console is
# configured. `names` adds https names to reach it by (the first is the one
# links name); `cert` and `key` serve your own certificate for them.
# `mdns = true` answers for the `.local` names over multicast DNS on addr's
# network, for a phone with no DNS set up (docs/console.md, On a phone).
[console]
addr = \"127.0.0.1:7444\"
# names = [\"console.localhost\"]
# cert = \"/etc/countersign/console.pem\"
# key = \"/etc/countersign/console.key\"
# mdns = false

# Passkeys (WebAuthn, checked by the signer): with this section a person
# enrols passkeys in the console; `required = true` makes every approval
# need one (otherwise only operations with `require_passkey = true` do).
# [passkeys]
# required = false
# rp_id = \"console.localhost\"
# origins = [\"https://console.localhost:7444\"]

# Metrics: `GET /metrics` (OpenMetrics text) on a loopback address, one per
# kind of process; a process without its key serves none (the default).
# [metrics]
# signer = \"127.0.0.1:9464\"
# api = \"127.0.0.1:9465\"
# mcp = \"127.0.0.1:9466\"
# console = \"127.0.0.1:9467\"
";

/// The countersign home directory (mode 0700, owned by the user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    root: PathBuf,
}

/// What [`Home::init`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    /// The installation's principal (new or existing).
    pub principal: String,
    /// Paths created by this call (empty when everything already existed).
    pub created: Vec<PathBuf>,
}

impl Home {
    /// Resolves the home from the environment: `$COUNTERSIGN_HOME` (must be
    /// absolute) or else `$HOME/.config/countersign`.
    pub fn resolve() -> Result<Home, IdentityError> {
        Home::resolve_from(
            std::env::var_os("COUNTERSIGN_HOME"),
            std::env::var_os("HOME"),
        )
    }

    /// [`Home::resolve`] with the two variables given explicitly (for tests
    /// and callers that read the environment themselves). Empty counts as unset.
    pub fn resolve_from(
        countersign_home: Option<OsString>,
        home: Option<OsString>,
    ) -> Result<Home, IdentityError> {
        if let Some(dir) = countersign_home.filter(|v| !v.is_empty()) {
            return Home::at(PathBuf::from(dir));
        }
        let home = home
            .filter(|v| !v.is_empty())
            .ok_or(IdentityError::NoHome)?;
        let home = PathBuf::from(home);
        if !home.is_absolute() {
            return Err(IdentityError::HomeNotAbsolute(home));
        }
        Home::at(home.join(".config").join("countersign"))
    }

    /// A home at an explicit absolute path.
    pub fn at(path: impl Into<PathBuf>) -> Result<Home, IdentityError> {
        let root = path.into();
        if !root.is_absolute() {
            return Err(IdentityError::HomeNotAbsolute(root));
        }
        Ok(Home { root })
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("config.toml")
    }
    /// `principal`: the installation's principal id.
    pub fn principal_path(&self) -> PathBuf {
        self.root.join("principal")
    }
    /// `operations.toml`: the default registry location.
    pub fn registry_path(&self) -> PathBuf {
        self.root.join("operations.toml")
    }
    /// `ledger.db`: the default SQLite ledger.
    pub fn ledger_path(&self) -> PathBuf {
        self.root.join("ledger.db")
    }
    /// `pki/`: certificates and their keys.
    pub fn pki_dir(&self) -> PathBuf {
        self.root.join("pki")
    }
    /// `pki/ca.pem`.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.pki_dir().join("ca.pem")
    }
    /// `pki/ca.key`.
    pub fn ca_key_path(&self) -> PathBuf {
        self.pki_dir().join("ca.key")
    }
    /// `pki/signer.pem`: the signer's server certificate.
    pub fn signer_cert_path(&self) -> PathBuf {
        self.pki_dir().join("signer.pem")
    }
    /// `pki/signer.key`.
    pub fn signer_tls_key_path(&self) -> PathBuf {
        self.pki_dir().join("signer.key")
    }
    /// `pki/console-ca.pem`: the name-constrained CA a person's browser
    /// trusts for the console (`countersign console trust`).
    pub fn console_ca_cert_path(&self) -> PathBuf {
        self.pki_dir().join("console-ca.pem")
    }
    /// `pki/console-ca.key`.
    pub fn console_ca_key_path(&self) -> PathBuf {
        self.pki_dir().join("console-ca.key")
    }
    /// `pki/console.pem`: the console's server certificate.
    pub fn console_cert_path(&self) -> PathBuf {
        self.pki_dir().join("console.pem")
    }
    /// `pki/console.key`: its key, readable by the console's user alone.
    pub fn console_key_path(&self) -> PathBuf {
        self.pki_dir().join("console.key")
    }
    /// `pki/<role>.pem`: a client certificate.
    pub fn client_cert_path(&self, role: Role) -> PathBuf {
        self.credential_cert_path(&ClientCredential::Role(role))
    }
    /// `pki/<role>.key`.
    pub fn client_key_path(&self, role: Role) -> PathBuf {
        self.credential_key_path(&ClientCredential::Role(role))
    }
    /// A client credential's certificate: `pki/<role>.pem` for a role,
    /// `pki/approver-<name>.pem` for a named approver.
    pub fn credential_cert_path(&self, credential: &ClientCredential) -> PathBuf {
        self.pki_dir()
            .join(format!("{}.pem", credential.file_stem()))
    }
    /// A client credential's key: `pki/<role>.key` or `pki/approver-<name>.key`.
    pub fn credential_key_path(&self, credential: &ClientCredential) -> PathBuf {
        self.pki_dir()
            .join(format!("{}.key", credential.file_stem()))
    }
    /// `signer/`: the signer's private directory.
    pub fn signer_dir(&self) -> PathBuf {
        self.root.join("signer")
    }
    /// `notify/`: the notify process's private directory (its delivery
    /// state), created by `countersign notify serve`.
    pub fn notify_dir(&self) -> PathBuf {
        self.root.join("notify")
    }
    /// Creates `notify/` (0700, this user's) unless it is there, and checks
    /// it: the notify process's first start.
    pub fn ensure_notify_dir(&self) -> Result<PathBuf, IdentityError> {
        let dir = self.notify_dir();
        create_private_dir(&dir)?;
        check_dir(&dir, true)?;
        Ok(dir)
    }
    /// `notify/notify-state.json`: every delivery of the notify process
    /// (pending with its next attempt, delivered, failed), 0600.
    pub fn notify_state_path(&self) -> PathBuf {
        self.notify_dir().join("notify-state.json")
    }
    /// `notify/vapid.key`: the Web Push VAPID private key (PKCS#8 PEM,
    /// 0600), read only by the process that sends pushes.
    pub fn vapid_key_path(&self) -> PathBuf {
        self.notify_dir().join("vapid.key")
    }
    /// `notify/vapid.pub`: the VAPID public key (base64url), which the
    /// console gives paired browsers to subscribe with.
    pub fn vapid_public_path(&self) -> PathBuf {
        self.notify_dir().join("vapid.pub")
    }
    /// `signer/ed25519.key`: the proof-signing key (only the signer reads it).
    pub fn signing_key_path(&self) -> PathBuf {
        self.signer_dir().join("ed25519.key")
    }

    /// `signer/keys.json`: the signer's key index (which key is active,
    /// which still verify); written by the signer, 0600.
    pub fn key_index_path(&self) -> PathBuf {
        self.signer_dir().join("keys.json")
    }

    /// Whether this home holds the signer's proof keys (the first key
    /// file, or a key index after rotations retired it).
    pub fn has_signing_keys(&self) -> bool {
        self.signing_key_path().exists() || self.key_index_path().exists()
    }

    /// Creates the directory layout (0700 directories, the principal once,
    /// a commented `config.toml`, an empty 0600 `ledger.db` so SQLite's files
    /// inherit 0600) and then runs [`Home::check`]. Idempotent: existing
    /// files are never rewritten, and an existing directory with the wrong
    /// mode is refused rather than repaired.
    pub fn init(&self) -> Result<InitReport, IdentityError> {
        let mut created = Vec::new();
        if let Some(parent) = self.root.parent() {
            DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| IdentityError::io(parent, &e))?;
        }
        for dir in [self.root.clone(), self.pki_dir(), self.signer_dir()] {
            if create_private_dir(&dir)? {
                created.push(dir);
            }
        }
        let principal_path = self.principal_path();
        match write_private_new(
            &principal_path,
            format!("{}\n", generate_principal()?).as_bytes(),
        ) {
            Ok(()) => created.push(principal_path),
            Err(IdentityError::AlreadyExists(_)) => {}
            Err(e) => return Err(e),
        }
        for (path, contents) in [
            (self.config_path(), CONFIG_TEMPLATE.as_bytes()),
            (self.ledger_path(), b"".as_slice()),
        ] {
            match write_private_new(&path, contents) {
                Ok(()) => created.push(path),
                Err(IdentityError::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        self.check()?;
        Ok(InitReport {
            principal: self.principal()?,
            created,
        })
    }

    /// Refuses the home unless: the directory and its `pki/` and `signer/`
    /// subdirectories are 0700; every known file is a regular file with no
    /// permission beyond 0600; everything is owned by the current user; no
    /// known path is a symlink; and the principal file exists.
    pub fn check(&self) -> Result<(), IdentityError> {
        check_dir(&self.root, true)?;
        check_dir(&self.pki_dir(), false)?;
        check_dir(&self.signer_dir(), false)?;
        check_dir(&self.notify_dir(), false)?;
        let mut files = vec![
            self.principal_path(),
            self.config_path(),
            self.registry_path(),
            self.ledger_path(),
            self.root.join("ledger.db-wal"),
            self.root.join("ledger.db-shm"),
            self.root.join("ledger.db.lock"),
            self.ca_cert_path(),
            self.ca_key_path(),
            self.signer_cert_path(),
            self.signer_tls_key_path(),
            self.console_ca_cert_path(),
            self.console_ca_key_path(),
            self.console_cert_path(),
            self.console_key_path(),
            self.signing_key_path(),
            self.key_index_path(),
            self.notify_state_path(),
            self.vapid_key_path(),
            self.vapid_public_path(),
        ];
        for credential in Role::ALL
            .map(ClientCredential::Role)
            .into_iter()
            .chain(dev_named_approvers()?.map(ClientCredential::NamedApprover))
        {
            files.push(self.credential_cert_path(&credential));
            files.push(self.credential_key_path(&credential));
        }
        for file in &files {
            match std::fs::symlink_metadata(file) {
                Ok(meta) => check_private_file_metadata(file, &meta)?,
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(IdentityError::io(file, &e)),
            }
        }
        if !self.principal_path().exists() {
            return Err(IdentityError::Missing(self.principal_path()));
        }
        Ok(())
    }

    /// The installation's principal id, read from the principal file.
    pub fn principal(&self) -> Result<String, IdentityError> {
        let path = self.principal_path();
        let bytes = read_private(&path)?;
        let text =
            std::str::from_utf8(&bytes).map_err(|_| IdentityError::BadPrincipal(path.clone()))?;
        let text = text.strip_suffix('\n').unwrap_or(text);
        if !is_valid_principal(text) {
            return Err(IdentityError::BadPrincipal(path));
        }
        Ok(text.to_owned())
    }
}

/// The named approver credentials every home has (`countersign init`
/// creates them with the development PKI): `console`, the web console's.
pub const DEV_NAMED_APPROVERS: [&str; 1] = ["console"];

/// [`DEV_NAMED_APPROVERS`], parsed.
pub(crate) fn dev_named_approvers() -> Result<[ApproverName; 1], IdentityError> {
    let [console] = DEV_NAMED_APPROVERS;
    let console = ApproverName::parse(console)
        .map_err(|_| IdentityError::BadApproverName(console.to_owned()))?;
    Ok([console])
}

/// A fresh principal id: `pr_` + 32 lowercase hex characters (128 random bits).
pub fn generate_principal() -> Result<String, IdentityError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| IdentityError::Pki(format!("random: {e}")))?;
    Ok(countersign_verifier::Principal::from_random(bytes).into_string())
}

/// Whether `s` is `pr_` followed by exactly 32 lowercase hex characters.
pub fn is_valid_principal(s: &str) -> bool {
    s.parse::<countersign_verifier::Principal>().is_ok()
}

/// Creates a 0700 directory; `Ok(false)` if it already existed (then checked).
pub(crate) fn create_private_dir(dir: &Path) -> Result<bool, IdentityError> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {
            // A restrictive umask may have cleared owner bits; the new directory is ours.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| IdentityError::io(dir, &e))?;
            check_dir(dir, true)?;
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            check_dir(dir, true)?;
            Ok(false)
        }
        Err(e) => Err(IdentityError::io(dir, &e)),
    }
}

fn check_dir(dir: &Path, required: bool) -> Result<(), IdentityError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => check_private_dir_metadata(dir, &meta),
        Err(e) if e.kind() == ErrorKind::NotFound && !required => Ok(()),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(IdentityError::Missing(dir.to_path_buf())),
        Err(e) => Err(IdentityError::io(dir, &e)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::{Config, DEFAULT_CONSOLE_ADDR};

    #[test]
    fn the_config_init_writes_configures_the_console_and_defaults_the_rest() {
        let home = Home::at("/h/cs").unwrap();
        let principal = "pr_0123456789abcdef0123456789abcdef";
        let written = Config::from_toml_str(&home, principal, CONFIG_TEMPLATE).unwrap();
        assert_eq!(
            written.console.as_ref().map(|c| c.addr),
            Some(DEFAULT_CONSOLE_ADDR.parse().unwrap())
        );
        let defaults = Config::from_toml_str(&home, principal, "").unwrap();
        assert_eq!(
            Config {
                console: None,
                ..written
            },
            defaults
        );
    }

    /// The agent's home in the hardened installation (deploy/setup-system.sh)
    /// holds only what a head needs: no approver credential, no CA key, no
    /// signer directory or signing key. `check` accepts it, and still
    /// refuses it the moment one of its files is readable by others.
    #[test]
    fn check_accepts_a_head_only_home_and_still_refuses_a_wide_head_key() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path().join("agent")).unwrap();
        create_private_dir(home.root()).unwrap();
        create_private_dir(&home.pki_dir()).unwrap();
        let principal = generate_principal().unwrap();
        for (path, text) in [
            (home.principal_path(), format!("{principal}\n")),
            (home.config_path(), String::new()),
            (home.registry_path(), String::new()),
            (home.ca_cert_path(), "ca".to_owned()),
            (home.client_cert_path(Role::Head), "cert".to_owned()),
            (home.client_key_path(Role::Head), "key".to_owned()),
        ] {
            write_private_new(&path, text.as_bytes()).unwrap();
        }
        assert_eq!(home.check(), Ok(()));
        assert_eq!(home.principal().unwrap(), principal);
        for absent in [
            home.signer_dir(),
            home.signing_key_path(),
            home.ca_key_path(),
            home.client_cert_path(Role::Approver),
            home.client_key_path(Role::Approver),
        ] {
            assert!(!absent.exists(), "{}", absent.display());
        }

        let key = home.client_key_path(Role::Head);
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            home.check(),
            Err(IdentityError::FileMode {
                path: key,
                mode: 0o644
            })
        );
    }
}
