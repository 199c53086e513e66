//! `[notify]`: how a person is told that a proposal waits for them (a
//! signed webhook, email, a desktop notification), and how it retries;
//! and `[notify.ocsf]`, the ledger's events streamed to a collector.
//! Off unless the section is there. The signer only records, when the
//! section is there, what to tell (its notification outbox); the notify
//! process (`countersign notify serve`) delivers, with this section.
//!
//! This module only reads the shape of the section and anchors its paths
//! to the home; the notify process parses the URL and addresses, reads the
//! secret files (0600, never from this text) and refuses what it cannot
//! use when it starts. No secret is ever written in `config.toml`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The webhook's and the SMTP exchange's timeout unless configured, seconds.
pub const DEFAULT_NOTIFY_TIMEOUT_SECS: u64 = 10;
/// The first retry's delay unless configured, milliseconds.
pub const DEFAULT_RETRY_INITIAL_MS: u64 = 2_000;
/// The longest delay between two attempts unless configured, milliseconds.
pub const DEFAULT_RETRY_MAX_MS: u64 = 300_000;
/// Attempts per delivery unless configured; then it is `failed`.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 8;
/// How often the notify process asks the signer for waiting
/// notifications unless configured, milliseconds.
pub const DEFAULT_POLL_MS: u64 = 1_000;

/// The resolved `[notify]` section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// `[notify.webhook]`.
    pub webhook: Option<NotifyWebhookConfig>,
    /// `[notify.smtp]`.
    pub smtp: Option<NotifySmtpConfig>,
    /// `desktop = true`: org.freedesktop.Notifications on the D-Bus
    /// session bus, where `DBUS_SESSION_BUS_ADDRESS` is set.
    pub desktop: bool,
    /// `[notify.push]`: Web Push to the subscribed devices.
    pub push: Option<NotifyPushConfig>,
    /// `[notify.ocsf]`: every ledger event, as OCSF, to a collector.
    pub ocsf: Option<NotifyOcsfConfig>,
    /// How failed attempts are retried.
    pub retry: RetryConfig,
    /// `poll_ms` (10..=60000): how often the notify process asks the
    /// signer for the notifications waiting in its outbox.
    pub poll_ms: u64,
}

/// `[notify.webhook]`: a Standard Webhooks POST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyWebhookConfig {
    /// `url`: https, or plain http to a loopback host only.
    pub url: String,
    /// `secret_file`: a 0600 file holding `whsec_<base64>`.
    pub secret_file: PathBuf,
    /// `trust_roots`: the PEM bundle of the CAs trusted for an https URL.
    pub trust_roots: Option<PathBuf>,
    /// `timeout_secs` (1..=300).
    pub timeout_secs: u64,
}

/// Events per OCSF POST unless `[notify.ocsf] batch` says otherwise.
pub const DEFAULT_OCSF_BATCH: u32 = 100;

/// `[notify.ocsf]`: the ledger's events streamed as OCSF 1.8.0 API Activity
/// events (JSON Lines) to a collector, in transparency-log order, each
/// event once unless a POST's answer is lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyOcsfConfig {
    /// `url`: https, or plain http to a loopback host only (and then with
    /// no `authorization_file`).
    pub url: String,
    /// `trust_roots`: the PEM bundle of the CAs trusted for an https URL.
    pub trust_roots: Option<PathBuf>,
    /// `authorization_file`: a 0600 file holding the `Authorization`
    /// header's value (`Bearer ...`, `Splunk ...`), sent over verified TLS
    /// only.
    pub authorization_file: Option<PathBuf>,
    /// `timeout_secs` (1..=300).
    pub timeout_secs: u64,
    /// `batch` (1..=500): events per POST at most.
    pub batch: u32,
}

/// The VAPID `sub` claim unless `[notify.push] contact` says otherwise.
pub const DEFAULT_PUSH_CONTACT: &str = "mailto:countersign@localhost";
/// A push's `TTL` unless configured, seconds: how long a push service
/// keeps it for a device that is offline.
pub const DEFAULT_PUSH_TTL_SECS: u64 = 3_600;

/// A push's `Urgency` header (RFC 8030 section 5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushUrgency {
    /// `very-low`.
    VeryLow,
    /// `low`.
    Low,
    /// `normal`.
    Normal,
    /// `high` (the default: a person is waited for).
    High,
}

impl PushUrgency {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            PushUrgency::VeryLow => "very-low",
            PushUrgency::Low => "low",
            PushUrgency::Normal => "normal",
            PushUrgency::High => "high",
        }
    }
}

/// `[notify.push]`: Web Push (RFC 8030, 8291, 8292) to every device whose
/// paired console session subscribed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyPushConfig {
    /// `contact`: the VAPID JWT's `sub`, a `mailto:` or `https:` URI
    /// (default [`DEFAULT_PUSH_CONTACT`]).
    pub contact: String,
    /// `trust_roots`: the PEM bundle of the CAs trusted for the push
    /// services' https endpoints (no system roots are built in; for
    /// example `/etc/ssl/certs/ca-certificates.crt`). Without it only
    /// plain-http loopback endpoints (tests) can be reached.
    pub trust_roots: Option<PathBuf>,
    /// `ttl_secs` (0..=2419200, default 3600).
    pub ttl_secs: u64,
    /// `urgency` (default `high`).
    pub urgency: PushUrgency,
    /// `timeout_secs` (1..=300).
    pub timeout_secs: u64,
}

/// How the SMTP connection is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// TLS from the first byte (SMTPS, usually port 465).
    Tls,
    /// STARTTLS, required (usually port 587).
    Starttls,
    /// No TLS: allowed only to a loopback host.
    None,
}

/// `[notify.smtp]`: email through one SMTP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifySmtpConfig {
    /// `host`: a DNS name or an IP address.
    pub host: String,
    /// `port` (default 587, or 465 with `tls = "tls"`, 25 with `"none"`).
    pub port: u16,
    /// `tls`: `"tls"`, `"starttls"` (default) or `"none"` (loopback only).
    pub tls: SmtpTls,
    /// `trust_roots`: a PEM bundle of CAs (default: the server must chain
    /// to one of them; required unless `tls = "none"`).
    pub trust_roots: Option<PathBuf>,
    /// `from`: the sender address.
    pub from: String,
    /// `to`: the recipients (at least one).
    pub to: Vec<String>,
    /// `credentials_file`: a 0600 file, the user name on its first line and
    /// the password on its second.
    pub credentials_file: Option<PathBuf>,
    /// `timeout_secs` (1..=300).
    pub timeout_secs: u64,
}

/// Backoff: the n-th retry waits about `initial_ms * 2^(n-1)` (with
/// jitter), at most `max_ms`; after `max_attempts` attempts the delivery
/// is `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// `retry_initial_ms` (10..=3600000).
    pub initial_ms: u64,
    /// `retry_max_ms` (at least `retry_initial_ms`, at most one day).
    pub max_ms: u64,
    /// `max_attempts` (1..=100).
    pub max_attempts: u32,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NotifySection {
    webhook: Option<WebhookSection>,
    smtp: Option<SmtpSection>,
    push: Option<PushSection>,
    ocsf: Option<OcsfSection>,
    desktop: Option<bool>,
    retry_initial_ms: Option<u64>,
    retry_max_ms: Option<u64>,
    max_attempts: Option<u32>,
    poll_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WebhookSection {
    url: String,
    secret_file: PathBuf,
    trust_roots: Option<PathBuf>,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SmtpSection {
    host: String,
    port: Option<u16>,
    tls: Option<SmtpTls>,
    trust_roots: Option<PathBuf>,
    from: String,
    to: Vec<String>,
    credentials_file: Option<PathBuf>,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OcsfSection {
    url: String,
    trust_roots: Option<PathBuf>,
    authorization_file: Option<PathBuf>,
    timeout_secs: Option<u64>,
    batch: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PushSection {
    contact: Option<String>,
    trust_roots: Option<PathBuf>,
    ttl_secs: Option<u64>,
    urgency: Option<PushUrgency>,
    timeout_secs: Option<u64>,
}

/// `[notify]` resolved against the home `root`; the error names the key.
pub(crate) fn notify_config(section: NotifySection, root: &Path) -> Result<NotifyConfig, String> {
    let anchor = |path: PathBuf| {
        if path.is_absolute() {
            path
        } else {
            root.join(path)
        }
    };
    let timeout = |key: &str, value: Option<u64>| {
        let secs = value.unwrap_or(DEFAULT_NOTIFY_TIMEOUT_SECS);
        if (1..=300).contains(&secs) {
            Ok(secs)
        } else {
            Err(format!("notify.{key}.timeout_secs must be 1..=300"))
        }
    };
    let webhook = section
        .webhook
        .map(|w| {
            Ok::<_, String>(NotifyWebhookConfig {
                timeout_secs: timeout("webhook", w.timeout_secs)?,
                url: w.url,
                secret_file: anchor(w.secret_file),
                trust_roots: w.trust_roots.map(anchor),
            })
        })
        .transpose()?;
    let smtp = section
        .smtp
        .map(|s| {
            let tls = s.tls.unwrap_or(SmtpTls::Starttls);
            let port = s.port.unwrap_or(match tls {
                SmtpTls::Tls => 465,
                SmtpTls::Starttls => 587,
                SmtpTls::None => 25,
            });
            if s.to.is_empty() {
                return Err("notify.smtp.to must name at least one recipient".to_owned());
            }
            if tls != SmtpTls::None && s.trust_roots.is_none() {
                return Err(
                    "notify.smtp.trust_roots is required with TLS: the PEM bundle of the server's CAs (no system roots are built in)"
                        .to_owned(),
                );
            }
            Ok(NotifySmtpConfig {
                timeout_secs: timeout("smtp", s.timeout_secs)?,
                host: s.host,
                port,
                tls,
                trust_roots: s.trust_roots.map(anchor),
                from: s.from,
                to: s.to,
                credentials_file: s.credentials_file.map(anchor),
            })
        })
        .transpose()?;
    let push = section
        .push
        .map(|p| {
            let contact = p.contact.unwrap_or_else(|| DEFAULT_PUSH_CONTACT.to_owned());
            let well_formed = (contact.starts_with("mailto:") || contact.starts_with("https://"))
                && contact.len() <= 256
                && contact.chars().all(|c| c.is_ascii_graphic());
            if !well_formed {
                return Err(
                    "notify.push.contact must be a mailto: or https: URI (ASCII, no spaces, at most 256 bytes)"
                        .to_owned(),
                );
            }
            let ttl_secs = p.ttl_secs.unwrap_or(DEFAULT_PUSH_TTL_SECS);
            if ttl_secs > 2_419_200 {
                return Err("notify.push.ttl_secs must be 0..=2419200".to_owned());
            }
            Ok(NotifyPushConfig {
                timeout_secs: timeout("push", p.timeout_secs)?,
                contact,
                trust_roots: p.trust_roots.map(anchor),
                ttl_secs,
                urgency: p.urgency.unwrap_or(PushUrgency::High),
            })
        })
        .transpose()?;
    let ocsf = section
        .ocsf
        .map(|o| {
            let batch = o.batch.unwrap_or(DEFAULT_OCSF_BATCH);
            if !(1..=500).contains(&batch) {
                return Err("notify.ocsf.batch must be 1..=500".to_owned());
            }
            Ok(NotifyOcsfConfig {
                timeout_secs: timeout("ocsf", o.timeout_secs)?,
                url: o.url,
                trust_roots: o.trust_roots.map(anchor),
                authorization_file: o.authorization_file.map(anchor),
                batch,
            })
        })
        .transpose()?;
    let initial_ms = section.retry_initial_ms.unwrap_or(DEFAULT_RETRY_INITIAL_MS);
    if !(10..=3_600_000).contains(&initial_ms) {
        return Err("notify.retry_initial_ms must be 10..=3600000".into());
    }
    let max_ms = section
        .retry_max_ms
        .unwrap_or(DEFAULT_RETRY_MAX_MS.max(initial_ms));
    if max_ms < initial_ms || max_ms > 86_400_000 {
        return Err("notify.retry_max_ms must be retry_initial_ms..=86400000".into());
    }
    let max_attempts = section.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
    if !(1..=100).contains(&max_attempts) {
        return Err("notify.max_attempts must be 1..=100".into());
    }
    let poll_ms = section.poll_ms.unwrap_or(DEFAULT_POLL_MS);
    if !(10..=60_000).contains(&poll_ms) {
        return Err("notify.poll_ms must be 10..=60000".into());
    }
    Ok(NotifyConfig {
        poll_ms,
        webhook,
        smtp,
        push,
        ocsf,
        desktop: section.desktop.unwrap_or(false),
        retry: RetryConfig {
            initial_ms,
            max_ms,
            max_attempts,
        },
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::{Config, Home, IdentityError};

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn parse(text: &str) -> Result<Config, IdentityError> {
        Config::from_toml_str(&Home::at("/h/cs").unwrap(), P, text)
    }

    fn refusal(text: &str) -> String {
        match parse(text) {
            Err(IdentityError::Config { detail, .. }) => detail,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn notifications_are_off_without_a_notify_section() {
        assert_eq!(parse("").unwrap().notify, None);
    }

    #[test]
    fn a_notify_section_anchors_its_files_to_the_home() {
        let c = parse(
            "[notify]\ndesktop = true\n[notify.webhook]\nurl = \"http://127.0.0.1:9/hook\"\nsecret_file = \"whsec\"\n[notify.smtp]\nhost = \"127.0.0.1\"\ntls = \"none\"\nfrom = \"cs@localhost\"\nto = [\"me@localhost\"]\ncredentials_file = \"/etc/cs/smtp\"\n",
        )
        .unwrap();
        let notify = c.notify.unwrap();
        assert!(notify.desktop);
        let webhook = notify.webhook.unwrap();
        assert_eq!(webhook.secret_file, std::path::PathBuf::from("/h/cs/whsec"));
        assert_eq!(webhook.timeout_secs, 10);
        let smtp = notify.smtp.unwrap();
        assert_eq!(smtp.port, 25);
        assert_eq!(
            smtp.credentials_file,
            Some(std::path::PathBuf::from("/etc/cs/smtp"))
        );
        assert_eq!(notify.retry.max_attempts, 8);
        assert_eq!(notify.poll_ms, 1000);
        assert_eq!(notify.push, None);
    }

    #[test]
    fn a_push_section_has_documented_defaults() {
        let push = parse("[notify.push]\n")
            .unwrap()
            .notify
            .unwrap()
            .push
            .unwrap();
        assert_eq!(push.contact, "mailto:countersign@localhost");
        assert_eq!(
            (push.ttl_secs, push.timeout_secs, push.trust_roots),
            (3600, 10, None)
        );
        assert_eq!(push.urgency.as_str(), "high");
        let push = parse("[notify.push]\ncontact = \"https://ops.example/\"\nurgency = \"very-low\"\ntrust_roots = \"roots.pem\"\n")
            .unwrap().notify.unwrap().push.unwrap();
        assert_eq!(push.urgency, super::PushUrgency::VeryLow);
        assert_eq!(
            push.trust_roots,
            Some(std::path::PathBuf::from("/h/cs/roots.pem"))
        );
    }

    #[test]
    fn refuses_a_secret_written_in_the_configuration() {
        let detail = refusal(
            "[notify.webhook]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_AAAA\"\nsecret_file = \"x\"\n",
        );
        assert!(detail.contains("unknown field `secret`"), "{detail}");
        let detail = refusal(
            "[notify.smtp]\nhost = \"h\"\ntls = \"none\"\nfrom = \"a@b\"\nto = [\"c@d\"]\npassword = \"p\"\n",
        );
        assert!(detail.contains("unknown field `password`"), "{detail}");
    }

    #[test]
    fn refuses_bad_notify_settings_with_the_setting_named() {
        for (text, expected) in [
            (
                "[notify.smtp]\nhost = \"h\"\nfrom = \"a@b\"\nto = []\ntls = \"none\"\n",
                "notify.smtp.to must name at least one recipient",
            ),
            (
                "[notify.smtp]\nhost = \"h\"\nfrom = \"a@b\"\nto = [\"c@d\"]\n",
                "notify.smtp.trust_roots is required with TLS: the PEM bundle of the server's CAs (no system roots are built in)",
            ),
            (
                "[notify]\nretry_initial_ms = 5\n",
                "notify.retry_initial_ms must be 10..=3600000",
            ),
            (
                "[notify]\nretry_initial_ms = 1000\nretry_max_ms = 999\n",
                "notify.retry_max_ms must be retry_initial_ms..=86400000",
            ),
            (
                "[notify]\nmax_attempts = 0\n",
                "notify.max_attempts must be 1..=100",
            ),
            (
                "[notify]\npoll_ms = 5\n",
                "notify.poll_ms must be 10..=60000",
            ),
            (
                "[notify.webhook]\nurl = \"u\"\nsecret_file = \"s\"\ntimeout_secs = 0\n",
                "notify.webhook.timeout_secs must be 1..=300",
            ),
            (
                "[notify.push]\ncontact = \"ops@example.com\"\n",
                "notify.push.contact must be a mailto: or https: URI (ASCII, no spaces, at most 256 bytes)",
            ),
            (
                "[notify.push]\nttl_secs = 2419201\n",
                "notify.push.ttl_secs must be 0..=2419200",
            ),
            (
                "[notify.push]\ntimeout_secs = 301\n",
                "notify.push.timeout_secs must be 1..=300",
            ),
        ] {
            assert_eq!(refusal(text), expected, "{text}");
        }
    }
}
