//! Two `countersign-signer serve` processes of one PostgreSQL ledger, for
//! the fault tests: a signer process restarted on the same port, each
//! home's configuration, and clients that reach whichever signer answers
//! the way heads do (`countersign_identity::failover`).
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use countersign_identity::pki::{CaMaterial, issue_named_approver_cert};
use countersign_identity::tls::SignerTls;
use countersign_identity::{ApproverName, ClientCredential, Home, Role, failover};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{GetProposalRequest, ProposalView};
use tonic::Code;
use tonic::transport::Channel;

use super::{listening_on, ready_line, spawn_serve_with_fault};

/// How long a client keeps retrying a read after a signer went away.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A signer process and its address; killed if the test ends first.
pub struct Serving {
    pub child: std::process::Child,
    pub addr: String,
    /// What it logged (warnings and errors) after its ready line.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serving {
    /// `countersign-signer serve` (the binary `bin`) of `home`, whose
    /// configuration names its port, with `fault` set or not; ready once
    /// it printed its ready line. Its later output is kept ([`Self::log`]).
    pub fn start(bin: &str, home: &Home, fault: Option<&str>) -> Serving {
        use std::io::BufRead as _;
        let (child, mut stderr) = spawn_serve_with_fault(bin, home, fault);
        let line = ready_line(&mut stderr);
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let kept = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|n| n > 0) {
                kept.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Serving {
            child,
            addr: listening_on(&line).0,
            log,
        }
    }

    /// What it logged after its ready line, so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Whether the process is stopped (SIGSTOP), as `/proc` says.
    pub fn is_stopped(&self) -> bool {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // `pid (comm) S ...`: the state follows the command's closing paren.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    }

    /// Waits for the process to end by itself: its exit status.
    pub async fn ended(&mut self) -> std::process::ExitStatus {
        loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                return exit;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Sends `signal` (`-KILL`, `-STOP`, `-CONT`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status();
        assert!(sent.unwrap().success(), "kill {signal}");
    }

    /// Stops it with SIGTERM; it exits successfully.
    pub async fn stop(mut self) {
        self.signal("-TERM");
        let exit = self.ended().await;
        assert!(exit.success(), "{exit:?}");
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // A paused process is let go on first, or SIGKILL waits on nothing.
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .stderr(std::process::Stdio::null())
            .status();
        // Already ended, this does nothing.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free port on 127.0.0.1, for a signer that restarts on the same one.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes `home`'s configuration: the signer on `port`, the ledger at
/// `url`, then `more` (further sections, TOML).
pub fn configure(home: &Home, port: u16, url: &str, more: &str) {
    std::fs::remove_file(home.config_path()).unwrap();
    countersign_identity::files::write_private_new(
        &home.config_path(),
        format!("[signer]\naddr = \"127.0.0.1:{port}\"\n[ledger]\nurl = \"{url}\"\n{more}")
            .as_bytes(),
    )
    .unwrap();
}

/// A client of whichever of `addrs` answers, first tried first, as heads
/// connect, presenting `tls`.
pub async fn failover_with(addrs: &[String], tls: &SignerTls) -> SignerClient<Channel> {
    SignerClient::new(failover::signer_channel(addrs, tls).await.unwrap())
}

/// [`failover_with`] presenting `home`'s certificate for `role`.
pub async fn failover_client(home: &Home, addrs: &[String], role: Role) -> SignerClient<Channel> {
    failover_with(
        addrs,
        &SignerTls::of(home, &ClientCredential::Role(role)).unwrap(),
    )
    .await
}

/// The TLS of the named approver `name` of `home`'s principal, with a
/// certificate issued now by `home`'s CA.
pub fn named_approver_tls(home: &Home, name: &str) -> SignerTls {
    let ca = CaMaterial::load(home).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let cert = issue_named_approver_cert(
        &ca,
        &home.principal().unwrap(),
        &ApproverName::parse(name).unwrap(),
        now - time::Duration::hours(1),
        now + time::Duration::hours(1),
    )
    .unwrap();
    SignerTls::from_pem(ca.cert_pem(), &cert.cert_pem, &cert.key_pem).unwrap()
}

/// Whether `status` says no signer answered (the call may or may not have
/// reached one).
pub fn unanswered(status: &tonic::Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::Unknown | Code::Cancelled
    )
}

/// The proposal `id` read through `client`, retried while no signer
/// answers (a read is always safe to send again).
pub async fn read_again(client: &mut SignerClient<Channel>, id: &str) -> ProposalView {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let request = GetProposalRequest {
            proposal_id: id.into(),
        };
        match client.get_proposal(request).await {
            Ok(view) => return view.into_inner(),
            Err(status) => {
                assert!(unanswered(&status), "{status:?}");
                assert!(Instant::now() < deadline, "no signer answered: {status:?}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
}
