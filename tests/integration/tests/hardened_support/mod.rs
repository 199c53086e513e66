//! What the tests of the privilege-separated installation share
//! (`hardened_install.rs`, `hardened_push.rs`): throwaway users, a
//! directory every user can traverse with the binaries in it, processes run
//! as a user, `deploy/setup-system.sh` run as the tests run it, and the
//! agent as an MCP client.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

use countersign_integration_tests::bin;
use countersign_ledger::testing::TempPgDatabase;

/// The repository's root.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Whether a test that creates users must skip: not root. Says so (with
/// how to run it) when it must.
pub fn skipped_without_root(test: &str) -> bool {
    if is_root() {
        return false;
    }
    eprintln!(
        "SKIPPED: this test creates users and needs root \
         (run `cargo test -p countersign-integration-tests --test {test}` as root)"
    );
    true
}

pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub fn random_hex() -> String {
    let mut bytes = [0u8; 4];
    getrandom::fill(&mut bytes).unwrap();
    hex::encode(bytes)
}

/// Two throwaway users, removed with their home directories even when the
/// test fails (dropped after the processes that run as them).
pub struct Users {
    pub signer: String,
    pub agent: String,
    /// Created by `setup-system.sh` (`--premise-user`), removed here.
    pub premise: String,
    /// Created by `setup-system.sh` (`--notify-user`), removed here.
    pub notify: String,
    /// Created by `setup-system.sh` (`--gateway-user`), removed here.
    pub gateway: String,
}

impl Users {
    pub fn create() -> Users {
        let suffix = random_hex();
        let users = Users {
            signer: format!("cs-signer-{suffix}"),
            agent: format!("cs-agent-{suffix}"),
            premise: format!("cs-premise-{suffix}"),
            notify: format!("cs-notify-{suffix}"),
            gateway: format!("cs-gateway-{suffix}"),
        };
        for (name, extra) in [(&users.signer, "--system"), (&users.agent, "--create-home")] {
            let out = Command::new("useradd")
                .args([extra, "--user-group", "--shell", "/bin/sh", name])
                .output()
                .unwrap();
            assert!(out.status.success(), "useradd {name}: {out:?}");
        }
        users
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        for name in [
            &self.agent,
            &self.signer,
            &self.premise,
            &self.notify,
            &self.gateway,
        ] {
            let _ = Command::new("userdel").args(["-r", name]).output();
        }
    }
}

/// The files of `home` and its `pki/`, relative to it, sorted.
pub fn files_of(home: &Path) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for dir in [home.to_path_buf(), home.join("pki")] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                files.push(path.strip_prefix(home).unwrap().display().to_string());
            }
        }
    }
    files.sort();
    files
}

/// The uid of `user`.
pub fn uid_of(user: &str) -> u32 {
    let out = Command::new("id").args(["-u", user]).output().unwrap();
    text(&out.stdout).trim().parse().unwrap()
}

/// The agent: `tests/e2e/hardened_agent.py`, an MCP client (the official
/// Python SDK) of `countersign mcp` run as the agent's user, one session
/// kept open; one command a line in, one JSON answer a line out.
pub struct McpAgent {
    child: Child,
    commands: ChildStdin,
    answers: BufReader<ChildStdout>,
}

impl McpAgent {
    pub fn start(user: &str, cli: &str, home: &str) -> McpAgent {
        Self::run(&[user, cli, home])
    }

    /// The agent reaching the MCP gateway of `server_user` on its Unix
    /// socket, through `countersign mcp --connect`.
    pub fn connect(user: &str, cli: &str, socket: &Path, server_user: &str) -> McpAgent {
        let socket = format!("unix:{}", socket.display());
        Self::run(&[user, cli, "--connect", &socket, server_user])
    }

    fn run(args: &[&str]) -> McpAgent {
        let mut child = Command::new("python3")
            .arg(Path::new(ROOT).join("tests/e2e/hardened_agent.py"))
            .args(args)
            .current_dir("/")
            .env_remove("COUNTERSIGN_HOME")
            .env_remove("COUNTERSIGN_SESSION")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs (scripts/test installs the test tools)");
        let commands = child.stdin.take().unwrap();
        let answers = BufReader::new(child.stdout.take().unwrap());
        McpAgent {
            child,
            commands,
            answers,
        }
    }

    pub fn ask(&mut self, command: &str) -> serde_json::Value {
        writeln!(self.commands, "{command}").unwrap();
        self.commands.flush().unwrap();
        let mut line = String::new();
        self.answers.read_line(&mut line).unwrap();
        assert!(
            !line.is_empty(),
            "hardened_agent.py exited on `{command}` (its stderr is above)"
        );
        serde_json::from_str(&line).unwrap()
    }

    /// Closes the MCP connection and waits for the script (and so for the
    /// agent's `countersign mcp`) to exit.
    pub fn quit(mut self) {
        writeln!(self.commands, "quit").unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "hardened_agent.py: {status}");
    }
}

impl Drop for McpAgent {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The person (`tests/e2e/hardened_person.py`): pairs a browser, enrols a
/// passkey with a one-time code and approves `id` in the console for the
/// proposing MCP session, running the administrator's commands as
/// `signer_user` with `signer_bin` and `cli` on `signer_home`.
pub fn person_approves(
    signer_user: &str,
    signer_bin: &str,
    signer_home: &str,
    console_port: &str,
    id: &str,
    cli: &str,
) {
    let person = Command::new("python3")
        .arg(Path::new(ROOT).join("tests/e2e/hardened_person.py"))
        .args([signer_user, signer_bin, signer_home, console_port, id])
        .env("COUNTERSIGN_BIN", cli)
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .output()
        .unwrap();
    assert!(
        person.status.success(),
        "hardened_person.py:\nstdout:\n{}\nstderr:\n{}",
        text(&person.stdout),
        text(&person.stderr)
    );
    assert_eq!(text(&person.stdout), "hardened person: ok\n");
}

/// Long-running processes, killed when dropped.
#[derive(Default)]
pub struct Processes(pub Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The installed package's binary directory when the tests run against it
/// (`COUNTERSIGN_TEST_INSTALLED_BIN`, set by scripts/test).
pub fn installed_bin_dir() -> Option<PathBuf> {
    std::env::var_os("COUNTERSIGN_TEST_INSTALLED_BIN").map(PathBuf::from)
}

/// The setup script the tests run: the installed package's copy when they
/// run against it, else the repository's.
pub fn setup_script() -> PathBuf {
    match installed_bin_dir() {
        Some(_) => PathBuf::from("/usr/share/countersign/setup-system.sh"),
        None => Path::new(ROOT).join("deploy/setup-system.sh"),
    }
}

/// A directory under /tmp that both users can traverse, removed at the end.
pub struct Base(pub PathBuf);

impl Base {
    /// A new directory `/tmp/<prefix>-<random>` (0755) and in it `bin/` with
    /// the binaries, where every test user can run them (target/ may not be
    /// traversable).
    ///
    /// With the package installed and `COUNTERSIGN_TEST_INSTALLED_BIN` set
    /// (scripts/test: `/usr/bin`), that directory instead: the tests then
    /// run the installed package's binaries, and its copy of the script.
    pub fn with_binaries(prefix: &str) -> (Base, PathBuf) {
        let base = Base(PathBuf::from(format!("/tmp/{prefix}-{}", random_hex())));
        std::fs::create_dir(&base.0).unwrap();
        std::fs::set_permissions(&base.0, std::fs::Permissions::from_mode(0o755)).unwrap();
        if let Some(installed) = installed_bin_dir() {
            return (base, installed);
        }
        let bin_dir = base.0.join("bin");
        std::fs::create_dir(&bin_dir).unwrap();
        std::fs::set_permissions(&bin_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        for name in ["countersign", "countersign-signer", "countersign-premise"] {
            std::fs::copy(bin(name), bin_dir.join(name)).unwrap();
            std::fs::set_permissions(bin_dir.join(name), std::fs::Permissions::from_mode(0o755))
                .unwrap();
        }
        (base, bin_dir)
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn free_addr() -> String {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .to_string()
}

pub fn wait_for_port(addr: &str, child: &mut Child) {
    let start = Instant::now();
    while TcpStream::connect(addr).is_err() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the process for {addr} exited"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{addr} never listened"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `args` run as `user` (runuser), from `/`, with `stdin`.
pub fn as_user(user: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("runuser")
        .args(["-u", user, "--"])
        .args(args)
        .current_dir("/")
        .env_remove("COUNTERSIGN_HOME")
        .env_remove("COUNTERSIGN_SESSION")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// A long-running process as `user`: setpriv execs it directly, so killing
/// the child kills the process itself (runuser would stay in between).
pub fn spawn_as(user: &str, args: &[&str]) -> Child {
    Command::new("setpriv")
        .args([
            &format!("--reuid={user}"),
            &format!("--regid={user}"),
            "--init-groups",
            "--",
        ])
        .args(args)
        .current_dir("/")
        .env_remove("COUNTERSIGN_HOME")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The deployment's database roles (`deploy/postgres-roles.sql`).
const ROLES_SQL: &str = include_str!("../../../../deploy/postgres-roles.sql");

/// A ledger as the deployment prepares it: a new PostgreSQL database, its
/// schema applied by the owner, then the roles; with the signer's and the
/// heads' URLs.
pub async fn ledger_with_roles() -> (TempPgDatabase, String, String) {
    use sqlx::Connection as _;
    let db = TempPgDatabase::create().await.unwrap();
    countersign_ledger::Ledger::open(db.url()).await.unwrap();
    let mut owner = sqlx::PgConnection::connect(db.url()).await.unwrap();
    sqlx::raw_sql(ROLES_SQL).execute(&mut owner).await.unwrap();
    owner.close().await.unwrap();
    let signer_url = role_url(&db, "countersign_signer");
    let head_url = role_url(&db, "countersign_head");
    (db, signer_url, head_url)
}

/// A URL of `db` for another role (the test server trusts local connections).
pub fn role_url(db: &TempPgDatabase, role: &str) -> String {
    let url = db.url();
    let (scheme, rest) = url.split_once("://").unwrap();
    let (_, host_and_db) = rest.split_once('@').unwrap();
    format!("{scheme}://{role}@{host_and_db}")
}

/// Where the tests lay an installation out under a [`Base`]: the signer's
/// state directory `state/` (its home `state/home`), `notify-state/`,
/// `gateway-state/` and the premise service's `run/premise.sock`, with
/// free loopback addresses for the signer and the console.
pub struct Layout {
    pub state: PathBuf,
    pub signer_home: PathBuf,
    pub notify_state: PathBuf,
    pub notify_home: PathBuf,
    pub gateway_state: PathBuf,
    /// The gateway unit's environment file (the user it serves).
    pub gateway_env: PathBuf,
    /// The premise service's runtime directory (systemd's RuntimeDirectory=).
    pub premise_run: PathBuf,
    pub premise_socket: PathBuf,
    pub signer_addr: String,
    pub console_addr: String,
}

impl Layout {
    pub fn under(base: &Path) -> Layout {
        Layout {
            state: base.join("state"),
            signer_home: base.join("state/home"),
            notify_state: base.join("notify-state"),
            notify_home: base.join("notify-state/home"),
            gateway_state: base.join("gateway-state"),
            gateway_env: base.join("etc/gateway.env"),
            premise_run: base.join("run"),
            premise_socket: base.join("run/premise.sock"),
            signer_addr: free_addr(),
            console_addr: free_addr(),
        }
    }

    /// The console's port.
    pub fn console_port(&self) -> u16 {
        self.console_addr
            .rsplit(':')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Runs `deploy/setup-system.sh` (as root) for `users` and this layout,
    /// with the binaries of `bin_dir` and the two ledger URLs; asserts it
    /// succeeded and returns what it printed.
    pub fn setup(&self, users: &Users, bin_dir: &Path, signer_url: &str, head_url: &str) -> String {
        let out = Command::new("bash")
            .arg(setup_script())
            .args(["--signer-user", &users.signer])
            .args(["--premise-user", &users.premise])
            .args(["--notify-user", &users.notify])
            .args(["--gateway-user", &users.gateway])
            .arg("--gateway-state-dir")
            .arg(&self.gateway_state)
            .arg("--gateway-env")
            .arg(&self.gateway_env)
            .arg("--premise-socket")
            .arg(&self.premise_socket)
            .arg("--notify-state-dir")
            .arg(&self.notify_state)
            .arg("--state-dir")
            .arg(&self.state)
            .arg("--bin-dir")
            .arg(bin_dir)
            .args(["--signer-addr", &self.signer_addr])
            .args(["--console-addr", &self.console_addr])
            .arg(&users.agent)
            .env("COUNTERSIGN_SIGNER_LEDGER_URL", signer_url)
            .env("COUNTERSIGN_HEAD_LEDGER_URL", head_url)
            .output()
            .unwrap();
        assert!(out.status.success(), "setup-system.sh: {out:?}");
        text(&out.stdout)
    }
}
