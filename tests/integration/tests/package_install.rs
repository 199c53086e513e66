//! The Debian package, as an operator uses it: `apt-get install
//! ./countersign_*.deb`, `countersign setup --agent-user NAME` for a second
//! OS user as the agent (twice: the second run changes nothing), the
//! services started from the installed units' `ExecStart=` as their users
//! (no systemd runs here: setup says so and does not pretend), the agent
//! refused what it must be refused, the person approving with a passkey in
//! the console, the agent executing once; then an upgrade to a newer
//! package keeps every proposal, passkey and event (`audit --verify`
//! passes), `apt-get remove` keeps the data and `apt-get purge` removes it
//! after saying so.
//!
//! The ledger is a PostgreSQL cluster of the test's own (initdb, socket
//! only, `local all all peer`), never the shared test server, whose
//! `pg_hba.conf` trusts everyone; setup refuses that one, and the test
//! checks that refusal too.
//!
//! Needs root, dpkg and apt-get, PostgreSQL's server binaries, python3 with
//! the test tools and Debian's chromium, and the two packages named by
//! `COUNTERSIGN_TEST_DEB` and `COUNTERSIGN_TEST_DEB_NEXT` (scripts/test
//! builds them); without any of those it says SKIPPED and tests nothing.
//! It leaves the machine as it found it: the package purged, its users and
//! the agent's removed, the cluster stopped and deleted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hardened_support::{
    McpAgent, Processes, as_user, free_addr, is_root, person_approves, random_hex, spawn_as, text,
    uid_of, wait_for_port,
};

/// The package's system users.
const SERVICE_USERS: [&str; 4] = [
    "countersign",
    "countersign-premise",
    "countersign-notify",
    "countersign-gateway",
];
const STATE_DIRS: [&str; 3] = [
    "/var/lib/countersign",
    "/var/lib/countersign-notify",
    "/var/lib/countersign-gateway",
];
const SIGNER_HOME: &str = "/var/lib/countersign/home";

/// Why the test cannot run here, if it cannot.
fn skip_reason() -> Option<String> {
    if !is_root() {
        return Some("it installs a package and creates users: needs root".into());
    }
    for tool in ["dpkg", "apt-get"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return Some(format!("{tool} is not installed"));
        }
    }
    if pg_bin("initdb").is_none() {
        return Some("PostgreSQL's server binaries (initdb) are not installed".into());
    }
    for var in ["COUNTERSIGN_TEST_DEB", "COUNTERSIGN_TEST_DEB_NEXT"] {
        if std::env::var_os(var).is_none() {
            return Some(format!(
                "{var} names no package (scripts/test builds both with cargo deb)"
            ));
        }
    }
    let installed = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", "countersign"])
        .output()
        .unwrap();
    if text(&installed.stdout).ends_with(" installed") {
        return Some("the countersign package is installed on this machine; this test installs and purges it".into());
    }
    None
}

/// A program of the newest PostgreSQL server installed.
fn pg_bin(name: &str) -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive")
        .current_dir("/")
        .output()
        .unwrap()
}

fn ok(out: Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {out:?}");
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

/// A PostgreSQL cluster of the test's own: socket only, peer for local
/// connections, stopped and deleted when dropped.
struct Cluster {
    dir: PathBuf,
    socket_dir: PathBuf,
    port: u16,
}

impl Cluster {
    fn start(base: &Path) -> Cluster {
        let dir = base.join("pg");
        let socket_dir = base.join("pg-socket");
        for d in [&dir, &socket_dir] {
            std::fs::create_dir(d).unwrap();
            ok(
                run("chown", &["postgres:postgres", &d.display().to_string()]),
                "chown",
            );
        }
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&socket_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let port = free_addr().rsplit(':').next().unwrap().parse().unwrap();
        let initdb = pg_bin("initdb").unwrap().display().to_string();
        let data = dir.join("data").display().to_string();
        ok(
            run(
                "runuser",
                &[
                    "-u",
                    "postgres",
                    "--",
                    &initdb,
                    "-D",
                    &data,
                    "-U",
                    "postgres",
                    "--auth-local=peer",
                    "--auth-host=reject",
                ],
            ),
            "initdb",
        );
        let pg_ctl = pg_bin("pg_ctl").unwrap().display().to_string();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=''",
            socket_dir.display()
        );
        let log = dir.join("log").display().to_string();
        ok(
            run(
                "runuser",
                &[
                    "-u", "postgres", "--", &pg_ctl, "-D", &data, "-o", &options, "-l", &log, "-w",
                    "start",
                ],
            ),
            "pg_ctl start",
        );
        Cluster {
            dir,
            socket_dir,
            port,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(pg_ctl) = pg_bin("pg_ctl") {
            let data = self.dir.join("data").display().to_string();
            let _ = run(
                "runuser",
                &[
                    "-u",
                    "postgres",
                    "--",
                    &pg_ctl.display().to_string(),
                    "-D",
                    &data,
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
            );
        }
    }
}

/// Everything the test changed on the machine, undone when dropped (after
/// the processes, which are dropped first): the package purged, the users
/// it made removed, the base directory deleted.
struct Machine {
    base: PathBuf,
    agent: String,
    /// The package's users that existed before the test (kept).
    users_before: Vec<&'static str>,
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = run("dpkg", &["--purge", "countersign"]);
        let _ = run("userdel", &["-r", &self.agent]);
        for user in SERVICE_USERS {
            if !self.users_before.contains(&user) {
                let _ = run("userdel", &[user]);
                let _ = run("groupdel", &[user]);
            }
        }
        let _ = std::fs::remove_dir_all(&self.base);
        // The premise service's runtime directory (systemd's RuntimeDirectory=).
        let _ = std::fs::remove_dir_all("/run/countersign-premise");
    }
}

fn user_exists(user: &str) -> bool {
    run("id", &["-u", user]).status.success()
}

/// The installed unit's `ExecStart=`, split into words (the units quote nothing).
fn exec_start(unit: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new("/lib/systemd/system").join(unit)).unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap_or_else(|| panic!("{unit} has no ExecStart="));
    line.split_whitespace().map(str::to_string).collect()
}

/// The services as their units run them, as their users (what setup says
/// to do without systemd). Returns the processes.
fn start_services(signer_addr: &str, console_addr: &str) -> Processes {
    let mut processes = Processes::default();
    ok(
        run(
            "install",
            &[
                "-d",
                "-m",
                "0755",
                "-o",
                "countersign-premise",
                "-g",
                "countersign-premise",
                "/run/countersign-premise",
            ],
        ),
        "the premise service's runtime directory",
    );
    for (unit, user) in [
        ("countersign-premise.service", "countersign-premise"),
        ("countersign-signer.service", "countersign"),
        ("countersign-console.service", "countersign"),
    ] {
        let words = exec_start(unit);
        let args: Vec<&str> = words.iter().map(String::as_str).collect();
        processes.0.push(spawn_as(user, &args));
        match unit {
            "countersign-signer.service" => {
                wait_for_port(signer_addr, processes.0.last_mut().unwrap())
            }
            "countersign-console.service" => {
                wait_for_port(console_addr, processes.0.last_mut().unwrap())
            }
            _ => {
                let start = std::time::Instant::now();
                while !Path::new("/run/countersign-premise/premise.sock").exists() {
                    assert!(start.elapsed().as_secs() < 30, "no premise socket");
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
        }
    }
    processes
}

/// What must survive an upgrade: the agent's proposals, the ledger's
/// passkeys, rules and events, the audit's verdict.
#[derive(Debug, PartialEq)]
struct Records {
    proposals: String,
    counts: String,
    audit: String,
}

fn records(agent: &str, cluster: &Cluster) -> Records {
    let out = as_user(agent, &["/usr/bin/countersign", "--json", "list"], "");
    let proposals = ok(out, "list");
    let counts = ok(
        run(
            "runuser",
            &[
                "-u",
                "postgres",
                "--",
                "psql",
                "-X",
                "-A",
                "-t",
                "-h",
                &cluster.socket_dir.display().to_string(),
                "-p",
                &cluster.port.to_string(),
                "-d",
                "countersign",
                "-c",
                "SELECT (SELECT count(*) FROM proposals) || ' proposals, ' || \
                 (SELECT count(*) FROM passkeys) || ' passkeys, ' || \
                 (SELECT count(*) FROM rules) || ' rules, ' || \
                 (SELECT count(*) FROM issuances) || ' issuances, ' || \
                 (SELECT count(*) FROM consumed_nonces) || ' consumptions'",
            ],
        ),
        "counts",
    );
    let audit = ok(
        as_user(
            "countersign",
            &[
                "/usr/bin/countersign",
                "--home",
                SIGNER_HOME,
                "audit",
                "--verify",
            ],
            "",
        ),
        "audit --verify",
    );
    // The passkeys' line: the chains' and the event tree's lines before it
    // change with every event.
    let audit = audit
        .lines()
        .find(|l| l.starts_with("passkey assertions: "))
        .unwrap_or_default()
        .to_string();
    Records {
        proposals,
        counts: counts.trim().to_string(),
        audit,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_package_installs_sets_up_upgrades_keeping_every_record_and_purges() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED: {why}");
        return;
    }
    let deb = std::env::var("COUNTERSIGN_TEST_DEB").unwrap();
    let deb_next = std::env::var("COUNTERSIGN_TEST_DEB_NEXT").unwrap();
    let suffix = random_hex();
    let machine = Machine {
        base: PathBuf::from(format!("/tmp/cs-package-{suffix}")),
        agent: format!("cs-pkg-agent-{suffix}"),
        users_before: SERVICE_USERS
            .into_iter()
            .filter(|u| user_exists(u))
            .collect(),
    };
    std::fs::create_dir(&machine.base).unwrap();
    std::fs::set_permissions(&machine.base, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = Cluster::start(&machine.base);
    let agent = machine.agent.clone();

    // 1. The package: users, state directories, binaries, units.
    let shown = ok(
        run(
            "apt-get",
            &["install", "-y", "--no-install-recommends", &deb],
        ),
        "apt-get install",
    );
    assert!(
        shown.contains("countersign: installed; make the hardened installation with `countersign setup --agent-user NAME` (as root)"),
        "{shown}"
    );
    for user in SERVICE_USERS {
        assert!(user_exists(user), "{user} was created");
    }
    for (dir, user) in
        STATE_DIRS
            .iter()
            .zip(["countersign", "countersign-notify", "countersign-gateway"])
    {
        let meta = std::fs::metadata(dir).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700, "{dir}");
        assert_eq!(meta.uid(), uid_of(user), "{dir}");
    }
    for unit in ["signer", "console", "premise", "notify", "gateway"] {
        let unit = format!("countersign-{unit}.service");
        assert!(
            exec_start(&unit)[0].starts_with("/usr/bin/countersign"),
            "{unit}"
        );
    }
    ok(
        run("/usr/bin/countersign", &["--version"]),
        "countersign --version",
    );

    // 2. Setup: refused to anyone but root, and on a server that trusts.
    ok(
        run("useradd", &["--create-home", "--shell", "/bin/sh", &agent]),
        "useradd",
    );
    let (signer_addr, console_addr) = (free_addr(), free_addr());
    let setup_args = |socket_dir: &str, port: &str| -> Vec<String> {
        [
            "/usr/bin/countersign",
            "setup",
            "--agent-user",
            &agent,
            "--pg-socket-dir",
            socket_dir,
            "--pg-port",
            port,
            "--signer-addr",
            &signer_addr,
            "--console-addr",
            &console_addr,
        ]
        .map(str::to_string)
        .to_vec()
    };
    let args = setup_args(
        &cluster.socket_dir.display().to_string(),
        &cluster.port.to_string(),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = as_user(&agent, &args, "");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        text(&out.stderr).starts_with("countersign: setup must run as root"),
        "{out:?}"
    );
    // The shared test server trusts every local connection: refused, and
    // nothing made there. (Tried only where it trusts: on a server that
    // does not, setup would make the installation there.)
    let trusts = run(
        "runuser",
        &[
            "-u",
            "postgres",
            "--",
            "psql",
            "-X",
            "-A",
            "-t",
            "-h",
            "/run/postgresql",
            "-p",
            "5432",
            "-d",
            "postgres",
            "-c",
            "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method = 'trust' AND type = 'local'",
        ],
    );
    if trusts.status.success() && text(&trusts.stdout).trim() != "0" {
        let trusting = setup_args("/run/postgresql", "5432");
        let trusting: Vec<&str> = trusting.iter().map(String::as_str).collect();
        let out = run(trusting[0], &trusting[1..]);
        let said = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        for expected in [
            "does not let each service in by peer authentication alone",
            "lets anyone connect as any role, without a password",
            &format!("local   countersign   countersign,{agent},countersign-gateway   peer"),
        ] {
            assert!(said.contains(expected), "{expected:?} in:\n{said}");
        }
        assert!(said.ends_with("Nothing was changed.\n"), "{said}");
    } else {
        eprintln!("note: no server on /run/postgresql that trusts, to be refused: {trusts:?}");
    }

    let setup = || ok(run(args[0], &args[1..]), "countersign setup");
    let first = setup();
    for expected in [
        "countersign setup: the hardened installation for the agent's user",
        "changed:\n",
        "created PostgreSQL role countersign_owner (owns the ledger; no login)",
        "created PostgreSQL database countersign (owner countersign_owner)",
        "ledger schema: ",
        &format!("/home/{agent}/.config/countersign: 8 files and directories created"),
        "services: NOT started: systemd is not running on this host",
        "countersign-notify and countersign-gateway stay off until configured",
        "1. trust the console's CA in your browser, once",
        "2. pair your browser",
        "3. enrol a passkey on the console's Passkeys page with a one-time code",
    ] {
        assert!(first.contains(expected), "{expected:?} in:\n{first}");
    }
    let second = setup();
    assert!(
        second.contains("\nnothing changed: the installation already was as setup makes it\n"),
        "{second}"
    );
    assert!(!second.contains("changed:\n"), "{second}");
    // No password anywhere: every ledger URL names the socket and a role.
    let agent_home = format!("/home/{agent}/.config/countersign");
    for home in [
        SIGNER_HOME,
        &agent_home,
        "/var/lib/countersign-gateway/home",
    ] {
        let config = std::fs::read_to_string(Path::new(home).join("config.toml")).unwrap();
        let url = config
            .lines()
            .find_map(|l| l.strip_prefix("url = "))
            .unwrap_or_else(|| panic!("{home}: {config}"));
        assert!(
            url.starts_with(&format!(
                "\"postgres:///countersign?host={}&port=",
                cluster.socket_dir.display()
            )),
            "{url}"
        );
        assert!(!url.contains("password"), "{url}");
    }

    // 3. The services, as their units run them; the doctor on each side.
    let processes = start_services(&signer_addr, &console_addr);
    let doctor = as_user(
        "countersign",
        &["/usr/bin/countersign", "--home", SIGNER_HOME, "doctor"],
        "",
    );
    assert!(doctor.status.success(), "doctor as countersign: {doctor:?}");
    let doctor = as_user(&agent, &["/usr/bin/countersign", "doctor"], "");
    assert!(doctor.status.success(), "doctor as {agent}: {doctor:?}");

    // 4. The agent proposes; it cannot approve, nor be the signer's role.
    let mut mcp = McpAgent::start(&agent, "/usr/bin/countersign", &agent_home);
    let proposal = mcp.ask("propose hardened 0 4 * * *");
    let id = proposal["id"].as_str().unwrap().to_string();
    let out = as_user(
        &agent,
        &["/usr/bin/countersign", "approve", &id, "--for-mcp"],
        "",
    );
    assert!(!out.status.success(), "{out:?}");
    assert!(
        text(&out.stderr).contains("pki/approver.pem does not exist"),
        "{out:?}"
    );
    let socket = cluster.socket_dir.display().to_string();
    let port = cluster.port.to_string();
    let psql_as = |user: &str, role: &str, sql: &str| {
        as_user(
            user,
            &[
                "psql",
                "-X",
                "-h",
                &socket,
                "-p",
                &port,
                "-U",
                role,
                "-d",
                "countersign",
                "-c",
                sql,
            ],
            "",
        )
    };
    let out = psql_as(
        &agent,
        &agent,
        "INSERT INTO issuances (proposal_id) VALUES ('x')",
    );
    assert!(
        text(&out.stderr).contains("permission denied for table issuances"),
        "{out:?}"
    );
    let out = psql_as(&agent, "countersign", "SELECT 1");
    assert!(
        text(&out.stderr).contains("Peer authentication failed for user \"countersign\""),
        "{out:?}"
    );

    // 5. The person pairs, enrols a passkey and approves in the console;
    // the agent executes once.
    let console_port = console_addr.rsplit(':').next().unwrap();
    person_approves(
        "countersign",
        "/usr/bin/countersign-signer",
        SIGNER_HOME,
        console_port,
        &id,
        "/usr/bin/countersign",
    );
    let done = mcp.ask(&format!("execute {id}"));
    assert_eq!(done["applied"], true, "{done}");
    mcp.quit();
    let before = records(&agent, &cluster);
    assert!(
        before.counts.starts_with("1 proposals, 1 passkeys, "),
        "{before:?}"
    );
    assert_eq!(
        before.audit, "passkey assertions: 1 verified, 0 refused",
        "{before:?}"
    );

    // 6. The upgrade, the services stopped as apt would stop them.
    drop(processes);
    let shown = ok(
        run(
            "apt-get",
            &["install", "-y", "--no-install-recommends", &deb_next],
        ),
        "the upgrade",
    );
    assert!(shown.contains("countersign: upgraded from "), "{shown}");
    let again = setup();
    assert!(
        again.contains("\nnothing changed: "),
        "setup after the upgrade:\n{again}"
    );
    let processes = start_services(&signer_addr, &console_addr);
    assert_eq!(records(&agent, &cluster), before, "after the upgrade");
    let out = as_user(
        &agent,
        &["/usr/bin/countersign", "--json", "result", &id],
        "",
    );
    assert!(out.status.success(), "{out:?}");
    drop(processes);

    // 7. Remove keeps the data; purge removes it, after saying so.
    let shown = ok(
        run("apt-get", &["remove", "-y", "countersign"]),
        "apt-get remove",
    );
    assert!(
        shown.contains("countersign: removed; kept /var/lib/countersign"),
        "{shown}"
    );
    assert!(!Path::new("/usr/bin/countersign").exists());
    assert!(Path::new(SIGNER_HOME).join("signer/ed25519.key").exists());
    let shown = ok(
        run("apt-get", &["purge", "-y", "countersign"]),
        "apt-get purge",
    );
    for dir in STATE_DIRS {
        assert!(
            shown.contains(&format!(
                "countersign: purge removes {dir} (its keys, credentials and home)"
            )),
            "{shown}"
        );
        assert!(!Path::new(dir).exists(), "{dir}");
    }
    assert!(
        shown.contains("countersign: purge keeps the PostgreSQL database"),
        "{shown}"
    );
    drop(cluster);
    drop(machine);
    assert!(!user_exists(&agent));
}
