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

/// A PostgreSQL server of its own (initdb into a temporary directory, on a
/// free port of 127.0.0.1, or inside a network namespace: [`PgPlacement`]),
/// for tests that stop and restart the database under running heads.
/// Never touches the shared server. Stopped and deleted on drop; the
/// directory of one whose process was killed first is deleted by the next
/// start, once its server is gone.
///
/// Uses the binaries under `/usr/lib/postgresql/<version>/bin` (or
/// `$COUNTERSIGN_TEST_PG_BIN`). `initdb` refuses to run as root, so as root
/// the server runs as the `postgres` user (`runuser -u postgres --`).
#[derive(Debug)]
pub struct ThrowawayPgServer {
    dir: std::path::PathBuf,
    bin: std::path::PathBuf,
    port: u16,
    placement: PgPlacement,
}

/// Where a [`ThrowawayPgServer`] runs, when not on 127.0.0.1 of this
/// network namespace: inside network namespace `netns` (run with `ip netns
/// exec`), listening on `addr:5432`, trusting clients from `clients` (a
/// CIDR). The caller owns the namespace.
#[derive(Debug, Clone)]
pub struct PgPlacement {
    /// The network namespace's name.
    pub netns: Option<String>,
    /// The address it listens on.
    pub addr: std::net::IpAddr,
    /// Clients trusted besides 127.0.0.1 (`pg_hba.conf`), as a CIDR.
    pub clients: Option<String>,
    /// `fsync` on (as a real server) or off (faster tests).
    pub fsync: bool,
}

impl ThrowawayPgServer {
    /// Create the cluster and start it on a free port of 127.0.0.1, with
    /// `fsync` off.
    pub fn start() -> Result<ThrowawayPgServer, String> {
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("no free port: {e}"))?
            .port();
        let placement = PgPlacement {
            netns: None,
            addr: std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            clients: None,
            fsync: false,
        };
        Self::start_placed(placement, port)
    }

    /// Create the cluster and start it as `placement` says, on port 5432
    /// (the namespace is the server's own).
    pub fn start_in(placement: PgPlacement) -> Result<ThrowawayPgServer, String> {
        Self::start_placed(placement, 5432)
    }

    fn start_placed(placement: PgPlacement, port: u16) -> Result<ThrowawayPgServer, String> {
        let bin = match std::env::var_os("COUNTERSIGN_TEST_PG_BIN") {
            Some(bin) => std::path::PathBuf::from(bin),
            None => pg_bin_dir()?,
        };
        remove_leftover_dirs();
        let place = placement.netns.as_deref().unwrap_or("lo");
        let dir = std::env::temp_dir().join(format!("cs-pg-{}-{place}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // The server may run as `postgres`; it needs to write here.
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))
            .map_err(|e| e.to_string())?;
        let server = ThrowawayPgServer {
            dir,
            bin,
            port,
            placement,
        };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "--auth=trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        )?;
        if let Some(clients) = &server.placement.clients {
            use std::io::Write as _;
            let hba = server.dir.join("data").join("pg_hba.conf");
            std::fs::OpenOptions::new()
                .append(true)
                .open(&hba)
                .and_then(|mut f| writeln!(f, "host all all {clients} trust"))
                .map_err(|e| format!("{}: {e}", hba.display()))?;
        }
        server.start_again()?;
        Ok(server)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    /// Run one of the server's programs, as `postgres` when we are root.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let path = self.bin.join(program);
        // [ip netns exec NS] [runuser -u postgres --] program
        let mut argv: Vec<std::ffi::OsString> = Vec::new();
        if let Some(netns) = &self.placement.netns {
            argv.extend(["ip", "netns", "exec", netns.as_str()].map(Into::into));
        }
        if running_as_root() {
            argv.extend(["runuser", "-u", "postgres", "--"].map(Into::into));
        }
        argv.push(path.clone().into());
        let mut command = std::process::Command::new(&argv[0]);
        command.args(&argv[1..]);
        let out = command
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    /// Start the (stopped) server and wait until it accepts connections.
    pub fn start_again(&self) -> Result<(), String> {
        let options = format!(
            "-p {} -k {} -c listen_addresses={} -c fsync={}",
            self.port,
            self.dir.display(),
            self.placement.addr,
            if self.placement.fsync { "on" } else { "off" }
        );
        let log = self.dir.join("log").display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        )
    }

    /// Stop the server at once (`-m immediate`: like a crash or a cut cable,
    /// connections are dropped without goodbye).
    pub fn stop(&self) -> Result<(), String> {
        self.run(
            "pg_ctl",
            &["-D", &self.data(), "-m", "immediate", "-w", "stop"],
        )
    }

    /// The admin URL (maintenance database `postgres`).
    pub fn admin_url(&self) -> String {
        format!(
            "postgres://postgres@{}:{}/postgres",
            self.placement.addr, self.port
        )
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The cluster's data directory (`postgresql.conf`, `pg_hba.conf`),
    /// for a test that configures the server and restarts it.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.join("data")
    }
}

impl Drop for ThrowawayPgServer {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove the directories of throwaway servers whose owning process no
/// longer exists (killed before its drop ran) and whose server is not
/// running either (a server of a network namespace dies when the
/// namespace is removed; a running one is left alone).
fn remove_leftover_dirs() {
    let alive = |pid: &str| {
        pid.trim()
            .parse::<u32>()
            .is_ok_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("cs-pg-")) else {
            continue;
        };
        let owner = rest.split('-').next().unwrap_or_default();
        let postmaster =
            std::fs::read_to_string(entry.path().join("data/postmaster.pid")).unwrap_or_default();
        let server = postmaster.lines().next().unwrap_or_default();
        if !alive(owner) && !alive(server) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// `/usr/lib/postgresql/<highest version>/bin`.
fn pg_bin_dir() -> Result<std::path::PathBuf, String> {
    let root = std::path::Path::new("/usr/lib/postgresql");
    let mut versions: Vec<u32> = std::fs::read_dir(root)
        .map_err(|e| format!("{}: {e} (set COUNTERSIGN_TEST_PG_BIN)", root.display()))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    versions.sort_unstable();
    let version = versions
        .last()
        .ok_or("no PostgreSQL under /usr/lib/postgresql")?;
    Ok(root.join(version.to_string()).join("bin"))
}

fn running_as_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

/// A field of an [`crate::Intent`] that a proof binds, for [`altered_intent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntentField {
    /// The proposal id.
    ProposalId,
    /// The nonce.
    Nonce,
    /// The principal.
    Principal,
    /// The session.
    Session,
    /// The operation (which names a builtin effect).
    Operation,
    /// The canonical arguments.
    ArgumentsJson,
    /// The proof's SHA-256.
    ProofSha256,
    /// The contract revision.
    ContractRevision,
}

/// A copy of `intent` with `field` set to `value`: what a caller holding a
/// stale or altered copy would present. For tests showing that the ledger
/// refuses every intent but the one it recorded; it grants nothing, since
/// each second phase checks the intent against its row inside the
/// transaction.
pub fn altered_intent(intent: &crate::Intent, field: IntentField, value: &str) -> crate::Intent {
    let mut altered = intent.clone();
    let slot = match field {
        IntentField::ProposalId => &mut altered.proposal_id,
        IntentField::Nonce => &mut altered.nonce,
        IntentField::Principal => &mut altered.principal,
        IntentField::Session => &mut altered.session,
        IntentField::Operation => &mut altered.operation,
        IntentField::ArgumentsJson => &mut altered.arguments_json,
        IntentField::ProofSha256 => &mut altered.proof_sha256,
        IntentField::ContractRevision => &mut altered.contract_revision,
    };
    *slot = value.to_string();
    altered
}
