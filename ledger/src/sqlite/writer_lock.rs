//! The writers' queue of one SQLite ledger across processes: an exclusive
//! `flock` on `<database>.lock`, taken before `BEGIN IMMEDIATE` and released
//! when the transaction ends.
//!
//! Why: SQLite's own write lock is polled. A writer that finds it taken
//! sleeps in the busy handler (1, 2, 5, ... up to 100 ms at a time) and
//! often wakes to find it taken again, so when many processes write at once
//! (32 heads racing one proof) the slowest wait hundreds of milliseconds
//! while the lock sits idle. A blocked `flock` is woken by the kernel the
//! moment the holder releases it. Correctness does not depend on this lock:
//! SQLite's lock still excludes writers (and programs that do not take this
//! lock); it only stops them from queueing by sleep.
//!
//! In one process, writers first queue on an async mutex (the process has
//! one writer connection anyway), so only one of its tasks ever waits in
//! `flock`, on a blocking thread. Waiting is bounded by the busy timeout,
//! after which the write fails closed, as SQLite's would.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::LedgerError;

/// The lock file of one database, opened once per process.
#[derive(Debug, Clone)]
pub(super) struct WriterLock {
    file: Arc<Mutex<File>>,
    timeout: Duration,
}

/// Held while a write transaction runs; dropping it releases the lock.
#[derive(Debug)]
pub(super) struct WriterGuard {
    file: OwnedMutexGuard<File>,
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        let _ = flock(&*self.file, FlockOperation::Unlock);
    }
}

/// Open (creating, mode 0600) the lock file `<database><suffix>`; `what`
/// names it in an error.
pub(super) fn lock_file(database: &Path, suffix: &str, what: &str) -> Result<File, LedgerError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut name = database.as_os_str().to_owned();
    name.push(suffix);
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&name)
        .map_err(|e| LedgerError::Database(format!("cannot open the {what}: {e}")))
}

fn busy() -> LedgerError {
    LedgerError::Database("database is locked (writer queue timed out)".into())
}

impl WriterLock {
    /// Open (creating, mode 0600) `<database>.lock`.
    pub(super) fn open(database: &Path, timeout: Duration) -> Result<WriterLock, LedgerError> {
        let file = lock_file(database, ".lock", "writer lock")?;
        Ok(WriterLock {
            file: Arc::new(Mutex::new(file)),
            timeout,
        })
    }

    /// Wait for this process's turn, then for the other processes'.
    pub(super) async fn acquire(&self) -> Result<WriterGuard, LedgerError> {
        let file = tokio::time::timeout(self.timeout, Arc::clone(&self.file).lock_owned())
            .await
            .map_err(|_| busy())?;
        if flock(&*file, FlockOperation::NonBlockingLockExclusive).is_ok() {
            return Ok(WriterGuard { file });
        }
        // The same open file description: the lock it takes is this one's.
        let shared = file
            .try_clone()
            .map_err(|e| LedgerError::Database(format!("writer lock: {e}")))?;
        let mut waiting = tokio::task::spawn_blocking(move || {
            flock(&shared, FlockOperation::LockExclusive).map(|()| shared)
        });
        match tokio::time::timeout(self.timeout, &mut waiting).await {
            Ok(Ok(Ok(_))) => Ok(WriterGuard { file }),
            Ok(Ok(Err(e))) => Err(LedgerError::Database(format!("writer lock: {e}"))),
            Ok(Err(e)) => Err(LedgerError::Database(format!("writer lock: {e}"))),
            Err(_) => {
                // The blocked thread may still get the lock: keep this
                // process's turn until it returns, then release both.
                tokio::spawn(async move {
                    if let Ok(Ok(_)) = waiting.await {
                        let _ = flock(&*file, FlockOperation::Unlock);
                    }
                    drop(file);
                });
                Err(busy())
            }
        }
    }
}
