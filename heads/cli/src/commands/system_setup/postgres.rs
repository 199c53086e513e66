//! The local PostgreSQL server as `countersign setup` prepares it: reached
//! only over its Unix socket, as the administrator's OS user (`runuser -u
//! postgres -- psql`), never with a password. It checks that `pg_hba.conf`
//! lets each service's OS user in as the role of the same name by `peer`
//! and trusts nobody, then creates what is missing: the owner role (no
//! login), a login role per OS user that reaches the ledger (each a member
//! of `countersign_signer` or `countersign_head`, whose grants are
//! `deploy/postgres-roles.sql`), the database, the schema and the grants.
//! It never changes `pg_hba.conf` or the server's settings: it says what to
//! change.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::CliError;

/// The grants of the signer's and the heads' roles (the one copy: the
/// source installation runs the same file with psql).
const ROLES_SQL: &str = include_str!("../../../../../deploy/postgres-roles.sql");

/// The role that owns the database and its tables: nobody logs in as it
/// (the schema is applied by the administrator with `SET ROLE`), so no
/// service can drop the ledger's append-only triggers.
pub(super) const OWNER_ROLE: &str = "countersign_owner";

/// The database's server: its socket and its administrator.
pub(super) struct Server<'a> {
    pub(super) admin: &'a str,
    pub(super) socket_dir: &'a Path,
    pub(super) port: u16,
    pub(super) database: &'a str,
}

/// Who connects as what: each login role is an OS user's name, a member of
/// one group role.
pub(super) struct Roles<'a> {
    /// The signer's user (and the console's): `countersign_signer`.
    pub(super) signer: &'a str,
    /// The agent's and the gateway's users: `countersign_head`.
    pub(super) heads: [&'a str; 2],
}

impl Roles<'_> {
    /// Each login role with its group role.
    fn logins(&self) -> [(&str, &'static str); 3] {
        [
            (self.signer, "countersign_signer"),
            (self.heads[0], "countersign_head"),
            (self.heads[1], "countersign_head"),
        ]
    }
}

/// `name` as an SQL identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `text` as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl Server<'_> {
    /// The socket file the server listens on.
    pub(super) fn socket(&self) -> std::path::PathBuf {
        self.socket_dir.join(format!(".s.PGSQL.{}", self.port))
    }

    /// The ledger URL of `role`: the socket, no password.
    pub(super) fn url(&self, role: &str) -> String {
        format!(
            "postgres:///{}?host={}&port={}&user={}",
            self.database,
            self.socket_dir.display(),
            self.port,
            role
        )
    }

    /// `sql` run by psql as the administrator in `database`; its rows, one a
    /// line, columns separated by `|`.
    fn psql(&self, database: &str, sql: &str) -> Result<String, CliError> {
        let mut child = Command::new("runuser")
            .args(["-u", self.admin, "--", "psql", "-X", "-q", "-A", "-t"])
            .args(["-v", "ON_ERROR_STOP=1", "-h"])
            .arg(self.socket_dir)
            .args(["-p", &self.port.to_string(), "-d", database, "-f", "-"])
            .current_dir("/")
            .env_remove("PGPASSWORD")
            .env_remove("PGSERVICE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                CliError::Error(format!(
                    "cannot run psql as {} (runuser; Debian: postgresql-client): {e}",
                    self.admin
                ))
            })?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(sql.as_bytes()).map_err(CliError::error)?;
        }
        let out = child.wait_with_output().map_err(CliError::error)?;
        if !out.status.success() {
            return Err(CliError::Error(format!(
                "psql as {} on {}: {}",
                self.admin,
                self.socket().display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Refuses unless the server runs and `pg_hba.conf` lets each login
    /// role in over the socket by `peer` only, and no rule trusts anyone
    /// with the database.
    pub(super) fn check_access(&self, roles: &Roles<'_>) -> Result<(), CliError> {
        if !self.socket().exists() {
            return Err(CliError::Error(format!(
                "no PostgreSQL server listens on {} (Debian: `apt-get install postgresql`; \
                 another cluster: --pg-socket-dir, --pg-port)",
                self.socket().display()
            )));
        }
        let file = self.psql("postgres", "SELECT current_setting('hba_file');")?;
        let file = file.trim();
        let rules = self.psql(
            "postgres",
            "SELECT line_number, type, array_to_string(database, ','), \
             array_to_string(user_name, ','), auth_method \
             FROM pg_hba_file_rules WHERE error IS NULL ORDER BY line_number;",
        )?;
        let rules: Vec<HbaRule> = rules.lines().filter_map(HbaRule::parse).collect();
        let problems = hba_problems(&rules, self.database, roles);
        if problems.is_empty() {
            return Ok(());
        }
        let users: Vec<&str> = roles.logins().iter().map(|(role, _)| *role).collect();
        Err(CliError::Error(format!(
            "{file} does not let each service in by peer authentication alone:\n  {}\n\
             Put this line above the first rule that matches, remove or narrow every `trust` \
             rule that matches the database, reload PostgreSQL \
             (`systemctl reload postgresql` or `pg_ctlcluster VERSION main reload`) and run setup again:\n\
             \x20   local   {}   {}   peer\n\
             Nothing was changed.",
            problems.join("\n  "),
            self.database,
            users.join(","),
        )))
    }

    /// Creates what is missing: the owner role, the login roles and their
    /// memberships, the database. Refuses a login role that exists with
    /// more than it should have. Returns what it created.
    pub(super) fn prepare(&self, roles: &Roles<'_>) -> Result<Vec<String>, CliError> {
        let logins = roles.logins();
        let names: Vec<String> = logins
            .iter()
            .map(|(role, _)| literal(role))
            .chain([
                literal(OWNER_ROLE),
                literal("countersign_signer"),
                literal("countersign_head"),
            ])
            .collect();
        let existing = self.psql(
            "postgres",
            &format!(
                "SELECT rolname, rolsuper OR rolcreaterole OR rolcreatedb OR rolbypassrls \
                 OR rolreplication FROM pg_roles WHERE rolname IN ({});",
                names.join(", ")
            ),
        )?;
        let existing: Vec<(String, bool)> = existing
            .lines()
            .filter_map(|line| line.split_once('|'))
            .map(|(name, powerful)| (name.to_string(), powerful == "t"))
            .collect();
        let exists = |name: &str| existing.iter().any(|(n, _)| n == name);
        for (role, _) in &logins {
            if existing.iter().any(|(n, powerful)| n == role && *powerful) {
                return Err(CliError::Error(format!(
                    "the PostgreSQL role {role} exists with administrative rights (superuser, \
                     createrole, createdb, replication or bypassrls): a service's role may have \
                     none; remove them (ALTER ROLE {} NOSUPERUSER NOCREATEROLE NOCREATEDB \
                     NOREPLICATION NOBYPASSRLS) and run setup again. Nothing was changed.",
                    ident(role)
                )));
            }
        }
        // Memberships: each login role in its group only.
        let members = self.psql(
            "postgres",
            &format!(
                "SELECT r.rolname, g.rolname FROM pg_auth_members m \
                 JOIN pg_roles r ON r.oid = m.member JOIN pg_roles g ON g.oid = m.roleid \
                 WHERE r.rolname IN ({});",
                names[..logins.len()].join(", ")
            ),
        )?;
        let members: Vec<(String, String)> = members
            .lines()
            .filter_map(|line| line.split_once('|'))
            .map(|(r, g)| (r.to_string(), g.to_string()))
            .collect();
        for (role, group) in &members {
            if !logins.iter().any(|(r, g)| r == role && g == group) {
                return Err(CliError::Error(format!(
                    "the PostgreSQL role {role} is a member of {group}: it would hold that role's \
                     rights too; revoke it (REVOKE {} FROM {}) and run setup again. \
                     Nothing was changed.",
                    ident(group),
                    ident(role)
                )));
            }
        }

        let mut created = Vec::new();
        let mut sql = String::new();
        if !exists(OWNER_ROLE) {
            sql.push_str(&format!("CREATE ROLE {} NOLOGIN;\n", ident(OWNER_ROLE)));
            created.push(format!(
                "created PostgreSQL role {OWNER_ROLE} (owns the ledger; no login)"
            ));
        }
        for group in ["countersign_signer", "countersign_head"] {
            if !exists(group) {
                // postgres-roles.sql creates them too; here first, for the memberships.
                sql.push_str(&format!("CREATE ROLE {} LOGIN;\n", ident(group)));
            }
        }
        for (role, group) in &logins {
            if !exists(role) {
                sql.push_str(&format!("CREATE ROLE {} LOGIN;\n", ident(role)));
                created.push(format!(
                    "created PostgreSQL role {role} (member of {group}; peer, no password)"
                ));
            }
            if !members.iter().any(|(r, g)| r == role && g == group) {
                sql.push_str(&format!("GRANT {} TO {};\n", ident(group), ident(role)));
                if exists(role) {
                    created.push(format!("granted {group} to the PostgreSQL role {role}"));
                }
            }
        }
        if !sql.is_empty() {
            self.psql("postgres", &sql)?;
        }
        let database = self.psql(
            "postgres",
            &format!(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = {};",
                literal(self.database)
            ),
        )?;
        match database.trim() {
            "" => {
                self.psql(
                    "postgres",
                    &format!(
                        "CREATE DATABASE {db} OWNER {owner};\nREVOKE ALL ON DATABASE {db} FROM PUBLIC;\n",
                        db = ident(self.database),
                        owner = ident(OWNER_ROLE)
                    ),
                )?;
                created.push(format!(
                    "created PostgreSQL database {} (owner {OWNER_ROLE})",
                    self.database
                ));
            }
            owner if owner == OWNER_ROLE => {}
            owner => {
                return Err(CliError::Error(format!(
                    "the PostgreSQL database {} exists and belongs to {owner}, not {OWNER_ROLE}: \
                     its owner can drop the ledger's triggers; give it to {OWNER_ROLE} \
                     (ALTER DATABASE {} OWNER TO {OWNER_ROLE}, and its tables) or choose \
                     another --database. Nothing more was changed.",
                    self.database,
                    ident(self.database)
                )));
            }
        }
        Ok(created)
    }

    /// How many of the schema's migrations are applied.
    pub(super) fn migrations(&self) -> Result<usize, CliError> {
        let table = self.psql(
            self.database,
            "SELECT to_regclass('public.schema_migrations') IS NOT NULL;",
        )?;
        if table.trim() != "t" {
            return Ok(0);
        }
        let count = self.psql(
            self.database,
            "SELECT count(*) FROM public.schema_migrations;",
        )?;
        count.trim().parse().map_err(CliError::error)
    }

    /// The owner's URL, as the administrator's OS user uses it: the
    /// tables it creates belong to the owner role.
    pub(super) fn owner_url(&self) -> String {
        format!("{}&options=-c%20role%3D{OWNER_ROLE}", self.url(self.admin))
    }

    /// Applies `deploy/postgres-roles.sql` in the database; returns whether
    /// any privilege changed.
    pub(super) fn grant(&self) -> Result<bool, CliError> {
        const PRIVILEGES: &str = "SELECT grantee || ' ' || table_name || ' ' || privilege_type \
            FROM information_schema.table_privileges \
            WHERE grantee IN ('countersign_signer', 'countersign_head') \
            UNION ALL SELECT grantee || ' ' || table_name || '.' || column_name || ' ' || privilege_type \
            FROM information_schema.column_privileges \
            WHERE grantee IN ('countersign_signer', 'countersign_head') ORDER BY 1;";
        let before = self.psql(self.database, PRIVILEGES)?;
        self.psql(self.database, ROLES_SQL)?;
        let after = self.psql(self.database, PRIVILEGES)?;
        Ok(before != after)
    }
}

/// What in `rules` keeps a service out of peer authentication alone: a
/// login role whose first `local` rule is not `peer` (or that has none),
/// and any rule that trusts one of the roles with `database`.
fn hba_problems(rules: &[HbaRule], database: &str, roles: &Roles<'_>) -> Vec<String> {
    let mut problems = Vec::new();
    let groups = ["countersign_signer", "countersign_head", OWNER_ROLE];
    for (role, _) in roles.logins() {
        match rules
            .iter()
            .find(|r| r.kind == "local" && r.matches(database, role))
        {
            None => problems.push(format!("no `local` rule lets {role} connect to {database}")),
            Some(rule) if rule.auth != "peer" => problems.push(format!(
                "line {}: `{}` makes {role} connect over the socket by {}, not peer",
                rule.line,
                rule.text(),
                rule.auth
            )),
            Some(_) => {}
        }
    }
    for rule in rules {
        let trusted = roles
            .logins()
            .iter()
            .map(|(role, _)| *role)
            .chain(groups)
            .any(|role| rule.matches(database, role));
        if rule.auth == "trust" && trusted {
            problems.push(format!(
                "line {}: `{}` lets anyone connect as any role, without a password",
                rule.line,
                rule.text()
            ));
        }
    }
    problems
}

/// One rule of `pg_hba.conf`, as the server parsed it.
struct HbaRule {
    line: String,
    kind: String,
    databases: Vec<String>,
    users: Vec<String>,
    auth: String,
}

impl HbaRule {
    fn parse(line: &str) -> Option<HbaRule> {
        let mut fields = line.split('|');
        let list = |s: &str| {
            s.split(',')
                .map(|p| p.trim_matches('"').to_string())
                .collect()
        };
        Some(HbaRule {
            line: fields.next()?.to_string(),
            kind: fields.next()?.to_string(),
            databases: list(fields.next()?),
            users: list(fields.next()?),
            auth: fields.next()?.to_string(),
        })
    }

    /// Whether the rule applies to `role` connecting to `database` (group
    /// and file references, `+name` and `@file`, are taken to match: a
    /// rule that might let a role in is one to look at).
    fn matches(&self, database: &str, role: &str) -> bool {
        let database_matches = self.databases.iter().any(|d| {
            d == "all"
                || d == database
                || (d == "sameuser" && database == role)
                || d == "samerole"
                || d.starts_with('@')
        });
        let user_matches = self
            .users
            .iter()
            .any(|u| u == "all" || u == role || u.starts_with('+') || u.starts_with('@'));
        database_matches && user_matches
    }

    fn text(&self) -> String {
        format!(
            "{} {} {} {}",
            self.kind,
            self.databases.join(","),
            self.users.join(","),
            self.auth
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLES: Roles<'static> = Roles {
        signer: "countersign",
        heads: ["alice", "countersign-gateway"],
    };

    fn rules(text: &str) -> Vec<HbaRule> {
        text.lines().filter_map(HbaRule::parse).collect()
    }

    #[test]
    fn debians_default_rules_let_every_service_in_by_peer() {
        let debian = "1|local|all|postgres|peer\n2|local|all|all|peer\n\
                      3|host|all|all|scram-sha-256\n4|local|replication|all|peer";
        assert_eq!(
            hba_problems(&rules(debian), "countersign", &ROLES),
            Vec::<String>::new()
        );
    }

    #[test]
    fn refuses_a_trusting_rule_and_names_its_line() {
        let trusting = "1|local|all|all|trust\n2|host|all|all|trust";
        let problems = hba_problems(&rules(trusting), "countersign", &ROLES);
        assert_eq!(
            problems,
            [
                "line 1: `local all all trust` makes countersign connect over the socket by trust, not peer",
                "line 1: `local all all trust` makes alice connect over the socket by trust, not peer",
                "line 1: `local all all trust` makes countersign-gateway connect over the socket by trust, not peer",
                "line 1: `local all all trust` lets anyone connect as any role, without a password",
                "line 2: `host all all trust` lets anyone connect as any role, without a password",
            ]
        );
    }

    #[test]
    fn refuses_a_password_rule_before_peer_and_a_role_with_no_local_rule() {
        let mixed = "1|local|countersign|alice|scram-sha-256\n2|local|countersign|countersign|peer";
        assert_eq!(
            hba_problems(&rules(mixed), "countersign", &ROLES),
            [
                "line 1: `local countersign alice scram-sha-256` makes alice connect over the socket by scram-sha-256, not peer",
                "no `local` rule lets countersign-gateway connect to countersign",
            ]
        );
    }

    #[test]
    fn a_group_or_file_reference_counts_as_matching() {
        let group = "1|local|all|+admins|md5\n2|local|all|all|peer";
        let problems = hba_problems(&rules(group), "countersign", &ROLES);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(
            problems.iter().all(|p| p.contains("by md5, not peer")),
            "{problems:?}"
        );
    }

    #[test]
    fn names_are_quoted_as_sql_wants() {
        assert_eq!(ident("countersign-gateway"), "\"countersign-gateway\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(literal("o'neil"), "'o''neil'");
    }
}
