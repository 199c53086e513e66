//! The SQLite backend: connection setup, the write discipline, and the
//! dialect the shared query modules under `src/sql/` are compiled against
//! (see the crate root). Schema SQL lives in `migrations/sqlite/`.
//!
//! Write discipline: one writer connection per process (a pool of size 1)
//! and `BEGIN IMMEDIATE` for every write transaction, so the write lock is
//! taken up front and a transaction never fails half-way on lock upgrade;
//! other processes wait up to the 5 s busy timeout. Reads use a separate
//! small pool whose connections are `query_only`, except in a process that
//! runs one command ([`Reads::Writer`]), whose few reads, one after another,
//! go through the writer: every connection parses the whole schema when it
//! opens, which is a one-shot command's largest cost after its commit. No
//! read holds the writer across a write transaction (each read method
//! takes a connection and gives it back), so reads through the writer
//! cannot wait on the process's own write. Neither pool pings a
//! connection before handing it out (`test_before_acquire(false)`): a
//! connection to a file cannot go stale as a network one can, and the ping
//! is a round trip to the connection's worker thread on every operation.
//!
//! Durability: WAL with `synchronous = FULL`. NORMAL would be crash-safe
//! for the file but may lose the last committed transactions on power loss,
//! and a lost consumed-nonce row would let a proof be used twice; the cost of
//! FULL (an fsync of the WAL per commit) is small next to an approval.

/// The types the shared query modules are compiled against.
type Db = sqlx::Sqlite;
type Conn = sqlx::SqliteConnection;
type DbRow = sqlx::sqlite::SqliteRow;

/// Row locks: none on SQLite, where `BEGIN IMMEDIATE` already holds the
/// database's single write lock for the whole transaction.
macro_rules! locking {
    ($alias:literal) => {
        ""
    };
}

/// The database's clock as a timestamp of the ledger's fixed text form.
macro_rules! db_now {
    () => {
        "strftime('%Y-%m-%dT%H:%M:%SZ', 'now')"
    };
}

/// The checks of a batch's consumptions (`sql/fast_batch.rs`) in one
/// statement: a row per job of the JSON array `$1` (objects with `ord`,
/// `pid`, `sha`, `nonce` and `skey`), in `ord` order, with the columns of
/// the single check (`sql/consume.rs`); `$2` is the state namespace.
macro_rules! batch_checks {
    () => {
        concat!(
            check_columns!(),
            ", j.ord AS j_ord
             FROM (SELECT json_extract(value, '$.ord') AS ord,
                          json_extract(value, '$.pid') AS pid,
                          json_extract(value, '$.sha') AS sha,
                          json_extract(value, '$.nonce') AS nonce,
                          json_extract(value, '$.skey') AS skey
                   FROM json_each($1)) AS j
             LEFT JOIN proposals p ON p.id = j.pid",
            check_joins!("j.sha", "j.nonce", "$2", "j.skey"),
            "ORDER BY j.ord"
        )
    };
}

include!("../sql/modules.rs");
mod consume_sql;
/// This backend's migrations (the one list: `migrations!` in the crate root).
const MIGRATIONS: &[(i64, &str, &str)] = migrations!("sqlite");

const SCHEMA_MIGRATIONS_DDL: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version     INTEGER PRIMARY KEY NOT NULL,
    description TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    applied_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
) STRICT";

/// The migration transaction: the database's write lock.
async fn migration_tx(pool: &Pool<Db>) -> Result<Transaction<'static, Db>, sqlx::Error> {
    pool.begin_with("BEGIN IMMEDIATE").await
}

/// No row locks: `BEGIN IMMEDIATE` already holds the database's single write
/// lock for the whole transaction.
const ROW_LOCKS: bool = false;

/// A read of several statements that must see one state of the ledger: in
/// WAL mode a read transaction reads one snapshot, from its first read on.
const SNAPSHOT_READ: &str = "BEGIN";

#[cfg(test)]
mod plan_tests;
pub(crate) mod sole_signer;
mod writer_lock;
use writer_lock::{WriterGuard, WriterLock};

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection as _, Pool, Transaction};

use crate::error::LedgerError;
use crate::types::SchemaStatus;

/// How long a writer waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Read connections per process.
const READERS: u32 = 4;

/// Where a store's reads go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reads {
    /// A pool of up to [`READERS`] `query_only` connections beside the
    /// writer: a process serving many callers at once.
    Pool,
    /// The writer connection: a process running one command.
    Writer,
}

/// A SQLite ledger: one writer connection and a small read pool (or, for
/// one command, the writer alone).
#[derive(Debug, Clone)]
pub(crate) struct Store {
    writer: Pool<Db>,
    reader: Pool<Db>,
    queue: WriterLock,
    /// The database file (its signer lock lies beside it).
    path: std::path::PathBuf,
    /// Group commit of consumptions (`batch.rs`).
    batches: std::sync::Arc<batch::Batches>,
}

/// A write transaction holding this process's place in the writers' queue
/// (see `writer_lock`); derefs to the connection, like a `Transaction`.
pub(crate) struct WriteTx {
    tx: Transaction<'static, Db>,
    _turn: WriterGuard,
}

impl WriteTx {
    /// Commit, then leave the queue.
    pub(crate) async fn commit(self) -> Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    /// Roll back, then leave the queue.
    pub(crate) async fn rollback(self) -> Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

impl std::ops::Deref for WriteTx {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.tx
    }
}

impl std::ops::DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut Conn {
        &mut self.tx
    }
}

impl Store {
    /// Take the signer lock of this database (see `sole_signer`).
    pub(crate) fn claim_sole_signer(&self) -> Result<sole_signer::SoleSignerLock, LedgerError> {
        sole_signer::claim(&self.path)
    }

    /// Open (creating if missing, mode 0600) the database file at `path`
    /// and bring its schema up to date; reads go where `reads` says.
    pub(crate) async fn open(path: &Path, reads: Reads) -> Result<Self, LedgerError> {
        if !path.is_absolute() {
            return Err(LedgerError::UnsupportedUrl);
        }
        create_private_file(path)?;
        let queue = WriterLock::open(path, BUSY_TIMEOUT)?;
        let base = SqliteConnectOptions::new()
            .filename(path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(BUSY_TIMEOUT);
        let writer = retry_while_locked(|| {
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .test_before_acquire(false)
                .acquire_timeout(Duration::from_secs(60))
                .idle_timeout(None)
                .max_lifetime(None)
                .connect_with(base.clone())
        })
        .await?;
        migrate::run(&writer).await?;
        let reader = match reads {
            Reads::Writer => writer.clone(),
            Reads::Pool => {
                retry_while_locked(|| {
                    SqlitePoolOptions::new()
                        .max_connections(READERS)
                        .test_before_acquire(false)
                        .connect_with(base.clone().pragma("query_only", "ON"))
                })
                .await?
            }
        };
        Ok(Store {
            writer,
            reader,
            queue,
            path: path.to_path_buf(),
            batches: std::sync::Arc::default(),
        })
    }

    /// The schema of the file at `path`, read without creating, migrating
    /// or writing anything (a read-only connection).
    pub(crate) async fn schema_status(path: &Path) -> Result<SchemaStatus, LedgerError> {
        if !path.is_file() {
            return Err(LedgerError::Database(format!(
                "{} does not exist",
                path.display()
            )));
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .read_only(true)
            .create_if_missing(false)
            .busy_timeout(BUSY_TIMEOUT);
        let mut conn = sqlx::SqliteConnection::connect_with(&options).await?;
        let table: Option<String> = sqlx::query_scalar(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
        )
        .fetch_optional(&mut conn)
        .await?;
        let applied = match table {
            Some(_) => migrate::applied_versions(&mut conn).await?,
            None => Vec::new(),
        };
        conn.close().await?;
        Ok(SchemaStatus {
            applied,
            expected: migrate::expected_versions(),
            server_time_unix: None,
        })
    }

    /// Take this process's turn in the writers' queue, then start a write
    /// transaction with `BEGIN IMMEDIATE` on the writer.
    pub(crate) async fn write_tx(&self) -> Result<WriteTx, LedgerError> {
        let turn = self.queue.acquire().await?;
        let tx = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        Ok(WriteTx { tx, _turn: turn })
    }

    /// A batch's write transaction: [`Store::write_tx`]. The writer is a
    /// pool of one connection to a file (giving it back costs a hop to
    /// its worker thread, not a round trip to a server), and a one-command
    /// process reads through it too, so a queue holds no connection here.
    pub(crate) async fn batch_tx(
        &self,
        _held: &mut Option<BatchConn>,
    ) -> Result<WriteTx, LedgerError> {
        self.write_tx().await
    }
}

/// What a queue's batches hold between them on this backend: nothing
/// (see [`Store::batch_tx`]).
pub(crate) type BatchConn = std::convert::Infallible;

/// Connect, retrying for up to [`BUSY_TIMEOUT`] while the file is locked.
///
/// Switching a new file to WAL needs an exclusive lock, and SQLite answers
/// `SQLITE_BUSY` there without calling the busy handler, so several
/// processes opening one new ledger at once would otherwise fail at random.
async fn retry_while_locked<F, Fut>(connect: F) -> Result<Pool<Db>, LedgerError>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<Pool<Db>, sqlx::Error>>,
{
    let deadline = tokio::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match connect().await {
            Err(sqlx::Error::Database(e))
                if e.code().as_deref() == Some("5") && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            other => return Ok(other?),
        }
    }
}

/// Create the database file with mode 0600 if it does not exist, so that
/// SQLite (which gives its WAL and shm files the database's mode) never
/// creates anything readable by others.
fn create_private_file(path: &Path) -> Result<(), LedgerError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(LedgerError::Database(format!(
            "cannot create the ledger file: {e}"
        ))),
    }
}

/// Whether a database error is a UNIQUE / PRIMARY KEY violation, or the
/// `*_no_replace` trigger of an append-only table (migration 2), which
/// refuses an existing key before the constraint can (so that `INSERT OR
/// REPLACE` cannot delete the row without a DELETE trigger firing).
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.is_unique_violation() || db.message().ends_with(": the key exists"))
}

/// Whether a database error is a passkey challenge accepted before: the
/// `passkey_challenges_no_replace` trigger (migration 3), or the UNIQUE
/// constraint should the trigger be absent.
pub(crate) fn is_challenge_reuse(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.message().contains("passkey challenges are single-use")
            || db.message().contains("passkey_assertions.challenge"))
}
