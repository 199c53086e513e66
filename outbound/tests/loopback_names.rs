//! Plain http to `localhost` must not reach another local user.
//!
//! `localhost` is answered by the system resolver; where it answers `::1`
//! first (or 127.0.0.1 is not listening), a process of another OS user
//! listening on `[::1]:<port>` receives a webhook with its
//! `Countersign-Proof` header. The registry and the notification
//! configuration refuse such URLs (their own tests); this test runs the
//! attacker as a second OS user and shows the connection code itself never
//! sends plain http to a name, while the same listener does receive a
//! request addressed to its IP literal (so its silence means something).
//!
//! Needs root (`useradd`, `runuser`), python3 and IPv6 loopback; without
//! them it prints SKIPPED and passes without testing anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader};
use std::net::{Ipv6Addr, SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::Duration;

use countersign_outbound::header::{HeaderMap, HeaderName, HeaderValue};
use countersign_outbound::{Bytes, PostError, Target, post};
use countersign_registry::WebhookUrl;

/// The second OS user playing the attacker.
const ATTACKER: &str = "cs-loopback-peer";

/// Listens on `[::1]:PORT` (argv[1]), prints `listening`, then for each
/// connection prints `GOT <first request line and headers>` and answers
/// 204; exits once no connection came for two seconds (killing `runuser`
/// would leave it running).
const LISTENER: &str = r#"
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("::1", int(sys.argv[1])))
s.listen(8)
s.settimeout(2)
print("listening", flush=True)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    c.settimeout(2)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = c.recv(4096)
            if not chunk:
                break
            data += chunk
    except Exception:
        pass
    print("GOT " + data.decode("latin-1").replace("\r\n", " | "), flush=True)
    try:
        c.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    except Exception:
        pass
    c.close()
"#;

fn skip(why: &str) {
    eprintln!("SKIPPED: {why}");
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Creates [`ATTACKER`] if absent.
fn ensure_attacker() {
    let exists = Command::new("id")
        .arg(ATTACKER)
        .output()
        .is_ok_and(|o| o.status.success());
    if !exists {
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                ATTACKER,
            ])
            .output()
            .unwrap();
        // Another test process may have created it meanwhile.
        let now = Command::new("id").arg(ATTACKER).output().unwrap();
        assert!(now.status.success(), "useradd {ATTACKER}: {out:?}");
    }
}

fn headers_with_proof() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        HeaderName::from_static("countersign-proof"),
        HeaderValue::from_static("v4.public.stand-in-for-a-proof"),
    );
    headers
}

async fn send(url: &str) -> Result<u16, PostError> {
    let url = WebhookUrl::parse(url).unwrap();
    let target = Target {
        url: &url,
        trust_roots: None,
        timeout: Duration::from_secs(5),
    };
    post(target, headers_with_proof(), Bytes::from_static(b"{}"))
        .await
        .map(|a| a.status)
}

#[tokio::test]
async fn plain_http_to_localhost_never_reaches_another_users_listener_on_ipv6_loopback() {
    if !is_root() {
        return skip("needs root to create the second OS user");
    }
    if Command::new("python3").arg("-V").output().is_err() {
        return skip("needs python3");
    }
    // A port free on [::1] (and, so the resolver's 127.0.0.1 answer would
    // fall through to ::1 before the fix, free on 127.0.0.1 too).
    let port = loop {
        let Ok(v6) = TcpListener::bind(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))) else {
            return skip("no IPv6 loopback");
        };
        let port = v6.local_addr().unwrap().port();
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            break port;
        }
    };
    ensure_attacker();
    let mut listener = Command::new("runuser")
        .args([
            "-u",
            ATTACKER,
            "--",
            "python3",
            "-c",
            LISTENER,
            &port.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(listener.stdout.take().unwrap()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "listening");

    // The attacker's listener works: a request to its IP literal reaches it.
    assert_eq!(send(&format!("http://[::1]:{port}/control")).await, Ok(204));
    // The same request to `localhost` is refused before any connection.
    assert_eq!(
        send(&format!("http://localhost:{port}/hook")).await,
        Err(PostError::PlainHttpToName("localhost".into()))
    );
    assert_eq!(
        send(&format!("http://localhost.:{port}/hook")).await,
        Err(PostError::PlainHttpToName("localhost.".into()))
    );
    // The listener exits two seconds after its last connection.
    listener.wait().unwrap();
    let got: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].starts_with("GOT POST /control HTTP/1.1"), "{got:?}");
    assert!(!got.iter().any(|l| l.contains("/hook")), "{got:?}");
}
