//! The email channel: one plain-text message per delivery through the
//! configured SMTP server (lettre, rustls on ring; TLS from the first byte
//! or required STARTTLS, against the configured trust roots only; no TLS
//! only to a loopback host, and then with no credentials). The message id
//! is derived from the delivery
//! id, so a retry of a message the server did take is recognisable. The
//! credentials come from a 0600 file, are held zeroized, and are never
//! logged; a failure's reason is lettre's, which never repeats them.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use countersign_identity::files::read_private;
use countersign_identity::{NotifySmtpConfig, SmtpTls};
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, Message};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport as _, Tokio1Executor};

use super::NotifyError;
use super::message::Notification;

/// The configured SMTP server and addresses, checked.
pub(crate) struct SmtpChannel {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    to: Vec<Mailbox>,
    server: String,
}

impl fmt::Debug for SmtpChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpChannel")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl SmtpChannel {
    /// Checks the addresses, the TLS setting (none only to loopback), reads
    /// the trust roots and the credentials file, and builds the transport
    /// (no connection is made here).
    pub(crate) fn from_config(config: &NotifySmtpConfig) -> Result<SmtpChannel, NotifyError> {
        let refuse = |detail: String| NotifyError::Config(format!("notify.smtp.{detail}"));
        let mailbox = |key: &str, text: &str| {
            text.parse::<Mailbox>()
                .map_err(|e| refuse(format!("{key} {text:?} is not an email address: {e}")))
        };
        let from = mailbox("from", &config.from)?;
        let to = config
            .to
            .iter()
            .map(|t| mailbox("to", t))
            .collect::<Result<Vec<_>, _>>()?;
        // Only an IP literal is loopback: a name such as `localhost` goes
        // to the system resolver, and another local user listening on the
        // address it answers (`[::1]:<port>`) would get the message.
        let loopback = config
            .host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
        let tls = match config.tls {
            SmtpTls::None if !loopback => {
                return Err(refuse(format!(
                    "tls = \"none\" is allowed only to a loopback IP address (host = \"127.0.0.1\" or \"::1\"), not {:?}{}",
                    config.host,
                    if config.host.eq_ignore_ascii_case("localhost") {
                        ": a name goes to the system resolver, and another local user listening on the address it answers would receive the message"
                    } else {
                        ""
                    }
                )));
            }
            SmtpTls::None => Tls::None,
            SmtpTls::Tls => Tls::Wrapper(tls_parameters(config).map_err(&refuse)?),
            SmtpTls::Starttls => Tls::Required(tls_parameters(config).map_err(&refuse)?),
        };
        // A port is not an identity: with no TLS the user name and password
        // would go in clear to whoever holds the port, and any local user
        // can hold a loopback port while the server restarts. Credentials
        // go only where the server's certificate was verified.
        if config.credentials_file.is_some() && matches!(config.tls, SmtpTls::None) {
            return Err(refuse(credentials_need_tls(config)));
        }
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&config.host)
            .port(config.port)
            .tls(tls)
            .timeout(Some(Duration::from_secs(config.timeout_secs)));
        if let Some(path) = &config.credentials_file {
            let bytes = read_private(path).map_err(|e| refuse(format!("credentials_file: {e}")))?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| refuse(format!("credentials_file {} is not UTF-8", path.display())))?;
            let mut lines = text.lines();
            let (Some(user), Some(password)) = (lines.next(), lines.next()) else {
                return Err(refuse(format!(
                    "credentials_file {} must hold the user name on its first line and the password on its second",
                    path.display()
                )));
            };
            builder = builder.credentials(Credentials::new(user.to_owned(), password.to_owned()));
        }
        Ok(SmtpChannel {
            transport: builder.build(),
            from,
            to,
            server: format!("{}:{}", config.host, config.port),
        })
    }

    /// One attempt: the message for `notification`, its Message-ID from
    /// `delivery_id`.
    pub(crate) async fn send(
        &self,
        delivery_id: &str,
        notification: &Notification,
    ) -> Result<(), String> {
        let mut message = Message::builder()
            .from(self.from.clone())
            .subject(notification.summary())
            .message_id(Some(format!("<{delivery_id}@countersign.invalid>")))
            .header(ContentType::TEXT_PLAIN);
        for to in &self.to {
            message = message.to(to.clone());
        }
        let message = message
            .body(notification.text())
            .map_err(|e| format!("the message could not be built: {e}"))?;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| format!("SMTP {}: {e}", self.server))
    }
}

/// The refusal of credentials without TLS (after `notify.smtp.`).
fn credentials_need_tls(config: &NotifySmtpConfig) -> String {
    format!(
        "credentials_file is sent only over verified TLS (tls = \"tls\" or \"starttls\", with trust_roots): with tls = \"none\" the user name and password would go in clear to whoever holds {}:{}, and any local user can hold a loopback port while the server restarts",
        config.host, config.port
    )
}

/// TLS for the server's host name, trusting only the configured roots.
fn tls_parameters(config: &NotifySmtpConfig) -> Result<TlsParameters, String> {
    let Some(path) = &config.trust_roots else {
        return Err("trust_roots is required with TLS".into());
    };
    let certs = countersign_outbound::read_trust_roots(path)
        .map_err(|e| format!("trust_roots {}: {e}", path.display()))?;
    let mut builder = TlsParameters::builder(config.host.clone())
        .certificate_store(lettre::transport::smtp::client::CertificateStore::None);
    for cert in certs {
        builder = builder.add_root_certificate(
            Certificate::from_der(cert.to_vec())
                .map_err(|e| format!("trust_roots {}: not a certificate: {e}", path.display()))?,
        );
    }
    countersign_identity::tls::install_crypto_provider();
    builder
        .build_rustls()
        .map_err(|e| format!("trust_roots {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(tls: SmtpTls, port: u16) -> NotifySmtpConfig {
        NotifySmtpConfig {
            host: "127.0.0.1".into(),
            port,
            tls,
            trust_roots: None,
            from: "countersign@localhost".into(),
            to: vec!["alice@localhost".into()],
            credentials_file: Some("/nonexistent/smtp-credentials".into()),
            timeout_secs: 5,
        }
    }

    #[test]
    fn refuses_smtp_credentials_without_tls_even_to_a_loopback_port() {
        let refused = SmtpChannel::from_config(&config(SmtpTls::None, 2525)).err();
        assert_eq!(
            refused,
            Some(NotifyError::Config(
                "notify.smtp.credentials_file is sent only over verified TLS (tls = \"tls\" or \"starttls\", with trust_roots): with tls = \"none\" the user name and password would go in clear to whoever holds 127.0.0.1:2525, and any local user can hold a loopback port while the server restarts".into()
            ))
        );
        // Without credentials, plain SMTP to a loopback address stays allowed.
        let mut plain = config(SmtpTls::None, 2525);
        plain.credentials_file = None;
        assert!(SmtpChannel::from_config(&plain).is_ok());
    }
}
