//! The premise runner's own restriction (Landlock), applied by the runner
//! to itself before it becomes the premise program (`exec`), so that the
//! program inherits it: every filesystem access is allowed except beneath
//! the hidden directories (the countersign home: the signing key, the CA
//! key, the credentials, a SQLite ledger), where nothing is allowed, not
//! even reading. Ptrace of a process outside the sandbox is denied by
//! Landlock itself, and (ABI 6+) so are signals to it and connections to
//! its abstract unix sockets: a program run as the signer's user cannot
//! read the key out of the signer's memory either.
//!
//! Landlock grants rights to whole hierarchies, so "everything but H" is
//! built from the path of each hidden directory: every sibling of every
//! directory on the way from `/` to it gets every right; the directories
//! on the way get only `read_dir` (so listing `/` works; that grant also
//! covers the hidden directory's names, not its contents). Entries created
//! later beside that path are not covered and so are denied.
//!
//! Best effort: on a kernel without Landlock (before 5.13, or not enabled)
//! nothing is restricted, and [`Restricted`] says so; the caller logs it
//! (see [`crate::premise::PremiseRunner::probe`]). This module must not
//! exec anything itself.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};
use rustix::fs::{FileType, Mode, OFlags};

/// The newest Landlock ABI this code was written and tested against.
const TESTED_ABI: ABI = ABI::V6;

/// What the restriction achieved on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restricted {
    /// Every right asked for is enforced.
    Fully,
    /// Landlock is there, but an older ABI: the files are hidden, some
    /// newer rights (truncate, ioctl, signal and socket scoping) are not
    /// restricted.
    Partially,
    /// No Landlock: nothing is restricted.
    Not,
}

impl Restricted {
    /// One line for the log: what a premise program can and cannot reach.
    pub fn describe(self) -> &'static str {
        match self {
            Restricted::Fully => {
                "premise programs run under Landlock: the countersign home is out of their reach"
            }
            Restricted::Partially => {
                "premise programs run under Landlock (an older ABI): the countersign home is out \
                 of their reach, some newer restrictions are not enforced"
            }
            Restricted::Not => {
                "this kernel has no Landlock: premise programs run as this user, unrestricted, \
                 and can read what it can read (run them as another user: see the hardened \
                 installation)"
            }
        }
    }

    /// `fully`, `partially` or `not`: the runner's `probe` answer.
    pub fn as_str(self) -> &'static str {
        match self {
            Restricted::Fully => "fully",
            Restricted::Partially => "partially",
            Restricted::Not => "not",
        }
    }

    /// The inverse of [`Restricted::as_str`].
    pub fn parse(text: &str) -> Option<Restricted> {
        match text {
            "fully" => Some(Restricted::Fully),
            "partially" => Some(Restricted::Partially),
            "not" => Some(Restricted::Not),
            _ => None,
        }
    }
}

/// Why the restriction could not be built (the runner then refuses to run
/// the program: an error here is a bug or a hidden path that is not a
/// directory, never a missing kernel feature).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A hidden path is not absolute or cannot be resolved.
    #[error("hidden directory {path:?}: {reason}")]
    Hidden {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Landlock refused the ruleset.
    #[error("landlock: {0}")]
    Landlock(String),
}

/// Restricts the calling thread (the runner is single-threaded) and every
/// program it then execs: nothing beneath `hidden`, everything else.
pub fn restrict_self(hidden: &[PathBuf]) -> Result<Restricted, SandboxError> {
    let hidden = resolve(hidden)?;
    let all = AccessFs::from_all(TESTED_ABI);
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.scope(Scope::from_all(TESTED_ABI)))
        .map_err(|e| SandboxError::Landlock(e.to_string()))?;
    let mut created = ruleset
        .create()
        .map_err(|e| SandboxError::Landlock(e.to_string()))?;
    for (path, access) in grants(&hidden, all)? {
        // Never through a symbolic link: a link planted beside the path to
        // the home and pointing into it would otherwise grant the home.
        // A link needs no rule: Landlock judges the file it leads to.
        let Ok(fd) = rustix::fs::open(
            &path,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            // Gone since it was listed: nothing to grant.
            continue;
        };
        let kind = rustix::fs::fstat(&fd)
            .map(|st| FileType::from_raw_mode(st.st_mode))
            .map_err(|e| SandboxError::Landlock(format!("{}: {e}", path.display())))?;
        let access = match kind {
            FileType::Symlink => continue,
            FileType::Directory => access,
            _ => access & AccessFs::from_file(TESTED_ABI),
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| SandboxError::Landlock(e.to_string()))?;
    }
    let status = created
        .restrict_self()
        .map_err(|e| SandboxError::Landlock(e.to_string()))?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Restricted::Fully,
        RulesetStatus::PartiallyEnforced => Restricted::Partially,
        RulesetStatus::NotEnforced => Restricted::Not,
    })
}

/// The hidden directories, absolute and with every symbolic link resolved
/// (Landlock judges the file reached, so the rules must name real paths).
fn resolve(hidden: &[PathBuf]) -> Result<BTreeSet<PathBuf>, SandboxError> {
    hidden
        .iter()
        .map(|path| {
            let fail = |reason: String| SandboxError::Hidden {
                path: path.clone(),
                reason,
            };
            if !path.is_absolute() {
                return Err(fail("not absolute".to_owned()));
            }
            let real = path.canonicalize().map_err(|e| fail(e.to_string()))?;
            if real == Path::new("/") {
                return Err(fail("hiding / would hide everything".to_owned()));
            }
            Ok(real)
        })
        .collect()
}

/// The rules for "everything but `hidden`": `(path, rights)` pairs.
fn grants(
    hidden: &BTreeSet<PathBuf>,
    all: BitFlags<AccessFs>,
) -> Result<Vec<(PathBuf, BitFlags<AccessFs>)>, SandboxError> {
    // Every directory strictly above a hidden one.
    let mut above: BTreeSet<PathBuf> = BTreeSet::new();
    for path in hidden {
        let mut up = path.parent();
        while let Some(dir) = up {
            above.insert(dir.to_path_buf());
            up = dir.parent();
        }
    }
    let mut rules = Vec::new();
    if hidden.is_empty() {
        rules.push((PathBuf::from("/"), all));
        return Ok(rules);
    }
    for dir in &above {
        rules.push((dir.clone(), BitFlags::from(AccessFs::ReadDir)));
        let entries = std::fs::read_dir(dir).map_err(|e| SandboxError::Hidden {
            path: dir.clone(),
            reason: e.to_string(),
        })?;
        for entry in entries.flatten() {
            let path = entry.path();
            if hidden.contains(&path) || above.contains(&path) {
                continue;
            }
            rules.push((path, all));
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn grants_every_sibling_on_the_way_and_nothing_beneath_the_hidden_directory() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        for dir in ["home/signer", "home/pki", "other"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        std::fs::write(base.join("file"), "x").unwrap();
        let hidden = BTreeSet::from([base.join("home")]);
        let all = AccessFs::from_all(TESTED_ABI);
        let rules = grants(&hidden, all).unwrap();
        let granted: Vec<&Path> = rules
            .iter()
            .filter(|(_, a)| *a == all)
            .map(|(p, _)| p.as_path())
            .collect();
        assert!(granted.contains(&base.join("other").as_path()));
        assert!(granted.contains(&base.join("file").as_path()));
        assert!(granted.contains(&Path::new("/usr")));
        for (path, access) in &rules {
            assert!(!path.starts_with(base.join("home")), "{path:?} granted");
            if base.starts_with(path) {
                assert_eq!(*access, BitFlags::from(AccessFs::ReadDir), "{path:?}");
            }
        }
    }

    #[test]
    fn refuses_to_hide_a_relative_path_or_the_root() {
        assert!(matches!(
            resolve(&[PathBuf::from("home")]),
            Err(SandboxError::Hidden { .. })
        ));
        assert!(matches!(
            resolve(&[PathBuf::from("/")]),
            Err(SandboxError::Hidden { .. })
        ));
    }

    #[test]
    fn each_status_reads_back_and_the_fallback_says_nothing_is_restricted() {
        for r in [Restricted::Fully, Restricted::Partially, Restricted::Not] {
            assert_eq!(Restricted::parse(r.as_str()), Some(r));
        }
        assert!(Restricted::Not.describe().contains("unrestricted"));
    }
}
