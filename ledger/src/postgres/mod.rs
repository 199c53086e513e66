//! The PostgreSQL backend: connection setup, the write discipline, and the
//! dialect the shared query modules under `src/sql/` are compiled against
//! (see the crate root). Schema SQL lives in `migrations/postgres/`; which
//! role may write what is `deploy/postgres-roles.sql`.
//!
//! Write discipline: READ COMMITTED transactions that lock what they decide
//! on. Every write locks the proposal row it concerns (`SELECT ... FOR
//! UPDATE OF p`), so consumption, revocation and decisions of one proposal
//! serialize, and a second consumer re-reads the consumed nonce after the
//! first commits. Every event append locks the one-row chain head, so the
//! hash chain never forks; locks are always taken proposal first, chain head
//! last, so they cannot deadlock (a group commit of consumptions waits for
//! no proposal after its chain: see `sql/batch.rs`). Migrations take a
//! transaction-scoped advisory lock.
//!
//! Errors never contain the URL (it may hold a password).

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection as _, PgConnection, Pool, Transaction};

use crate::error::LedgerError;
use crate::types::SchemaStatus;

/// The types the shared query modules are compiled against.
type Db = sqlx::Postgres;
type Conn = sqlx::PgConnection;
type DbRow = sqlx::postgres::PgRow;

/// Row locks, for the tables the query names by `$alias`.
macro_rules! locking {
    ($alias:literal) => {
        concat!(" FOR UPDATE OF ", $alias)
    };
}

/// The database's clock as a timestamp of the ledger's fixed text form,
/// read when the statement runs (not when its transaction began).
macro_rules! db_now {
    () => {
        "to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    };
}

/// This backend's migrations (the one list: `migrations!` in the crate root).
const MIGRATIONS: &[(i64, &str, &str)] = migrations!("postgres");

const SCHEMA_MIGRATIONS_DDL: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version     BIGINT PRIMARY KEY NOT NULL,
    description TEXT NOT NULL,
    sha256      TEXT NOT NULL,
    applied_at  TIMESTAMPTZ NOT NULL DEFAULT now()
)";

/// An arbitrary, fixed key for the migration advisory lock ("cs-migr").
const MIGRATION_LOCK: i64 = 0x0063_732d_6d69_6772;

/// The migration transaction, holding the advisory lock until it ends.
async fn migration_tx(pool: &Pool<Db>) -> Result<Transaction<'static, Db>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await?;
    Ok(tx)
}

/// The checks of a batch's consumptions (`sql/fast_batch.rs`) in one
/// statement: a row per job of the JSON array `$1` (objects with `ord`,
/// `pid`, `sha`, `nonce` and `skey`), in `ord` order, with the columns of
/// the single check (`sql/consume.rs`); `$2` is the state namespace. Each
/// job's facts are a `LATERAL` subquery, so they are found by index as
/// the single check finds them (joined to the JSON rows directly, the
/// planner, which guesses 100 of them, scans whole tables).
macro_rules! batch_checks {
    () => {
        concat!(
            "SELECT c.*, j.ord AS j_ord
             FROM json_to_recordset(CAST($1 AS json))
                  AS j(ord bigint, pid text, sha text, nonce text, skey text)
             LEFT JOIN LATERAL (",
            check_columns!(),
            "FROM proposals p",
            check_joins!("j.sha", "j.nonce", "$2", "j.skey"),
            "WHERE p.id = j.pid) c ON true
             ORDER BY j.ord"
        )
    };
}

include!("../sql/modules.rs");
pub(crate) mod changes;
mod consume_sql;
mod transport;

/// Write transactions lock the rows they decide on.
const ROW_LOCKS: bool = true;

/// A read of several statements that must see one state of the ledger
/// (the audit: heads, rows and fact tables): one snapshot for the whole
/// transaction, which READ COMMITTED, the default, takes per statement.
const SNAPSHOT_READ: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// How a write transaction begins: with generic plans for its statements,
/// in the BEGIN's one round trip. They find rows by key, so a plan that
/// ignores the values is the plan a custom one would be, and a connection
/// that plans each statement again with its values (at least five times,
/// and for as long as the generic estimate looks costlier: the batch check
/// joins a JSON parameter's rows, whose number the planner guesses either
/// way) does so while holding the chain. Reads keep the default.
const WRITE_BEGIN: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";

#[cfg(all(test, feature = "testing"))]
mod plan_tests;

/// Connections per process.
const CONNECTIONS: u32 = 16;
/// How long a call waits for a connection before failing closed.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// A connection idle at least this long is pinged before it is handed
/// out. sqlx pings every connection as it is released to the pool, so one
/// idle for less was answering that long ago; pinging it again would add
/// a round trip to every ledger call under load. A link that broke within
/// this time fails the next call on such a connection, closed, as a call
/// fails when the server stops during it, and the connection is dropped;
/// a server restart takes longer than this, so its stale connections are
/// all pinged.
const PING_IF_IDLE: Duration = Duration::from_millis(250);

/// A PostgreSQL ledger: one pool; `writer` and `reader` are the same pool,
/// named apart so the shared queries read like the SQLite backend's.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    writer: Pool<Db>,
    reader: Pool<Db>,
    /// Group commit of consumptions (`batch.rs`).
    batches: std::sync::Arc<batch::Batches>,
}

impl Store {
    /// Connect to `url` (`postgres://` or `postgresql://`) and bring the
    /// schema up to date.
    pub(crate) async fn open(url: &str) -> Result<Self, LedgerError> {
        let options = transport::connect_options(url)?;
        // One direct connection first: an unreachable server fails at once
        // with its cause (refused, unknown host, authentication), where the
        // pool would retry until its timeout and report only that.
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(|e| LedgerError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
        probe.close().await?;
        let pool = PgPoolOptions::new()
            .max_connections(CONNECTIONS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= PING_IF_IDLE {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options)
            .await?;
        migrate::run(&pool).await?;
        Ok(Store {
            writer: pool.clone(),
            reader: pool,
            batches: std::sync::Arc::default(),
        })
    }

    /// The schema of the database at `url` and its clock, read over one
    /// connection without migrating or writing anything.
    pub(crate) async fn schema_status(url: &str) -> Result<SchemaStatus, LedgerError> {
        let options = transport::connect_options(url)?;
        let mut conn = PgConnection::connect_with(&options)
            .await
            .map_err(|e| LedgerError::Database(format!("cannot connect to PostgreSQL: {e}")))?;
        let exists: bool =
            sqlx::query_scalar("SELECT to_regclass('schema_migrations') IS NOT NULL")
                .fetch_one(&mut conn)
                .await?;
        let applied = if exists {
            migrate::applied_versions(&mut conn).await?
        } else {
            Vec::new()
        };
        let now: f64 = sqlx::query_scalar(
            "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS DOUBLE PRECISION)",
        )
        .fetch_one(&mut conn)
        .await?;
        conn.close().await?;
        Ok(SchemaStatus {
            applied,
            expected: migrate::expected_versions(),
            server_time_unix: Some(now),
        })
    }

    /// Start a write transaction.
    pub(crate) async fn write_tx(&self) -> Result<Transaction<'static, Db>, LedgerError> {
        Ok(self.writer.begin_with(WRITE_BEGIN).await?)
    }

    /// Start a batch's write transaction on the connection its queue
    /// holds, taking one from the pool first if it holds none.
    pub(crate) async fn batch_tx<'c>(
        &self,
        held: &'c mut Option<BatchConn>,
    ) -> Result<Transaction<'c, Db>, LedgerError> {
        let conn = match held.take() {
            Some(conn) => conn,
            None => self.writer.acquire().await?,
        };
        Ok(held.insert(conn).begin_with(WRITE_BEGIN).await?)
    }
}

/// The connection a queue's batches run on (`sql/batch.rs`), held from
/// one batch to the next while jobs keep coming. sqlx pings every
/// connection given back to the pool before another call may take it, a
/// round trip (with the server a round trip away, a tenth of what a
/// consumption costs, in CPU on both sides); a queue that keeps its
/// connection gives it back once, when it runs dry, or when a batch ended
/// in an error (the connection may be broken: the pool's ping finds out).
pub(crate) type BatchConn = sqlx::pool::PoolConnection<Db>;

/// Whether a database error is a UNIQUE / PRIMARY KEY violation.
pub(crate) fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

/// Whether a database error is a passkey challenge accepted before (the
/// constraint `passkey_challenges_single_use`, migration 3).
pub(crate) fn is_challenge_reuse(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db)
        if db.is_unique_violation() && db.constraint() == Some("passkey_challenges_single_use"))
}
