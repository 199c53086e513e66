//! The console check: every address the console's names resolve to, on
//! its port, is held by this console (its TLS certificate, as on disk) or
//! by nothing. An address held by anything else fails: a browser that
//! resolves a console name to it would reach that program instead.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_identity::{Config, ConsoleConfig, Home};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;

use super::NETWORK_TIMEOUT;
use super::report::Check;

const NAME: &str = "console";

/// Who holds one of the console's addresses.
#[derive(Debug, PartialEq, Eq)]
enum Holder {
    Nobody,
    TheConsole,
    Another(String),
    /// Something serves TLS there, but this home holds no copy of the
    /// console's certificate to compare with (a head-only home).
    Unknown,
}

/// The console check.
pub(super) async fn check_console(home: &Home, config: &Config) -> Check {
    let Some(console) = &config.console else {
        return Check::ok(NAME, "no [console] configured");
    };
    let addresses = match countersign_console::bind::addresses(console).await {
        Ok(addresses) => addresses,
        Err(e @ countersign_console::bind::BindError::Resolve { .. }) => {
            let local = matches!(&e, countersign_console::bind::BindError::Resolve { name, .. } if name.ends_with(".local"));
            let fix = if local {
                "a .local name is answered over mDNS: set `mdns = true` in [console] (with addr this computer's address on the phone's network) and the console answers for it itself, or take it out of [console] names in config.toml; until then the console does not start (the signer does not need it)"
            } else {
                "make the name resolve on this machine (a DNS record, or a line in /etc/hosts) or take it out of [console] names in config.toml; until then the console does not start (the signer does not need it)"
            };
            return Check::fail(NAME, e.to_string(), fix);
        }
        Err(e) => return Check::fail(NAME, e.to_string(), "fix [console] in config.toml"),
    };
    let served = served_certificate(home, console);
    let mut held = Vec::new();
    let mut free = Vec::new();
    let mut unknown = Vec::new();
    for ip in addresses {
        let addr = SocketAddr::new(ip, console.addr.port());
        match holder(addr, console, served.as_deref()).await {
            Holder::TheConsole => held.push(addr.to_string()),
            Holder::Unknown => unknown.push(addr.to_string()),
            Holder::Nobody => free.push(addr.to_string()),
            Holder::Another(what) => {
                return Check::fail(
                    NAME,
                    format!("{addr} is held by another program ({what}), not this console"),
                    format!(
                        "stop it (`ss -ltnp 'sport = :{}'` shows it): a browser opening {} may reach it",
                        addr.port(),
                        console.origin()
                    ),
                );
            }
        }
    }
    if !unknown.is_empty() {
        return Check::warn(
            NAME,
            format!(
                "{} serves TLS on {}; this home holds no copy of the console's certificate \
                 (a head-only home), so which program that is was not checked",
                console.origin(),
                unknown.join(", ")
            ),
            Some(
                "run `countersign doctor` in the console's home (the signer's user) to check it"
                    .into(),
            ),
        );
    }
    match (held.is_empty(), free.is_empty()) {
        (false, true) => Check::ok(
            NAME,
            format!("{} serves on {}", console.origin(), held.join(", ")),
        ),
        (true, _) => Check::warn(
            NAME,
            format!(
                "{} is not running (nothing listens on {})",
                console.origin(),
                free.join(", ")
            ),
            Some(
                "start it with `countersign console` or `countersign up --console` if you use it"
                    .into(),
            ),
        ),
        (false, false) => Check::fail(
            NAME,
            format!(
                "{} holds {} but not {}",
                console.origin(),
                held.join(", "),
                free.join(", ")
            ),
            "restart the console: it holds every address of its names or none",
        ),
    }
}

/// The DER of the certificate the console serves, as on disk.
fn served_certificate(home: &Home, console: &ConsoleConfig) -> Option<Vec<u8>> {
    let path = match &console.own_cert {
        Some((cert, _)) => cert.clone(),
        None => home.console_cert_path(),
    };
    let pem = std::fs::read(path).ok()?;
    CertificateDer::from_pem_slice(&pem)
        .ok()
        .map(|c| c.as_ref().to_vec())
}

async fn holder(addr: SocketAddr, console: &ConsoleConfig, served: Option<&[u8]>) -> Holder {
    let connected = tokio::time::timeout(NETWORK_TIMEOUT, TcpStream::connect(addr)).await;
    let stream = match connected {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Holder::Nobody,
        Ok(Err(e)) => return Holder::Another(format!("connecting failed: {e}")),
        Err(_) => return Holder::Another("no answer to connect".into()),
    };
    countersign_identity::tls::install_crypto_provider();
    let capture = Arc::new(Capture::default());
    let config = rustls::ClientConfig::builder()
        .dangerous()
        .with_custom_certificate_verifier(capture.clone())
        .with_no_client_auth();
    let Ok(name) = ServerName::try_from(console.names[0].clone()) else {
        return Holder::Another("the console's name is not a server name".into());
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    match tokio::time::timeout(NETWORK_TIMEOUT, connector.connect(name, stream)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => return Holder::Another(format!("no TLS console: {e}")),
        Err(_) => return Holder::Another("no TLS answer".into()),
    }
    let seen = capture.seen.lock().ok().and_then(|s| s.clone());
    match (seen, served) {
        (Some(seen), Some(served)) if seen == served => Holder::TheConsole,
        (Some(_), None) => Holder::Unknown,
        _ => Holder::Another("its certificate is not the console's".into()),
    }
}

/// Accepts any certificate, keeping it: the check compares it with the
/// console's own instead of trusting a chain. Nothing is sent over the
/// connection.
#[derive(Debug, Default)]
struct Capture {
    seen: std::sync::Mutex<Option<Vec<u8>>>,
}

impl ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some(end_entity.as_ref().to_vec());
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &supported())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &supported())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        supported().supported_schemes()
    }
}

fn supported() -> rustls::crypto::WebPkiSupportedAlgorithms {
    rustls::crypto::ring::default_provider().signature_verification_algorithms
}
