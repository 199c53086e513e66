//! `countersign setup`: an installed package made into the hardened
//! installation in one command, as root, for a named agent user.
//!
//! It owns the database and the services; the users and their homes are
//! `deploy/setup-system.sh`, compiled in and run here (the one
//! implementation, which a source installation also runs by itself). It
//! is idempotent: it records every file of the homes it lays out and every
//! database object before, and says what changed, or that nothing did. It
//! never writes `pg_hba.conf` or a unit file, and never says a service runs
//! that it did not see run.

mod postgres;
mod services;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::Io;
use crate::args::SetupArgs;
use crate::error::CliError;
use crate::output::{write_json, write_text};
use postgres::{Roles, Server};
use services::Units;

/// The users and their homes (the one implementation; see the module doc).
const SETUP_SCRIPT: &str = include_str!("../../../../../deploy/setup-system.sh");

/// The package's system users (`debian/countersign.sysusers`).
const SIGNER_USER: &str = "countersign";
const PREMISE_USER: &str = "countersign-premise";
const NOTIFY_USER: &str = "countersign-notify";
const GATEWAY_USER: &str = "countersign-gateway";
/// Their state directories (`debian/countersign.tmpfiles`), where the
/// script lays out the homes.
const STATE_DIRS: [&str; 3] = [
    "/var/lib/countersign",
    "/var/lib/countersign-notify",
    "/var/lib/countersign-gateway",
];
const SIGNER_HOME: &str = "/var/lib/countersign/home";

/// Whether `name` is a user or database name setup accepts: what
/// `useradd` accepts by default, and nothing that needs quoting in a URL.
fn plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '-'))
        && name.len() <= 32
}

/// The home directory of `user` (getent), or why not.
fn home_of(user: &str) -> Result<PathBuf, CliError> {
    let out = Command::new("getent")
        .args(["passwd", user])
        .output()
        .map_err(|e| CliError::Error(format!("cannot run getent: {e}")))?;
    let line = String::from_utf8_lossy(&out.stdout);
    match line.trim().split(':').nth(5) {
        Some(home) if out.status.success() && home.starts_with('/') => Ok(PathBuf::from(home)),
        _ => Err(CliError::Error(format!(
            "no such user: {user} (create the agent's user first: `useradd --create-home {user}`)"
        ))),
    }
}

/// A file's or directory's owner, mode and content (files and links).
type Entry = (u32, u32, u32, Option<Vec<u8>>);

/// Every file and directory under `roots`, as root sees them.
fn snapshot(roots: &[PathBuf]) -> BTreeMap<PathBuf, Entry> {
    let mut seen = BTreeMap::new();
    let mut stack: Vec<PathBuf> = roots.to_vec();
    while let Some(path) = stack.pop() {
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let content = if meta.is_dir() {
            if let Ok(entries) = std::fs::read_dir(&path) {
                stack.extend(entries.filter_map(|e| e.ok()).map(|e| e.path()));
            }
            None
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(&path)
                .ok()
                .map(|t| t.into_os_string().into_encoded_bytes())
        } else {
            std::fs::read(&path).ok()
        };
        seen.insert(path, (meta.mode(), meta.uid(), meta.gid(), content));
    }
    seen
}

/// What differs between two snapshots of `roots`: per root, how many
/// paths were created, and each path rewritten or removed.
fn differences(
    roots: &[PathBuf],
    before: &BTreeMap<PathBuf, Entry>,
    after: &BTreeMap<PathBuf, Entry>,
) -> Vec<String> {
    let mut changed = Vec::new();
    for root in roots {
        let created = after
            .keys()
            .filter(|p| p.starts_with(root) && !before.contains_key(*p))
            .count();
        if created > 0 {
            changed.push(format!(
                "{}: {created} files and directories created",
                root.display()
            ));
        }
    }
    for (path, entry) in after {
        if before.get(path).is_some_and(|old| old != entry) {
            changed.push(format!("rewrote {}", path.display()));
        }
    }
    for path in before.keys().filter(|p| !after.contains_key(*p)) {
        changed.push(format!("removed {}", path.display()));
    }
    changed
}

/// `countersign setup`
pub(crate) fn setup(args: SetupArgs, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    if !rustix::process::geteuid().is_root() {
        return Err(CliError::Error(format!(
            "setup must run as root: it creates the database's roles, the services' homes and \
             the agent's (sudo countersign setup --agent-user {})",
            args.agent_user
        )));
    }
    let agent = args.agent_user.as_str();
    if !plain_name(agent) {
        return Err(CliError::Error(format!(
            "{agent:?} is not a plain user name (lowercase letters, digits, `_` and `-`)"
        )));
    }
    if agent == "root"
        || [
            SIGNER_USER,
            PREMISE_USER,
            NOTIFY_USER,
            GATEWAY_USER,
            args.pg_admin.as_str(),
        ]
        .contains(&agent)
    {
        return Err(CliError::Error(format!(
            "the agent's user must be a user of its own, not {agent}"
        )));
    }
    if !plain_name(&args.database) || args.database.contains('-') {
        return Err(CliError::Error(format!(
            "{:?} is not a plain database name (lowercase letters, digits and `_`)",
            args.database
        )));
    }
    let agent_home = home_of(agent)?.join(".config/countersign");
    let exe = std::env::current_exe().map_err(CliError::error)?;
    let bin = exe
        .parent()
        .ok_or_else(|| CliError::Error("this program has no directory".into()))?
        .to_path_buf();
    for name in ["countersign-signer", "countersign-premise"] {
        if !bin.join(name).is_file() {
            return Err(CliError::Error(format!(
                "{} is missing: setup runs the binaries installed beside it (the package's, in /usr/bin)",
                bin.join(name).display()
            )));
        }
    }

    // 1. The database: access first, then what is missing.
    let server = Server {
        admin: &args.pg_admin,
        socket_dir: &args.pg_socket_dir,
        port: args.pg_port,
        database: &args.database,
    };
    let roles = Roles {
        signer: SIGNER_USER,
        heads: [agent, GATEWAY_USER],
    };
    server.check_access(&roles)?;
    let mut changed = server.prepare(&roles)?;
    let applied = server.migrations()?;
    let out = Command::new("runuser")
        .args(["-u", &args.pg_admin, "--"])
        .arg(bin.join("countersign"))
        .arg("setup-schema")
        .env("COUNTERSIGN_SETUP_SCHEMA_URL", server.owner_url())
        .current_dir("/")
        .output()
        .map_err(|e| CliError::Error(format!("cannot run runuser: {e}")))?;
    if !out.status.success() {
        return Err(CliError::Error(format!(
            "applying the ledger's schema as {}: {}",
            args.pg_admin,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let now = server.migrations()?;
    if now != applied {
        changed.push(format!(
            "ledger schema: {} migration(s) applied ({now} in all)",
            now - applied
        ));
    }
    if server.grant()? {
        changed.push(
            "grants of countersign_signer and countersign_head (deploy/postgres-roles.sql)".into(),
        );
    }

    // 2. The users and their homes.
    let roots: Vec<PathBuf> = STATE_DIRS
        .iter()
        .map(PathBuf::from)
        .chain([agent_home.clone()])
        .collect();
    let before = snapshot(&roots);
    let out = Command::new("bash")
        .arg("-c")
        .arg(SETUP_SCRIPT)
        .arg("setup-system.sh")
        .arg("--bin-dir")
        .arg(&bin)
        .args(["--signer-addr", &args.signer_addr.to_string()])
        .args(["--console-addr", &args.console_addr.to_string()])
        .arg(agent)
        .env("COUNTERSIGN_SIGNER_LEDGER_URL", server.url(SIGNER_USER))
        .env("COUNTERSIGN_HEAD_LEDGER_URL", server.url(agent))
        .env("COUNTERSIGN_GATEWAY_LEDGER_URL", server.url(GATEWAY_USER))
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| CliError::Error(format!("cannot run bash: {e}")))?;
    if !out.status.success() {
        return Err(CliError::Error(format!(
            "laying out the homes: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    changed.extend(differences(&roots, &before, &snapshot(&roots)));

    // 3. The services.
    let units = services::start().map_err(CliError::Error)?;
    if let Units::Systemd { changed: started } = &units {
        changed.extend(started.iter().cloned());
    }

    if json {
        let (started, why) = match &units {
            Units::Systemd { .. } => (true, None),
            Units::NoSystemd { why } => (false, Some(why.clone())),
        };
        return write_json(
            io.out,
            &json!({
                "agent_user": agent,
                "agent_home": agent_home.display().to_string(),
                "signer_home": SIGNER_HOME,
                "database": args.database,
                "ledger_urls": {
                    "signer": server.url(SIGNER_USER),
                    "agent": server.url(agent),
                    "gateway": server.url(GATEWAY_USER),
                },
                "changed": changed,
                "services_started": started,
                "services_not_started_because": why,
            }),
        );
    }
    write_text(
        io.out,
        &summary(&args, &server, &agent_home, &bin, &changed, &units),
    )
}

/// What setup did and what the person does next.
fn summary(
    args: &SetupArgs,
    server: &Server<'_>,
    agent_home: &Path,
    bin: &Path,
    changed: &[String],
    units: &Units,
) -> String {
    let agent = &args.agent_user;
    let port = args.console_addr.port();
    let cli = bin.join("countersign").display().to_string();
    let signer_bin = bin.join("countersign-signer").display().to_string();
    let mut text = format!(
        "countersign setup: the hardened installation for the agent's user {agent}\n\
         \x20 ledger: PostgreSQL database {db} on {socket}, peer authentication (no password)\n\
         \x20 roles: {SIGNER_USER} (signer, console), {agent} and {GATEWAY_USER} (heads), \
         {owner} (owns the schema; no login)\n\
         \x20 homes: {SIGNER_HOME} ({SIGNER_USER}), /var/lib/countersign-notify/home ({NOTIFY_USER}), \
         /var/lib/countersign-gateway/home ({GATEWAY_USER}), {agent_home} ({agent}: head only)\n",
        db = server.database,
        socket = server.socket().display(),
        owner = postgres::OWNER_ROLE,
        agent_home = agent_home.display(),
    );
    if changed.is_empty() {
        text.push_str("nothing changed: the installation already was as setup makes it\n");
    } else {
        text.push_str("changed:\n");
        for line in changed {
            text.push_str(&format!("  {line}\n"));
        }
    }
    let names: Vec<&str> = services::STARTED
        .iter()
        .map(|u| u.trim_end_matches(".service"))
        .collect();
    match units {
        Units::Systemd { .. } => text.push_str(&format!(
            "services: {} enabled and running (systemd)\n",
            names.join(", ")
        )),
        Units::NoSystemd { why } => text.push_str(&format!(
            "services: NOT started: {why}. Start them under systemd with \
             `systemctl enable --now {}`, or run what the units run, as their users \
             (without the units' sandboxing):\n{}",
            names.join(" "),
            services::by_hand(bin)
        )),
    }
    let left: Vec<&str> = services::LEFT_OFF
        .iter()
        .map(|u| u.trim_end_matches(".service"))
        .collect();
    text.push_str(&format!(
        "  {} stay off until configured (docs/notifications.md, docs/gateway.md)\n",
        left.join(" and ")
    ));
    text.push_str(&format!(
        "next, once the services run, the person who approves (the console: https://console.localhost:{port}/):\n\
         \x20 1. trust the console's CA in your browser, once: the administrator prints it\n\
         \x20      runuser -u {SIGNER_USER} -- {cli} --home {SIGNER_HOME} console trust --pem > console-ca.pem\n\
         \x20    and you, as your desktop user, compare its fingerprint and import it (certutil: libnss3-tools)\n\
         \x20      {cli} console trust --ca console-ca.pem --import\n\
         \x20 2. pair your browser: open the link this prints (at a terminal)\n\
         \x20      runuser -u {SIGNER_USER} -- {cli} --home {SIGNER_HOME} console pair\n\
         \x20 3. enrol a passkey on the console's Passkeys page with a one-time code (30 minutes, one attempt)\n\
         \x20      runuser -u {SIGNER_USER} -- {signer_bin} passkeys enrolment-code --approver console --home {SIGNER_HOME}\n\
         \x20 then check each side:\n\
         \x20      runuser -u {SIGNER_USER} -- {cli} --home {SIGNER_HOME} doctor\n\
         \x20      runuser -u {agent} -- {cli} doctor\n\
         \x20 and the agent proposes as {agent} (`countersign propose`, `countersign mcp`); approve in the console.\n\
         After upgrading the package, run this command again: it applies new migrations and grants.\n"
    ));
    text
}

/// `countersign setup-schema`: opening the ledger with the owner's URL
/// brings its schema up to date.
pub(crate) async fn schema(url: &str, io: &mut Io<'_>) -> Result<(), CliError> {
    countersign_ledger::Ledger::open(url)
        .await
        .map_err(CliError::error)?;
    write_text(io.out, "ledger schema up to date\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_plain_user_names_only() {
        for name in ["alice", "cs-agent_1", "_svc"] {
            assert!(plain_name(name), "{name}");
        }
        for name in [
            "",
            "Alice",
            "-x",
            "1a",
            "a b",
            "a$",
            "a\"b",
            "a;b",
            &"a".repeat(33),
        ] {
            assert!(!plain_name(name), "{name:?}");
        }
    }

    #[test]
    fn says_what_was_created_rewritten_and_removed() {
        let root = PathBuf::from("/h");
        let entry = |content: &str| (0o100600, 1, 1, Some(content.as_bytes().to_vec()));
        let before: BTreeMap<PathBuf, Entry> = [
            (root.join("config.toml"), entry("a")),
            (root.join("gone"), entry("x")),
            (root.join("same"), entry("s")),
        ]
        .into();
        let after: BTreeMap<PathBuf, Entry> = [
            (root.join("config.toml"), entry("b")),
            (root.join("new"), entry("n")),
            (root.join("same"), entry("s")),
        ]
        .into();
        assert_eq!(
            differences(std::slice::from_ref(&root), &before, &after),
            [
                "/h: 1 files and directories created",
                "rewrote /h/config.toml",
                "removed /h/gone",
            ]
        );
        assert!(differences(&[root], &after, &after).is_empty());
    }
}
