//! Schema migrations for SQLite: the SQL files under `migrations/sqlite/`,
//! embedded at compile time, applied in order inside ONE `BEGIN IMMEDIATE`
//! transaction, and recorded in `schema_migrations` with their SHA-256.
//!
//! Why not sqlx's `Migrator`: `migrate!` needs the `macros` feature, and
//! `Migrator` takes no lock on SQLite, so two processes opening a new file at
//! once (signer and head under `countersign up`) could both apply version 1.
//! Here the second one waits for the write lock and then finds the schema
//! applied. An applied migration whose text changed, or a database newer
//! than this build, is refused rather than guessed at.

use sha2::{Digest, Sha256};
use sqlx::{Row as _, SqlitePool};

use crate::error::LedgerError;

/// `(version, description, sql)`, in order. Append only; never edit one.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "ledger",
    include_str!("../../migrations/sqlite/0001_ledger.sql"),
)];

/// Bring the schema up to date.
pub(super) async fn run(writer: &SqlitePool) -> Result<(), LedgerError> {
    let fail = |e: sqlx::Error| LedgerError::Migration(e.to_string());
    let mut tx = writer.begin_with("BEGIN IMMEDIATE").await.map_err(fail)?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version     INTEGER PRIMARY KEY NOT NULL,
            description TEXT NOT NULL,
            sha256      TEXT NOT NULL,
            applied_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
        ) STRICT",
    )
    .execute(&mut *tx)
    .await
    .map_err(fail)?;
    let applied = sqlx::query("SELECT version, sha256 FROM schema_migrations ORDER BY version")
        .fetch_all(&mut *tx)
        .await
        .map_err(fail)?;
    let mut applied_versions = Vec::with_capacity(applied.len());
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
            Some(_) => applied_versions.push(version),
        }
    }
    for (version, description, sql) in MIGRATIONS {
        if applied_versions.contains(version) {
            continue;
        }
        sqlx::raw_sql(*sql).execute(&mut *tx).await.map_err(fail)?;
        sqlx::query(
            "INSERT INTO schema_migrations (version, description, sha256) VALUES (?, ?, ?)",
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
