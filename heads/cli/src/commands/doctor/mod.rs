//! `countersign doctor [--json]`: check an installation before a person's
//! decision depends on it. A half-configured installation otherwise starts
//! cleanly and fails only once someone has approved.
//!
//! Every check runs whatever the others found, and every network check is
//! bounded ([`NETWORK_TIMEOUT`]). The doctor only reads: it opens no ledger
//! for writing (no migration), calls only read-only RPCs (`PublicKeys`,
//! `ListPending`) and sends the console one `GET /`. With a `gateway.toml`,
//! it starts each upstream MCP server once to list its tools, and stops it.
//!
//! Known limit: no read-only RPC exposes the signer's registry revisions, so
//! the registry check can only say "equal" when the signer runs from this
//! same home (it then reads the same file, and follows its changes); for a
//! signer elsewhere it warns that it cannot compare. Likewise no RPC gives
//! the signer's clock: the skew is measured against PostgreSQL's, and a
//! SQLite ledger means signer and head share this host's clock.

mod certs;
mod console;
mod console_cert;
mod gateway;
mod report;
mod signers;
mod witnesses;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use countersign_gate::signer_client;
use countersign_identity::{Config, Home, Role};
use countersign_ledger::{Ledger, SchemaStatus};
use countersign_proto::v1::{ListPendingRequest, PublicKeysRequest};
use countersign_registry::Registry;
use countersign_verifier::lifetimes::LIFETIME_SKEW;

use crate::Io;
use crate::error::CliError;
use crate::output::{write_json, write_text};
use report::Check;

/// The bound on each network check.
const NETWORK_TIMEOUT: Duration = Duration::from_secs(5);

/// The fix for a signer that does not answer.
const START_SIGNER: &str =
    "start the signer with `countersign up` (or check [signer] addr in config.toml)";

/// The fix for a client credential this home cannot load: the message
/// names the file, and the signer was never asked.
const FIX_CREDENTIAL: &str = "fix the file the message names: a private key must be a regular file of this user, mode 0600 (`chmod 600 FILE`)";

/// Why a check's connection to the signer failed: this home's credential
/// (nothing was sent), or the signer (unreachable, or it refused).
enum Connecting {
    Credential(String),
    Signer(String),
}

impl From<signer_client::ConnectError> for Connecting {
    fn from(e: signer_client::ConnectError) -> Self {
        match e {
            signer_client::ConnectError::Tls(_) => Connecting::Credential(e.to_string()),
            other => Connecting::Signer(other.to_string()),
        }
    }
}

/// `countersign doctor`
pub(crate) async fn doctor(home: &Home, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let (mut checks, loaded) = check_home(home);
    if let Some((config, principal)) = &loaded {
        checks.extend(certs::check_all(
            home,
            principal,
            time::OffsetDateTime::now_utc(),
        ));
        let (signer, signers, approver, ledger, console) = tokio::join!(
            check_signer(home, config),
            signers::check_signers(home, config),
            check_approver(home, config),
            check_ledger(config),
            console::check_console(home, config),
        );
        let (signer, keys) = signer;
        let (ledger, schema) = ledger;
        checks.push(signer);
        checks.extend(signers);
        checks.push(approver);
        let (registry_check, registry) = check_registry(home, config);
        checks.push(registry_check);
        checks.push(keys);
        checks.push(ledger);
        checks.push(check_clock(schema.as_ref()));
        checks.push(console);
        checks.push(console_cert::check_console_cert(home, config));
        if let Some(registry) = &registry {
            checks.extend(gateway::check_gateway(registry).await);
        }
        checks.extend(witnesses::check_witnesses(config));
    } else {
        let skipped = "not checked: the home or its configuration did not load";
        for name in [
            "certificates",
            "signer",
            "approver",
            "registry",
            "key sets",
            "ledger",
            "clock skew",
            "console",
            "console certificate",
        ] {
            checks.push(Check::warn(name, skipped, Some("fix `home` first".into())));
        }
    }
    if json {
        write_json(io.out, &report::json(&checks))?;
    } else {
        write_text(io.out, &report::text(&checks))?;
    }
    let failed = checks
        .iter()
        .filter(|c| c.status == report::Status::Fail)
        .count();
    match failed {
        0 => Ok(()),
        1 => Err(CliError::Error("1 check failed".into())),
        n => Err(CliError::Error(format!("{n} checks failed"))),
    }
}

/// The home's permissions and its configuration.
fn check_home(home: &Home) -> (Vec<Check>, Option<(Config, String)>) {
    const NAME: &str = "home";
    let root = home.root().display().to_string();
    if !home.config_path().exists() {
        return (
            vec![Check::fail(
                NAME,
                format!("{root} is not initialized"),
                "run `countersign init`",
            )],
            None,
        );
    }
    let mut checks = Vec::new();
    match home.check() {
        Ok(()) => checks.push(Check::ok(
            NAME,
            format!("{root}: private to this user (0700 directories, 0600 files)"),
        )),
        Err(e) => checks.push(Check::fail(
            NAME,
            e.to_string(),
            "make the home and everything in it yours and private (chmod 700 directories, 600 files)",
        )),
    }
    let loaded = match (Config::load(home), home.principal()) {
        (Ok(config), Ok(principal)) => {
            checks.push(Check::ok(
                "config",
                format!(
                    "{} parses; principal {principal}",
                    home.config_path().display()
                ),
            ));
            Some((config, principal))
        }
        (Err(e), _) | (_, Err(e)) => {
            checks.push(Check::fail(
                "config",
                e.to_string(),
                "correct config.toml (unknown keys are refused) or the files it names",
            ));
            None
        }
    };
    (checks, loaded)
}

/// Connects as head and lists the signer's keys; also returns the key-set
/// check, which needs the same connection.
async fn check_signer(home: &Home, config: &Config) -> (Check, Check) {
    let addr = &config.signer_addr;
    let outcome = tokio::time::timeout(NETWORK_TIMEOUT, async {
        let mut head = signer_client::connect(home, addr, Role::Head).await?;
        let published: Vec<String> = head
            .public_keys(PublicKeysRequest {})
            .await
            .map_err(|s| Connecting::Signer(format!("PublicKeys failed: {}", s.message())))?
            .into_inner()
            .keys
            .into_iter()
            .map(|k| k.key_id)
            .collect();
        // What the gate builds from the same answer: the ids it derives
        // from the keys themselves (refused if any id does not match).
        let gate = signer_client::public_keys(&mut head)
            .await
            .map(|ring| ring.key_ids().map(str::to_owned).collect::<Vec<_>>());
        Ok::<_, Connecting>((published, gate))
    })
    .await
    .unwrap_or_else(|_| {
        Err(Connecting::Signer(format!(
            "no answer from {addr} within {} s",
            NETWORK_TIMEOUT.as_secs()
        )))
    });
    let not_checked = || {
        Check::warn(
            "key sets",
            "not checked: the signer did not answer",
            Some("fix `signer` first".into()),
        )
    };
    match outcome {
        Err(Connecting::Credential(e)) => (
            Check::fail(
                "signer",
                format!("this home's head credential cannot be used: {e}"),
                FIX_CREDENTIAL,
            ),
            not_checked(),
        ),
        Err(Connecting::Signer(e)) => (Check::fail("signer", e, START_SIGNER), not_checked()),
        Ok((published, gate)) => {
            let signer = Check::ok(
                "signer",
                format!(
                    "{addr} answers this head; keys {}",
                    if published.is_empty() {
                        "none".to_string()
                    } else {
                        published.join(", ")
                    }
                ),
            );
            let keys = match gate {
                Ok(gate) => report::key_sets(&published, &gate),
                Err(e) => Check::fail(
                    "key sets",
                    format!("this head cannot use the signer's keys: {e}"),
                    "upgrade the signer and this head to the same countersign release",
                ),
            };
            (signer, keys)
        }
    }
}

/// Connects as approver and lists the pending decisions.
async fn check_approver(home: &Home, config: &Config) -> Check {
    const NAME: &str = "approver";
    if !home.client_cert_path(Role::Approver).exists() {
        return Check::warn(
            NAME,
            "no approver certificate in this home (a head-only home): not checked",
            None,
        );
    }
    let addr = &config.signer_addr;
    let outcome = tokio::time::timeout(NETWORK_TIMEOUT, async {
        let mut approver = signer_client::connect(home, addr, Role::Approver)
            .await
            .map_err(|e| match Connecting::from(e) {
                Connecting::Credential(e) => (
                    format!("this home's approver credential cannot be used: {e}"),
                    Some(FIX_CREDENTIAL.to_owned()),
                ),
                Connecting::Signer(e) => (e, None),
            })?;
        approver
            .list_pending(ListPendingRequest {})
            .await
            .map(|r| r.into_inner().proposals.len())
            .map_err(|s| {
                (
                    format!("the signer refused ListPending: {}", s.message()),
                    Some(
                        "check that pki/approver.pem is this installation's approver certificate"
                            .to_string(),
                    ),
                )
            })
    })
    .await
    .unwrap_or_else(|_| {
        Err((
            format!(
                "no answer from {addr} within {} s",
                NETWORK_TIMEOUT.as_secs()
            ),
            None,
        ))
    });
    match outcome {
        Ok(pending) => Check::ok(
            NAME,
            format!("the signer accepts this approver; {pending} pending"),
        ),
        Err((detail, Some(fix))) => Check::fail(NAME, detail, fix),
        // The `signer` check reports (and fails) an unreachable signer.
        Err((detail, None)) => Check::warn(
            NAME,
            format!("not checked: {detail}"),
            Some("fix `signer` first".into()),
        ),
    }
}

/// The local registry loads (and, if it does, the registry); whether the
/// signer's is the same.
fn check_registry(home: &Home, config: &Config) -> (Check, Option<Registry>) {
    const NAME: &str = "registry";
    let path = config.registry.display();
    let registry = match Registry::load(&config.registry) {
        Ok(registry) => registry,
        Err(e) => {
            let fix = "correct the registry file (see `countersign ops list`)";
            return (Check::fail(NAME, format!("{path}: {e}"), fix), None);
        }
    };
    let count = registry.operations().count();
    let check = if home.has_signing_keys() {
        Check::ok(
            NAME,
            format!(
                "{count} operations from {path}; the signer of this home reads the same file and follows its changes, so revisions are equal"
            ),
        )
    } else {
        Check::warn(
            NAME,
            format!(
                "{count} operations from {path}; cannot compare with the signer's: it runs from another home and no read-only RPC exposes its registry revisions"
            ),
            Some("make sure the signer's [registry] path holds the same file".into()),
        )
    };
    (check, Some(registry))
}

/// The ledger is reachable and migrated; its schema (for the clock check).
async fn check_ledger(config: &Config) -> (Check, Option<SchemaStatus>) {
    const NAME: &str = "ledger";
    // A PostgreSQL URL may hold a password: name only the backend.
    let what = match config.ledger_url.strip_prefix("sqlite://") {
        Some(path) => format!("SQLite {path}"),
        None => "PostgreSQL".to_string(),
    };
    let status = tokio::time::timeout(NETWORK_TIMEOUT, Ledger::schema_status(&config.ledger_url))
        .await
        .unwrap_or_else(|_| {
            Err(countersign_ledger::LedgerError::Database(format!(
                "no answer within {} s",
                NETWORK_TIMEOUT.as_secs()
            )))
        });
    match status {
        Err(e) => (
            Check::fail(
                NAME,
                format!("{what}: {e}"),
                "check [ledger] url in config.toml and that the database is up; `countersign up` creates and migrates a SQLite ledger",
            ),
            None,
        ),
        Ok(schema) if !schema.is_current() => {
            let check = Check::fail(
                NAME,
                format!(
                    "{what}: schema version {}, this build expects {}",
                    schema.current_version(),
                    schema.expected_version()
                ),
                "start the signer once (`countersign up`), which migrates the ledger; on PostgreSQL, as the role that owns the schema",
            );
            (check, Some(schema))
        }
        Ok(schema) => (
            Check::ok(
                NAME,
                format!(
                    "{what}: reachable, schema version {} as this build expects",
                    schema.current_version()
                ),
            ),
            Some(schema),
        ),
    }
}

/// This host's clock against the ledger server's.
fn check_clock(schema: Option<&SchemaStatus>) -> Check {
    match schema.map(|s| s.server_time_unix) {
        None => Check::warn(
            "clock skew",
            "not checked: the ledger did not answer",
            Some("fix `ledger` first".into()),
        ),
        Some(None) => Check::ok(
            "clock skew",
            "same host: the SQLite ledger means the signer shares this host's clock",
        ),
        Some(Some(server)) => {
            let local = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0);
            report::clock_skew(
                "the PostgreSQL server's clock",
                server - local,
                LIFETIME_SKEW.whole_seconds(),
            )
        }
    }
}
