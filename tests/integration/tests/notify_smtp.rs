//! Email notifications through a real SMTP server: aiosmtpd (PyPI, in
//! tests/requirements.txt) as a sink on 127.0.0.1 that stores each
//! message in a maildir, sent by the notify process (never the signer),
//! and the settings the notify process refuses.
#![allow(clippy::unwrap_used)]

mod notify_support;
#[path = "../../../signer/tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use notify_support::{Notifying, start_refusal};
use support::{head, propose};

/// `python3 -m aiosmtpd` on a free loopback port, storing into `maildir`;
/// killed on drop.
struct SmtpSink {
    port: u16,
    child: Child,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_smtp_sink(maildir: &Path) -> SmtpSink {
    start_smtp_sink_with(maildir, &[])
}

/// As [`start_smtp_sink`], with more arguments for aiosmtpd (STARTTLS).
fn start_smtp_sink_with(maildir: &Path, extra: &[&std::ffi::OsStr]) -> SmtpSink {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("python3")
        .args(["-m", "aiosmtpd", "-n", "-l"])
        .arg(format!("127.0.0.1:{port}"))
        .args(extra)
        .args(["-c", "aiosmtpd.handlers.Mailbox"])
        .arg(maildir)
        .stdout(Stdio::null())
        .spawn()
        .expect("python3 with aiosmtpd (pip install -r tests/requirements.txt)");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "aiosmtpd did not listen on {port} (pip install -r tests/requirements.txt)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    SmtpSink { port, child }
}

fn smtp_config(host: &str, port: u16) -> String {
    format!(
        "\n[console]\naddr = \"127.0.0.1:7998\"\n[notify]\npoll_ms = 20\nretry_initial_ms = 50\n[notify.smtp]\nhost = \"{host}\"\nport = {port}\ntls = \"none\"\nfrom = \"countersign@localhost\"\nto = [\"alice@localhost\", \"bob@localhost\"]\n"
    )
}

/// The messages in `maildir/new`, as text: folded header lines unfolded,
/// quoted-printable soft breaks and escapes decoded.
fn messages(maildir: &Path) -> Vec<String> {
    match std::fs::read_dir(maildir.join("new")) {
        Ok(entries) => entries
            .map(|e| readable(&std::fs::read_to_string(e.unwrap().path()).unwrap()))
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn readable(raw: &str) -> String {
    let text = raw
        .replace("\r\n", "\n")
        .replace("\n ", " ")
        .replace("=\n", "");
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn a_waiting_proposal_is_emailed_with_its_console_link_and_no_proof() {
    let dir = tempfile::tempdir().unwrap();
    let maildir = dir.path().join("mail");
    let sink = start_smtp_sink(&maildir);
    let n = Notifying::start(&smtp_config("127.0.0.1", sink.port)).await;
    let view = propose(&mut head(&n.signer).await).await;

    let smtp = n.first_channel_once(|c| c.delivered == 1).await;
    assert_eq!(smtp.channel, "smtp");
    let delivery = smtp.deliveries[0].clone();
    assert_eq!(delivery.proposal_id, view.id);
    assert_eq!(delivery.attempts, 1);

    let mail = messages(&maildir);
    let [message] = mail.as_slice() else {
        panic!("{mail:?}")
    };
    assert!(
        message.contains(&format!(
            "Subject: countersign: schedule.create waits for your decision ({})",
            view.id
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!(
            "Message-ID: <{}@countersign.invalid>",
            delivery.delivery_id
        )),
        "{message}"
    );
    assert!(
        message.contains("X-RcptTo: alice@localhost, bob@localhost"),
        "{message}"
    );
    assert!(message.contains(&view.arguments_sha256), "{message}");
    assert!(
        message.contains(&format!(
            "https://console.localhost:7998/proposals/{}",
            view.id
        )),
        "{message}"
    );
    assert!(message.contains("carries no approval"), "{message}");
    assert!(!message.contains("v4.public."), "{message}");
}

#[tokio::test]
async fn an_smtp_server_that_is_down_shows_as_a_failure_with_its_reason() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = smtp_config("127.0.0.1", closed)
        .replace("[notify.smtp]", "max_attempts = 1\n[notify.smtp]");
    let n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;
    let smtp = n.first_channel_once(|c| c.failed == 1).await;
    let failed = &smtp.deliveries[0];
    assert_eq!(failed.proposal_id, view.id);
    assert!(
        failed
            .last_error
            .as_deref()
            .unwrap_or_default()
            .starts_with(&format!("SMTP 127.0.0.1:{closed}: ")),
        "{failed:?}"
    );
}

#[tokio::test]
async fn email_goes_over_required_starttls_to_a_server_under_the_configured_roots() {
    let dir = tempfile::tempdir().unwrap();
    let ca = countersign_identity::pki::CaMaterial::generate("smtp test CA").unwrap();
    let now = time::OffsetDateTime::now_utc();
    let leaf = countersign_identity::pki::issue_server_cert(
        &ca,
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    let (cert, key, roots) = (
        dir.path().join("smtp.pem"),
        dir.path().join("smtp.key"),
        dir.path().join("ca.pem"),
    );
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&key, leaf.key_pem.as_bytes()).unwrap();
    std::fs::write(&roots, ca.cert_pem()).unwrap();
    let maildir = dir.path().join("mail");
    // aiosmtpd requires STARTTLS before MAIL when given a certificate.
    let sink = start_smtp_sink_with(
        &maildir,
        &[
            "--tlscert".as_ref(),
            cert.as_os_str(),
            "--tlskey".as_ref(),
            key.as_os_str(),
        ],
    );
    let config = smtp_config("127.0.0.1", sink.port).replace(
        "tls = \"none\"",
        &format!("tls = \"starttls\"\ntrust_roots = \"{}\"", roots.display()),
    );
    let n = Notifying::start(&config).await;
    let view = propose(&mut head(&n.signer).await).await;
    n.first_channel_once(|c| c.delivered == 1).await;
    let mail = messages(&maildir);
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert!(mail[0].contains(&view.id), "{}", mail[0]);
}

#[tokio::test]
async fn refuses_smtp_without_tls_to_a_host_that_is_not_loopback() {
    assert_eq!(
        start_refusal(&smtp_config("mail.example", 25)).await,
        "notify.smtp.tls = \"none\" is allowed only to a loopback IP address (host = \"127.0.0.1\" or \"::1\"), not \"mail.example\""
    );
}

/// `localhost` goes to the system resolver; another local user listening
/// on `[::1]:25` would get the message. Refused, naming the fix.
#[tokio::test]
async fn refuses_smtp_without_tls_to_localhost_naming_the_address_to_write() {
    assert_eq!(
        start_refusal(&smtp_config("localhost", 25)).await,
        "notify.smtp.tls = \"none\" is allowed only to a loopback IP address (host = \"127.0.0.1\" or \"::1\"), not \"localhost\": a name goes to the system resolver, and another local user listening on the address it answers would receive the message"
    );
}

#[tokio::test]
async fn refuses_a_recipient_that_is_not_an_address() {
    let config = smtp_config("127.0.0.1", 25).replace("bob@localhost", "bob");
    let refusal = start_refusal(&config).await;
    assert!(
        refusal.starts_with("notify.smtp.to \"bob\" is not an email address"),
        "{refusal}"
    );
}

#[tokio::test]
async fn refuses_an_smtp_credentials_file_without_a_password_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smtp-credentials");
    countersign_identity::files::write_private_new(&path, b"alice\n").unwrap();
    let ca = countersign_identity::pki::CaMaterial::generate("smtp test CA").unwrap();
    let roots = dir.path().join("ca.pem");
    std::fs::write(&roots, ca.cert_pem()).unwrap();
    let config = smtp_config("127.0.0.1", 465).replace(
        "tls = \"none\"",
        &format!("tls = \"tls\"\ntrust_roots = \"{}\"", roots.display()),
    ) + &format!("credentials_file = \"{}\"\n", path.display());
    assert_eq!(
        start_refusal(&config).await,
        format!(
            "notify.smtp.credentials_file {} must hold the user name on its first line and the password on its second",
            path.display()
        )
    );
}

/// A port is not an identity: another local user can hold the loopback
/// port while the SMTP server restarts. Credentials without TLS are
/// refused at start, and the port is never connected to.
#[tokio::test]
async fn refuses_smtp_credentials_without_tls_and_never_connects_to_the_port() {
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    squatter.set_nonblocking(true).unwrap();
    let port = squatter.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("smtp-credentials");
    countersign_identity::files::write_private_new(&path, b"alice\nsmtp-password\n").unwrap();
    let config =
        smtp_config("127.0.0.1", port) + &format!("credentials_file = \"{}\"\n", path.display());
    assert_eq!(
        start_refusal(&config).await,
        format!(
            "notify.smtp.credentials_file is sent only over verified TLS (tls = \"tls\" or \"starttls\", with trust_roots): with tls = \"none\" the user name and password would go in clear to whoever holds 127.0.0.1:{port}, and any local user can hold a loopback port while the server restarts"
        )
    );
    assert_eq!(
        squatter.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the notify process connected to the port"
    );
}
