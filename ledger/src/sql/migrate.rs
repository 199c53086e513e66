//! Schema migrations (shared by both backends): the backend's SQL files
//! under `migrations/<backend>/`, embedded at compile time, applied in order
//! inside ONE write transaction that excludes every other migrator
//! (`BEGIN IMMEDIATE` on SQLite, a transaction-scoped advisory lock on
//! PostgreSQL), and recorded in `schema_migrations` with their SHA-256.
//!
//! Why not sqlx's `Migrator`: `migrate!` needs the `macros` feature, and
//! `Migrator` takes no lock on SQLite, so two processes opening a new file at
//! once (signer and head under `countersign up`) could both apply version 1.
//! Here the second one waits for the lock and then finds the schema applied.
//! An up-to-date schema is recognised by a read alone, so opening takes no
//! write lock and needs no DDL rights (a PostgreSQL head role has none). An
//! applied migration whose text changed, or a database newer than this
//! build, is refused rather than guessed at.

use sha2::{Digest, Sha256};
use sqlx::{Pool, Row as _};

use super::{Conn, Db, MIGRATIONS, SCHEMA_MIGRATIONS_DDL};
use crate::error::LedgerError;

fn fail(e: sqlx::Error) -> LedgerError {
    LedgerError::Migration(e.to_string())
}

/// The applied versions, checked against this build's migrations.
pub(super) async fn applied_versions(conn: &mut Conn) -> Result<Vec<i64>, LedgerError> {
    let applied = sqlx::query("SELECT version, sha256 FROM schema_migrations ORDER BY version")
        .fetch_all(&mut *conn)
        .await
        .map_err(fail)?;
    let mut versions = Vec::with_capacity(applied.len());
    for row in &applied {
        let version: i64 = row.try_get("version").map_err(fail)?;
        let sha: String = row.try_get("sha256").map_err(fail)?;
        match MIGRATIONS.iter().find(|(v, _, _)| *v == version) {
            None => {
                return Err(LedgerError::Migration(format!(
                    "the database has schema version {version}, unknown to this build"
                )));
            }
            Some((_, _, sql)) if sha256_hex(sql) != sha => {
                return Err(LedgerError::Migration(format!(
                    "applied migration {version} differs from this build's"
                )));
            }
            Some(_) => versions.push(version),
        }
    }
    Ok(versions)
}

/// The versions this build's migrations bring a database to, in order.
pub(super) fn expected_versions() -> Vec<i64> {
    MIGRATIONS.iter().map(|(v, _, _)| *v).collect()
}

fn all_applied(versions: &[i64]) -> bool {
    MIGRATIONS.iter().all(|(v, _, _)| versions.contains(v))
}

/// Bring the schema up to date.
pub(super) async fn run(pool: &Pool<Db>) -> Result<(), LedgerError> {
    {
        let mut conn = pool.acquire().await.map_err(fail)?;
        // A missing table is not an error here: the write pass creates it.
        if let Ok(versions) = applied_versions(&mut conn).await
            && all_applied(&versions)
        {
            return Ok(());
        }
    }
    let mut tx = super::migration_tx(pool).await.map_err(fail)?;
    sqlx::raw_sql(SCHEMA_MIGRATIONS_DDL)
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
    let applied = applied_versions(&mut tx).await?;
    for (version, description, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        sqlx::raw_sql(*sql).execute(&mut *tx).await.map_err(fail)?;
        sqlx::query(
            "INSERT INTO schema_migrations (version, description, sha256) VALUES ($1, $2, $3)",
        )
        .bind(version)
        .bind(description)
        .bind(sha256_hex(sql))
        .execute(&mut *tx)
        .await
        .map_err(fail)?;
        tracing::info!(version, description, "applied ledger migration");
    }
    tx.commit().await.map_err(fail)?;
    Ok(())
}

fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}
