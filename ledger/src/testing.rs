//! Test support (cargo feature `testing`): a throwaway PostgreSQL database
//! on a real server, for this crate's tests and other crates' (the heads'
//! multi-process tests, the benchmark).
//!
//! The server is `$COUNTERSIGN_TEST_PG` (an admin URL naming the
//! maintenance database), by default `postgres://postgres@127.0.0.1:5432/postgres`
//! (the machine's server, trust authentication). Each [`TempPgDatabase`]
//! is `cs_test_<random>`, created on start and dropped `WITH (FORCE)` when
//! the value is dropped. Not for production use: it creates and drops
//! databases.

use sqlx::{AssertSqlSafe, Connection as _, PgConnection};

/// The default admin URL of the test server.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The admin URL tests use: `$COUNTERSIGN_TEST_PG` or [`DEFAULT_ADMIN_URL`].
pub fn admin_url() -> String {
    std::env::var("COUNTERSIGN_TEST_PG").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_string())
}

/// A database created for one test and dropped with this value.
#[derive(Debug)]
pub struct TempPgDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl TempPgDatabase {
    /// Create a fresh, empty database on the test server.
    pub async fn create() -> Result<TempPgDatabase, sqlx::Error> {
        Self::create_on(&admin_url()).await
    }

    /// Create a fresh, empty database on the server of `admin_url`.
    pub async fn create_on(admin_url: &str) -> Result<TempPgDatabase, sqlx::Error> {
        let mut bytes = [0u8; 8];
        getrandom::fill(&mut bytes).map_err(|e| sqlx::Error::Protocol(e.to_string()))?;
        let name = format!("cs_test_{}", hex::encode(bytes));
        let mut admin = PgConnection::connect(admin_url).await?;
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await?;
        admin.close().await?;
        let url = match admin_url.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => {
                return Err(sqlx::Error::Configuration(
                    "admin url has no database".into(),
                ));
            }
        };
        Ok(TempPgDatabase {
            admin_url: admin_url.to_string(),
            name,
            url,
        })
    }

    /// The database's URL (as the admin user).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The database's URL as another (trust-authenticated) `user`.
    pub fn url_as(&self, user: &str) -> String {
        let rest = self
            .url
            .split_once("://")
            .map(|(_, rest)| rest)
            .unwrap_or(&self.url);
        let host = rest.split_once('@').map(|(_, h)| h).unwrap_or(rest);
        format!("postgres://{user}@{host}")
    }

    async fn drop_now(admin_url: &str, name: &str) -> Result<(), sqlx::Error> {
        let mut admin = PgConnection::connect(admin_url).await?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .execute(&mut admin)
        .await?;
        admin.close().await
    }
}

impl Drop for TempPgDatabase {
    fn drop(&mut self) {
        // Drop runs outside async; a short-lived runtime on its own thread
        // works whether or not the caller is inside one.
        let (admin_url, name) = (self.admin_url.clone(), self.name.clone());
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime
                .block_on(Self::drop_now(&admin_url, &name))
                .map_err(|e| e.to_string())
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}
