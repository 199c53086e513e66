//! `config.toml`: where the signer listens, where the ledger and the registry
//! live, the issuing policy, the verifier's lifetime ceiling, and where the
//! web console listens (so heads can point a person at a proposal's page),
//! whether approvals need a passkey (`[passkeys]`), and whether the signer
//! approves under auto-approval rules (`[rules]`, off by default).
//!
//! Unknown keys are refused. Relative paths (registry, SQLite ledger file)
//! are anchored to the home directory, never to the current working
//! directory. This module does not read the registry or open the ledger;
//! [`Config::load`] checks who can write them (module `paths`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::console_config::{ConsoleConfig, ConsoleSection};
use crate::files::read_private;
use crate::notify::{NotifyConfig, NotifySection, notify_config};
use crate::paths::{ConfiguredFile, check_configured_file, sqlite_ledger_file};
use crate::tlog_config::{TlogConfig, TlogSection, tlog_config};
use crate::{Home, IdentityError};

/// Where the signer listens and heads connect, unless configured.
pub const DEFAULT_SIGNER_ADDR: &str = "127.0.0.1:7443";
/// How long a head that claimed a handoff has to present it, unless
/// configured (`[signer] handoff_claim_lease_secs`).
pub const DEFAULT_HANDOFF_CLAIM_LEASE_SECS: u64 = 60;
/// The longest claim lease the signer accepts.
pub const MAX_HANDOFF_CLAIM_LEASE_SECS: u64 = 3600;
/// How often a signer writes its checkpoints, unless configured
/// (`[signer] checkpoint_every_secs`): also the most the transparency
/// log's checkpoints may lag while it grows.
pub const DEFAULT_CHECKPOINT_EVERY_SECS: u64 = 60;
/// Where the web console listens in the configuration `countersign init`
/// writes. A configuration without a `[console]` section has no console.
pub const DEFAULT_CONSOLE_ADDR: &str = "127.0.0.1:7444";
use countersign_verifier::lifetimes::DEFAULT_LIFETIME_SECS;
/// The longest proof lifetime the signer ever issues, in seconds.
pub use countersign_verifier::lifetimes::LIFETIME_CAP_SECS as MAX_LIFETIME_CAP_SECS;

/// The most `[signer] fallback_addrs` a configuration may name.
pub(crate) const MAX_SIGNER_FALLBACKS: usize = 7;

/// The resolved configuration of an installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `host:port` the signer listens on and heads connect to.
    pub signer_addr: String,
    /// `[signer] fallback_addrs`: the other signers of the same ledger a
    /// head, a console, the notifier or the gateway connects to when
    /// `signer_addr` does not answer, in order (`crate::failover`).
    pub signer_fallbacks: Vec<String>,
    /// How long a claimed handoff stays with the head that claimed it
    /// before the signer hands it to another head, if the ledger shows it
    /// unused (`[signer] handoff_claim_lease_secs`, default
    /// [`DEFAULT_HANDOFF_CLAIM_LEASE_SECS`]): a head killed between claim
    /// and presentation does not strand the approval.
    pub handoff_claim_lease_secs: u64,
    /// How often the signer holding the checkpoint chore writes the
    /// chains' and the log's checkpoints, in seconds (`[signer]
    /// checkpoint_every_secs`, 1..=60, default
    /// [`DEFAULT_CHECKPOINT_EVERY_SECS`]); the chore's lease runs three
    /// intervals.
    pub checkpoint_every_secs: u64,
    /// sqlx URL of the ledger; SQLite paths are absolute after resolution.
    pub ledger_url: String,
    /// Absolute path of the operation registry.
    pub registry: PathBuf,
    /// What the signer puts into proofs.
    pub policy: PolicyConfig,
    /// The ceiling every verifier in this installation enforces on a proof's lifetime.
    pub verifier_max_lifetime_secs: u64,
    /// The web console (`[console]`): where it listens, its https names,
    /// its certificate; `None` when the configuration has no console
    /// section.
    pub console: Option<ConsoleConfig>,
    /// The signer's passkey settings (`[passkeys]`); `None` when the
    /// configuration has no passkeys section: no passkey is enrolled or
    /// checked, and only operations that require one cannot be approved.
    pub passkeys: Option<PasskeyConfig>,
    /// Where each long-running process serves `GET /metrics` (`[metrics]`);
    /// every address is loopback, and an absent one serves nothing.
    pub metrics: MetricsConfig,
    /// How the signer tells a person that a proposal waits (`[notify]`);
    /// `None` (the default) sends nothing.
    pub notify: Option<NotifyConfig>,
    /// Whether the signer approves proposals under auto-approval rules
    /// (`[rules] enabled`, default false: no rule ever matches, and no rule
    /// can be created).
    pub rules_enabled: bool,
    /// Where premise programs run (`[premise] socket`): the premise
    /// service's unix socket (the hardened installation: its own system
    /// user), or `None` (the default) for a Landlock-restricted child of
    /// the asking process that cannot reach the home.
    pub premise_socket: Option<PathBuf>,
    /// The transparency log's witnesses (`[tlog] policy`, ...): `None`
    /// (the default) sends checkpoints to no witness.
    pub tlog: Option<TlogConfig>,
}

/// `[metrics]`: one loopback address per kind of process, since the signer
/// and heads often run on one host. A process whose key is absent (the
/// default) counts but serves nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `countersign-signer serve` (`signer`).
    pub signer: Option<SocketAddr>,
    /// `countersign api serve` (`api`).
    pub api: Option<SocketAddr>,
    /// `countersign mcp --listen` (`mcp`; a stdio MCP server is one
    /// process per client and serves none).
    pub mcp: Option<SocketAddr>,
    /// `countersign console` (`console`).
    pub console: Option<SocketAddr>,
    /// `countersign notify serve`, and the notify task of `countersign up`
    /// (`notify`).
    pub notify: Option<SocketAddr>,
}

/// Where passkeys are made and whether every approval needs one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyConfig {
    /// Whether every approval needs a passkey assertion with user
    /// verification (`required`, default false: only operations that say
    /// `require_passkey` need one).
    pub required: bool,
    /// The WebAuthn relying party id (`rp_id`, default the console's first
    /// name, `console.localhost`; browsers refuse an IP address).
    pub rp_id: String,
    /// The exact https origins a browser may report (`origins`; default
    /// the console's, `https://console.localhost:<console port>`).
    pub origins: Vec<String>,
}

/// The issuing policy (mirrors `countersign_registry::Policy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyConfig {
    /// The `aud` claim; default `countersign:<principal>`.
    pub audience: String,
    /// Lifetime of a proof unless its operation sets one.
    pub default_lifetime_secs: u64,
    /// Longest lifetime any operation may ask for (at most [`MAX_LIFETIME_CAP_SECS`]).
    pub max_lifetime_secs: u64,
    /// How long a proposal waits for a decision unless its operation sets
    /// a window (`decision_window_secs`, 1..=[`MAX_DECISION_WINDOW_SECS`],
    /// default [`DEFAULT_DECISION_WINDOW_SECS`]).
    pub decision_window_secs: u64,
    /// The binding Cedar policy set (`cedar`, absolute), if any: what it
    /// forbids is refused, what it requires approval for waits for the
    /// approvers it names, and a rule approves only what it permits.
    pub cedar: Option<PathBuf>,
    /// A log-only Cedar policy set (`cedar_log_only`, absolute), if any:
    /// evaluated beside the binding one, its differences recorded, never
    /// deciding anything.
    pub cedar_log_only: Option<PathBuf>,
}

/// The decision window of a proposal when neither its operation nor the
/// policy sets one: an hour.
pub const DEFAULT_DECISION_WINDOW_SECS: u64 = 3600;
/// The longest decision window: 7 days.
pub const MAX_DECISION_WINDOW_SECS: u64 = 7 * 24 * 60 * 60;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    #[serde(default)]
    signer: SignerSection,
    #[serde(default)]
    ledger: LedgerSection,
    #[serde(default)]
    registry: RegistrySection,
    #[serde(default)]
    policy: PolicySection,
    #[serde(default)]
    verifier: VerifierSection,
    console: Option<ConsoleSection>,
    passkeys: Option<PasskeysSection>,
    #[serde(default)]
    metrics: MetricsSection,
    notify: Option<NotifySection>,
    #[serde(default)]
    rules: RulesSection,
    #[serde(default)]
    premise: PremiseSection,
    #[serde(default)]
    tlog: TlogSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PremiseSection {
    socket: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesSection {
    enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsSection {
    signer: Option<String>,
    api: Option<String>,
    mcp: Option<String>,
    console: Option<String>,
    notify: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PasskeysSection {
    required: Option<bool>,
    rp_id: Option<String>,
    origins: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignerSection {
    addr: Option<String>,
    fallback_addrs: Option<Vec<String>>,
    handoff_claim_lease_secs: Option<u64>,
    checkpoint_every_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LedgerSection {
    url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistrySection {
    path: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicySection {
    audience: Option<String>,
    default_lifetime_secs: Option<u64>,
    max_lifetime_secs: Option<u64>,
    decision_window_secs: Option<u64>,
    cedar: Option<PathBuf>,
    cedar_log_only: Option<PathBuf>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerifierSection {
    max_lifetime_secs: Option<u64>,
}

impl Config {
    /// Every signer address a client tries, in order: `[signer] addr`,
    /// then `[signer] fallback_addrs`.
    pub fn signer_addrs(&self) -> Vec<String> {
        std::iter::once(self.signer_addr.clone())
            .chain(self.signer_fallbacks.iter().cloned())
            .collect()
    }

    /// Reads `config.toml` (a private file; absent means all defaults) and the
    /// principal, resolves every path against the home directory, and checks
    /// the files it names ([`Config::check_paths`]) before anyone uses them.
    pub fn load(home: &Home) -> Result<Config, IdentityError> {
        let principal = home.principal()?;
        let path = home.config_path();
        let text = match read_private(&path) {
            Ok(bytes) => String::from_utf8(bytes.to_vec()).map_err(|_| IdentityError::Config {
                path: path.clone(),
                detail: "not UTF-8".into(),
            })?,
            Err(IdentityError::Missing(_)) => String::new(),
            Err(e) => return Err(e),
        };
        let config = Config::from_toml_str(home, &principal, &text)?;
        config.check_paths()?;
        Ok(config)
    }

    /// Refuses the registry and a SQLite ledger file unless nobody but the
    /// user (and root) can write them or any directory on the way to them,
    /// inside the home or outside it (see [`check_configured_file`]). Every
    /// process that uses them runs this through [`Config::load`].
    pub fn check_paths(&self) -> Result<(), IdentityError> {
        check_configured_file(&self.registry, ConfiguredFile::Registry)?;
        for policy in [&self.policy.cedar, &self.policy.cedar_log_only]
            .into_iter()
            .flatten()
        {
            check_configured_file(policy, ConfiguredFile::PolicySet)?;
        }
        if let Some(ledger) = sqlite_ledger_file(&self.ledger_url) {
            check_configured_file(ledger, ConfiguredFile::SqliteLedger)?;
        }
        Ok(())
    }

    /// Parses configuration text for `home` and `principal`.
    pub fn from_toml_str(
        home: &Home,
        principal: &str,
        text: &str,
    ) -> Result<Config, IdentityError> {
        let path = home.config_path();
        let invalid = |detail: String| IdentityError::Config {
            path: path.clone(),
            detail,
        };
        let file: FileConfig = toml::from_str(text).map_err(|e| invalid(e.message().to_owned()))?;

        let signer_addr = file
            .signer
            .addr
            .unwrap_or_else(|| DEFAULT_SIGNER_ADDR.to_owned());
        signer_addr.parse::<SocketAddr>().map_err(|_| {
            invalid(format!(
                "signer.addr {signer_addr:?} is not an IP:port address"
            ))
        })?;
        let signer_fallbacks = file.signer.fallback_addrs.unwrap_or_default();
        if signer_fallbacks.len() > MAX_SIGNER_FALLBACKS {
            return Err(invalid(format!(
                "signer.fallback_addrs names {} addresses; at most {MAX_SIGNER_FALLBACKS}",
                signer_fallbacks.len()
            )));
        }
        for (i, fallback) in signer_fallbacks.iter().enumerate() {
            if fallback.parse::<SocketAddr>().is_err() {
                return Err(invalid(format!(
                    "signer.fallback_addrs: {fallback:?} is not an IP:port address"
                )));
            }
            if *fallback == signer_addr || signer_fallbacks[..i].contains(fallback) {
                return Err(invalid(format!(
                    "signer.fallback_addrs: {fallback:?} is named twice"
                )));
            }
        }

        let handoff_claim_lease_secs = file
            .signer
            .handoff_claim_lease_secs
            .unwrap_or(DEFAULT_HANDOFF_CLAIM_LEASE_SECS);
        if !(1..=MAX_HANDOFF_CLAIM_LEASE_SECS).contains(&handoff_claim_lease_secs) {
            return Err(invalid(format!(
                "signer.handoff_claim_lease_secs must be 1..={MAX_HANDOFF_CLAIM_LEASE_SECS}"
            )));
        }

        let checkpoint_every_secs = file
            .signer
            .checkpoint_every_secs
            .unwrap_or(DEFAULT_CHECKPOINT_EVERY_SECS);
        if !(1..=DEFAULT_CHECKPOINT_EVERY_SECS).contains(&checkpoint_every_secs) {
            return Err(invalid(format!(
                "signer.checkpoint_every_secs must be 1..={DEFAULT_CHECKPOINT_EVERY_SECS}"
            )));
        }

        let ledger_url = match file.ledger.url {
            Some(url) => anchor_sqlite_url(home.root(), &url),
            None => format!("sqlite://{}", home.ledger_path().display()),
        };
        let registry = anchor(
            home.root(),
            file.registry.path.unwrap_or_else(|| home.registry_path()),
        );

        let policy = PolicyConfig {
            audience: file
                .policy
                .audience
                .unwrap_or_else(|| format!("countersign:{principal}")),
            default_lifetime_secs: file
                .policy
                .default_lifetime_secs
                .unwrap_or(DEFAULT_LIFETIME_SECS),
            max_lifetime_secs: file
                .policy
                .max_lifetime_secs
                .unwrap_or(MAX_LIFETIME_CAP_SECS),
            decision_window_secs: file
                .policy
                .decision_window_secs
                .unwrap_or(DEFAULT_DECISION_WINDOW_SECS),
            cedar: file.policy.cedar.map(|path| anchor(home.root(), path)),
            cedar_log_only: file
                .policy
                .cedar_log_only
                .map(|path| anchor(home.root(), path)),
        };
        if policy.audience.is_empty() {
            return Err(invalid("policy.audience must not be empty".into()));
        }
        if policy.max_lifetime_secs == 0 || policy.max_lifetime_secs > MAX_LIFETIME_CAP_SECS {
            return Err(invalid(format!(
                "policy.max_lifetime_secs must be 1..={MAX_LIFETIME_CAP_SECS}"
            )));
        }
        if policy.default_lifetime_secs == 0
            || policy.default_lifetime_secs > policy.max_lifetime_secs
        {
            return Err(invalid(
                "policy.default_lifetime_secs must be 1..=policy.max_lifetime_secs".into(),
            ));
        }
        if !(1..=MAX_DECISION_WINDOW_SECS).contains(&policy.decision_window_secs) {
            return Err(invalid(format!(
                "policy.decision_window_secs must be 1..={MAX_DECISION_WINDOW_SECS}"
            )));
        }
        let verifier_max_lifetime_secs = file
            .verifier
            .max_lifetime_secs
            .unwrap_or(MAX_LIFETIME_CAP_SECS);
        if verifier_max_lifetime_secs == 0 {
            return Err(invalid(
                "verifier.max_lifetime_secs must be positive".into(),
            ));
        }
        // A `[console]` section configures a console, at its default address
        // unless it names one; no section, no console.
        let console = file
            .console
            .map(|section| ConsoleConfig::from_section(section, DEFAULT_CONSOLE_ADDR, home.root()))
            .transpose()
            .map_err(&invalid)?;
        let passkeys = file
            .passkeys
            .map(|section| passkey_config(section, console.as_ref()))
            .transpose()
            .map_err(invalid)?;
        let metrics_addr = |key: &str, value: Option<String>| {
            value
                .map(|text| metrics_addr(key, &text))
                .transpose()
                .map_err(&invalid)
        };
        let metrics = MetricsConfig {
            signer: metrics_addr("signer", file.metrics.signer)?,
            api: metrics_addr("api", file.metrics.api)?,
            mcp: metrics_addr("mcp", file.metrics.mcp)?,
            console: metrics_addr("console", file.metrics.console)?,
            notify: metrics_addr("notify", file.metrics.notify)?,
        };
        let notify = file
            .notify
            .map(|section| notify_config(section, home.root()))
            .transpose()
            .map_err(&invalid)?;
        let premise_socket = file.premise.socket;
        if premise_socket.as_ref().is_some_and(|p| !p.is_absolute()) {
            return Err(invalid("premise.socket must be an absolute path".into()));
        }
        let tlog = tlog_config(file.tlog, home.root()).map_err(&invalid)?;
        Ok(Config {
            tlog,
            premise_socket,
            signer_addr,
            signer_fallbacks,
            handoff_claim_lease_secs,
            checkpoint_every_secs,
            ledger_url,
            registry,
            policy,
            verifier_max_lifetime_secs,
            console,
            passkeys,
            metrics,
            notify,
            rules_enabled: file.rules.enabled.unwrap_or(false),
        })
    }
}

/// `metrics.<key>`: an IP:port on loopback. `/metrics` has no
/// authentication, so no other address is accepted.
fn metrics_addr(key: &str, text: &str) -> Result<SocketAddr, String> {
    let addr = text
        .parse::<SocketAddr>()
        .map_err(|_| format!("metrics.{key} {text:?} is not an IP:port address"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "metrics.{key} {addr} is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])"
        ));
    }
    Ok(addr)
}

/// The `[passkeys]` section, checked: an RP id that is a domain name, and
/// origins that are `https://` URLs of that domain or below it, with no
/// path. A passkey made at a plain-http origin is refused: nothing proves
/// to the browser who served such a page.
fn passkey_config(
    section: PasskeysSection,
    console: Option<&ConsoleConfig>,
) -> Result<PasskeyConfig, String> {
    let rp_id = section
        .rp_id
        .or_else(|| console.map(|c| c.names[0].clone()))
        .unwrap_or_else(|| crate::console_pki::CONSOLE_NAME.to_owned());
    let domain_like = !rp_id.is_empty()
        && rp_id.parse::<std::net::IpAddr>().is_err()
        && rp_id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
    if !domain_like {
        return Err(format!(
            "passkeys.rp_id {rp_id:?} must be a lowercase domain name (browsers refuse IP addresses)"
        ));
    }
    let origins = match section.origins {
        Some(origins) => origins,
        None => match console {
            Some(console) => console.origins(),
            None => {
                return Err(
                    "passkeys.origins is required when no [console] section names the console"
                        .into(),
                );
            }
        },
    };
    if origins.is_empty() {
        return Err("passkeys.origins must name at least one origin".into());
    }
    for origin in &origins {
        if !origin_fits(origin, &rp_id) {
            return Err(format!(
                "passkeys.origins entry {origin:?} is not an https origin of {rp_id:?} (https://, no path)"
            ));
        }
    }
    Ok(PasskeyConfig {
        required: section.required.unwrap_or(false),
        rp_id,
        origins,
    })
}

/// Whether `origin` is `scheme://host[:port]` with `host` the RP id or a
/// subdomain of it, over https.
fn origin_fits(origin: &str, rp_id: &str) -> bool {
    let (scheme, rest) = match origin.split_once("://") {
        Some(parts) => parts,
        None => return false,
    };
    let host = match rest.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => host,
        Some(_) => return false,
        None => rest,
    };
    if host.contains('/') || host.is_empty() {
        return false;
    }
    let within = host == rp_id || host.ends_with(&format!(".{rp_id}"));
    within && scheme == "https"
}

fn anchor(root: &Path, path: PathBuf) -> PathBuf {
    if path.is_absolute() {
        path
    } else {
        root.join(path)
    }
}

/// Anchors the file path of a `sqlite:` URL to the home; other URLs and
/// in-memory databases are returned unchanged.
fn anchor_sqlite_url(root: &Path, url: &str) -> String {
    let Some(rest) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return url.to_owned();
    };
    let (file, query) = match rest.split_once('?') {
        Some((file, query)) => (file, Some(query)),
        None => (rest, None),
    };
    if file.is_empty() || file.starts_with(':') || Path::new(file).is_absolute() {
        return url.to_owned();
    }
    let anchored = root.join(file);
    match query {
        Some(q) => format!("sqlite://{}?{q}", anchored.display()),
        None => format!("sqlite://{}", anchored.display()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn home() -> Home {
        Home::at("/h/cs").unwrap()
    }

    #[test]
    fn defaults_are_anchored_to_home() {
        let c = Config::from_toml_str(&home(), P, "").unwrap();
        assert_eq!(c.signer_addr, "127.0.0.1:7443");
        assert_eq!(c.ledger_url, "sqlite:///h/cs/ledger.db");
        assert_eq!(c.registry, PathBuf::from("/h/cs/operations.toml"));
        assert_eq!(
            c.policy,
            PolicyConfig {
                audience: format!("countersign:{P}"),
                default_lifetime_secs: 300,
                max_lifetime_secs: 1800,
                decision_window_secs: 3600,
                cedar: None,
                cedar_log_only: None,
            }
        );
        assert_eq!(c.verifier_max_lifetime_secs, 1800);
        assert_eq!(c.console, None);
        assert_eq!(c.handoff_claim_lease_secs, 60);
        assert_eq!(c.checkpoint_every_secs, 60);
    }

    #[test]
    fn the_checkpoint_interval_is_configured_within_bounds() {
        let c = Config::from_toml_str(&home(), P, "[signer]\ncheckpoint_every_secs = 1\n").unwrap();
        assert_eq!(c.checkpoint_every_secs, 1);
        for text in [
            "[signer]\ncheckpoint_every_secs = 0\n",
            "[signer]\ncheckpoint_every_secs = 61\n",
        ] {
            match Config::from_toml_str(&home(), P, text) {
                Err(IdentityError::Config { detail, .. }) => assert_eq!(
                    detail, "signer.checkpoint_every_secs must be 1..=60",
                    "{text}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_handoff_claim_lease_is_configured_within_bounds() {
        let c = Config::from_toml_str(
            &home(),
            P,
            "[signer]
handoff_claim_lease_secs = 5
",
        )
        .unwrap();
        assert_eq!(c.handoff_claim_lease_secs, 5);
        for text in [
            "[signer]
handoff_claim_lease_secs = 0
",
            "[signer]
handoff_claim_lease_secs = 3601
",
        ] {
            match Config::from_toml_str(&home(), P, text) {
                Err(IdentityError::Config { detail, .. }) => assert_eq!(
                    detail, "signer.handoff_claim_lease_secs must be 1..=3600",
                    "{text}"
                ),
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_console_section_configures_the_console_and_its_proposal_pages() {
        let c =
            Config::from_toml_str(&home(), P, "[console]\naddr = \"127.0.0.1:9001\"\n").unwrap();
        let console = c.console.unwrap();
        assert_eq!(console.addr, "127.0.0.1:9001".parse().unwrap());
        assert_eq!(
            console.proposal_url("prop_0a"),
            "https://console.localhost:9001/proposals/prop_0a"
        );
        let c = Config::from_toml_str(&home(), P, "[console]\n").unwrap();
        assert_eq!(
            c.console.unwrap().addr,
            DEFAULT_CONSOLE_ADDR.parse().unwrap()
        );
    }

    #[test]
    fn refuses_a_console_addr_that_is_not_ip_and_port() {
        for text in [
            "[console]\naddr = \"localhost:7444\"\n",
            "[console]\naddr = \"127.0.0.1\"\n",
            "[console]\naddr = \"\"\n",
            "[console]\naddr = 7444\n",
        ] {
            match Config::from_toml_str(&home(), P, text) {
                Err(IdentityError::Config { detail, .. }) => {
                    assert!(
                        detail.contains("console.addr") || detail.contains("string"),
                        "{detail}"
                    )
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn metrics_are_off_unless_configured() {
        let c = Config::from_toml_str(&home(), P, "").unwrap();
        assert_eq!(c.metrics, MetricsConfig::default());
        let c = Config::from_toml_str(
            &home(),
            P,
            "[metrics]\nsigner = \"127.0.0.1:9464\"\nconsole = \"[::1]:9467\"\nnotify = \"127.0.0.1:9468\"\n",
        )
        .unwrap();
        assert_eq!(
            c.metrics,
            MetricsConfig {
                signer: Some("127.0.0.1:9464".parse().unwrap()),
                api: None,
                mcp: None,
                console: Some("[::1]:9467".parse().unwrap()),
                notify: Some("127.0.0.1:9468".parse().unwrap()),
            }
        );
    }

    #[test]
    fn refuses_a_metrics_address_that_is_not_loopback() {
        for (text, expected) in [
            (
                "[metrics]\nsigner = \"0.0.0.0:9464\"\n",
                "metrics.signer 0.0.0.0:9464 is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])",
            ),
            (
                "[metrics]\napi = \"192.0.2.1:9465\"\n",
                "metrics.api 192.0.2.1:9465 is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])",
            ),
            (
                "[metrics]\nmcp = \"localhost:9466\"\n",
                "metrics.mcp \"localhost:9466\" is not an IP:port address",
            ),
        ] {
            match Config::from_toml_str(&home(), P, text) {
                Err(IdentityError::Config { detail, .. }) => assert_eq!(detail, expected),
                other => panic!("{text}: {other:?}"),
            }
        }
        match Config::from_toml_str(&home(), P, "[metrics]\nhead = \"127.0.0.1:1\"\n") {
            Err(IdentityError::Config { detail, .. }) => {
                assert!(detail.contains("unknown field"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_unknown_keys_in_the_console_section() {
        for text in [
            "[console]\nlisten = \"127.0.0.1:7444\"\n",
            "[console]\naddr = \"127.0.0.1:7444\"\nurl = \"x\"\n",
        ] {
            match Config::from_toml_str(&home(), P, text) {
                Err(IdentityError::Config { detail, .. }) => {
                    assert!(detail.contains("unknown field"), "{detail}")
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }

    #[test]
    fn relative_paths_are_anchored_to_home_not_cwd() {
        let text =
            "[ledger]\nurl = \"sqlite://data/l.db?mode=rwc\"\n[registry]\npath = \"ops/x.toml\"\n";
        let c = Config::from_toml_str(&home(), P, text).unwrap();
        assert_eq!(c.ledger_url, "sqlite:///h/cs/data/l.db?mode=rwc");
        assert_eq!(c.registry, PathBuf::from("/h/cs/ops/x.toml"));
        let c = Config::from_toml_str(&home(), P, "[ledger]\nurl = \"sqlite:l.db\"\n").unwrap();
        assert_eq!(c.ledger_url, "sqlite:///h/cs/l.db");
        let c =
            Config::from_toml_str(&home(), P, "[ledger]\nurl = \"postgres://u@h/db\"\n").unwrap();
        assert_eq!(c.ledger_url, "postgres://u@h/db");
    }

    #[test]
    fn refuses_unknown_keys() {
        for text in [
            "bogus = 1\n",
            "[signer]\nlisten = \"x\"\n",
            "[policy]\nlifetime = 3\n",
        ] {
            assert!(
                matches!(
                    Config::from_toml_str(&home(), P, text),
                    Err(IdentityError::Config { .. })
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn reads_the_fallback_signers_and_refuses_bad_ones() {
        let c = Config::from_toml_str(&home(), P, "").unwrap();
        assert_eq!(c.signer_addrs(), vec!["127.0.0.1:7443".to_owned()]);
        let text = "[signer]\naddr = \"10.0.0.1:7443\"\nfallback_addrs = [\"10.0.0.2:7443\", \"[::1]:7443\"]\n";
        let c = Config::from_toml_str(&home(), P, text).unwrap();
        assert_eq!(
            c.signer_addrs(),
            vec!["10.0.0.1:7443", "10.0.0.2:7443", "[::1]:7443"]
        );
        for (text, says) in [
            (
                "[signer]\nfallback_addrs = [\"signer-b:7443\"]\n",
                "signer.fallback_addrs: \"signer-b:7443\" is not an IP:port address",
            ),
            (
                "[signer]\nfallback_addrs = [\"127.0.0.1:7443\"]\n",
                "signer.fallback_addrs: \"127.0.0.1:7443\" is named twice",
            ),
            (
                "[signer]\nfallback_addrs = [\"10.0.0.2:1\", \"10.0.0.2:1\"]\n",
                "signer.fallback_addrs: \"10.0.0.2:1\" is named twice",
            ),
            (
                "[signer]\nfallback_addrs = [\"10.0.0.1:1\", \"10.0.0.1:2\", \"10.0.0.1:3\", \"10.0.0.1:4\", \"10.0.0.1:5\", \"10.0.0.1:6\", \"10.0.0.1:7\", \"10.0.0.1:8\"]\n",
                "signer.fallback_addrs names 8 addresses; at most 7",
            ),
        ] {
            let err = Config::from_toml_str(&home(), P, text).unwrap_err();
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn reads_the_decision_window() {
        let text = "[policy]\ndecision_window_secs = 900\n";
        let c = Config::from_toml_str(&home(), P, text).unwrap();
        assert_eq!(c.policy.decision_window_secs, 900);
    }

    #[test]
    fn refuses_lifetimes_above_the_cap_or_inverted() {
        for text in [
            "[policy]\nmax_lifetime_secs = 1801\n",
            "[policy]\ndefault_lifetime_secs = 600\nmax_lifetime_secs = 300\n",
            "[policy]\ndefault_lifetime_secs = 0\n",
            "[policy]\ndecision_window_secs = 0\n",
            "[policy]\ndecision_window_secs = 604801\n",
            "[verifier]\nmax_lifetime_secs = 0\n",
            "[signer]\naddr = \"localhost\"\n",
        ] {
            assert!(
                matches!(
                    Config::from_toml_str(&home(), P, text),
                    Err(IdentityError::Config { .. })
                ),
                "{text}"
            );
        }
    }
}

#[cfg(test)]
mod passkey_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn parse(text: &str) -> Result<Config, IdentityError> {
        Config::from_toml_str(&Home::at("/h/cs").unwrap(), P, text)
    }

    #[test]
    fn rules_are_off_unless_the_configuration_turns_them_on() {
        assert!(!parse("").unwrap().rules_enabled);
        assert!(!parse("[rules]\n").unwrap().rules_enabled);
        assert!(!parse("[rules]\nenabled = false\n").unwrap().rules_enabled);
        assert!(parse("[rules]\nenabled = true\n").unwrap().rules_enabled);
        assert_eq!(parse("").unwrap().premise_socket, None);
        assert_eq!(
            parse("[premise]\nsocket = \"/run/p/premise.sock\"\n")
                .unwrap()
                .premise_socket,
            Some(PathBuf::from("/run/p/premise.sock"))
        );
        assert!(parse("[premise]\nsocket = \"p.sock\"\n").is_err());
        assert!(parse("[rules]\nenabled = \"yes\"\n").is_err());
        assert!(parse("[rules]\nauto = true\n").is_err());
    }

    #[test]
    fn a_passkeys_section_defaults_to_the_console_name_and_its_https_origin() {
        let config = parse("[console]\naddr = \"127.0.0.1:9000\"\n[passkeys]\n").unwrap();
        let passkeys = config.passkeys.clone().unwrap();
        assert!(!passkeys.required);
        assert_eq!(passkeys.rp_id, "console.localhost");
        assert_eq!(passkeys.origins, ["https://console.localhost:9000"]);
        let named = parse(
            "[console]\naddr = \"127.0.0.1:9000\"\nnames = [\"a.example.org\", \"console.localhost\"]\n[passkeys]\nrp_id = \"a.example.org\"\n",
        );
        // The second name is not within the RP id: refused, naming it.
        assert!(
            named
                .unwrap_err()
                .to_string()
                .contains("\"https://console.localhost:9000\"")
        );
    }

    #[test]
    fn bad_passkey_settings_are_refused_with_the_setting_named() {
        for (text, needle) in [
            ("[passkeys]\n", "passkeys.origins is required"),
            (
                "[passkeys]\nrp_id = \"127.0.0.1\"\norigins = [\"http://127.0.0.1\"]\n",
                "passkeys.rp_id",
            ),
            ("[passkeys]\norigins = []\n", "at least one origin"),
            (
                "[passkeys]\norigins = [\"http://evil.example\"]\n",
                "\"http://evil.example\"",
            ),
            (
                "[passkeys]\nrp_id = \"example.com\"\norigins = [\"http://example.com\"]\n",
                "not an https origin",
            ),
            (
                "[passkeys]\nrp_id = \"localhost\"\norigins = [\"http://localhost:7444\"]\n",
                "not an https origin",
            ),
            (
                "[passkeys]\norigins = [\"https://console.localhost:7444/x\"]\n",
                "not an https origin",
            ),
            (
                "[passkeys]\nrequired = \"yes\"\norigins = [\"https://console.localhost\"]\n",
                "invalid type",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let ok = parse(
            "[passkeys]\nrequired = true\nrp_id = \"example.com\"\norigins = [\"https://approve.example.com\"]\n",
        )
        .unwrap();
        assert!(ok.passkeys.unwrap().required);
    }
}
