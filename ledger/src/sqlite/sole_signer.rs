//! SQLite is single-signer: a signer that serves a SQLite ledger holds an
//! exclusive `flock` on `<database>.signer-lock` for as long as it serves,
//! and a second signer that finds it taken refuses to start
//! ([`LedgerError::AnotherSigner`]). Two signers need PostgreSQL, where
//! every piece of decision state lives in rows the signers lock.
//!
//! The lock is the kernel's: it goes with the process (a crashed signer
//! leaves nothing to clean up), and administrative commands (`passkeys
//! enrolment-code`, `keys rotate`) do not take it, so they work while the
//! signer serves.

use std::fs::File;
use std::path::Path;

use rustix::fs::{FlockOperation, flock};

use crate::error::LedgerError;

/// Held while this process serves as the signer of a SQLite ledger.
#[derive(Debug)]
pub(crate) struct SoleSignerLock {
    _file: File,
}

/// Take the signer lock of the database at `database`, without waiting.
pub(crate) fn claim(database: &Path) -> Result<SoleSignerLock, LedgerError> {
    let file = super::writer_lock::lock_file(database, ".signer-lock", "signer lock")?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(SoleSignerLock { _file: file }),
        Err(rustix::io::Errno::WOULDBLOCK) => {
            Err(LedgerError::AnotherSigner(database.display().to_string()))
        }
        Err(e) => Err(LedgerError::Database(format!(
            "cannot lock the signer lock: {e}"
        ))),
    }
}
