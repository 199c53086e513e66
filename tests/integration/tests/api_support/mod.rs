//! The HTTP API head over a real TCP listener on 127.0.0.1:0, built by the
//! same `countersign::api_state` as `countersign api serve`, next to the
//! CLI harness (in-process signer, scripted terminal). Requests are written
//! by hand over TCP, so a test controls every byte: Host, Origin, a query
//! string, duplicate keys.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use countersign::Context;
use countersign_identity::Home;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use crate::support::Harness;

/// A running API in front of a harness's signer.
pub struct Api {
    pub h: Harness,
    pub addr: SocketAddr,
    pub state: Arc<countersign_api::ApiState>,
    stop: Option<oneshot::Sender<()>>,
}

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Api {
    pub async fn start() -> Self {
        Self::over(Harness::start().await).await
    }

    pub async fn over(h: Harness) -> Self {
        let ctx = Context::load(Home::at(h.home()).unwrap()).unwrap();
        let state = Arc::new(countersign::api_state(&ctx).await.unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(countersign_api::run(
            listener,
            Arc::clone(&state),
            async move {
                let _ = stopped.await;
            },
        ));
        Self {
            h,
            addr,
            state,
            stop: Some(stop),
        }
    }

    /// A new credential, created through `countersign api token create --stdout`.
    pub async fn token(&self) -> String {
        let run = self
            .h
            .cli(&[
                "--json", "api", "token", "create", "--ttl", "1h", "--stdout",
            ])
            .await;
        assert_eq!(run.result, Ok(()), "{}", run.stderr);
        run.json()["token"].as_str().unwrap().to_string()
    }

    /// Send a request with `headers` (a Host header is added unless given).
    pub async fn raw(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        http(self.addr, method, target, headers, body).await
    }

    /// `GET target` with the credential.
    pub async fn get(&self, token: &str, target: &str) -> Reply {
        let auth = format!("Bearer {token}");
        self.raw("GET", target, &[("Authorization", &auth)], b"")
            .await
    }

    /// `POST target` with the credential and a JSON body.
    pub async fn post(&self, token: &str, target: &str, body: &str) -> Reply {
        let auth = format!("Bearer {token}");
        self.raw(
            "POST",
            target,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            body.as_bytes(),
        )
        .await
    }

    /// Propose through the API; returns the proposal id.
    pub async fn propose(&self, token: &str, operation: &str, arguments: &str) -> String {
        let reply = self
            .post(
                token,
                &format!("/v1/operations/{operation}/proposals"),
                &format!(r#"{{"arguments":{arguments}}}"#),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()["id"].as_str().unwrap().to_string()
    }

    /// Propose `schedule.create` for schedule `name` through the API and
    /// approve it at the (scripted) terminal: the id and the proof text.
    pub async fn approved(&self, token: &str, name: &str) -> (String, String) {
        let args = format!(r#"{{"name":"{name}","cron":"0 3 * * *"}}"#);
        let id = self.propose(token, "schedule.create", &args).await;
        let path = self.h.approve_to_file(&id).await;
        (
            id,
            std::fs::read_to_string(path).unwrap().trim().to_string(),
        )
    }

    /// Execute through the approval handed over by the signer.
    pub async fn execute_handoff(&self, token: &str, id: &str) -> Reply {
        self.post(token, &format!("/v1/proposals/{id}/execute-handoff"), "")
            .await
    }

    /// Execute with a proof in the body.
    pub async fn execute(&self, token: &str, id: &str, proof: &str) -> Reply {
        let body = serde_json::json!({ "proof": proof }).to_string();
        self.post(token, &format!("/v1/proposals/{id}/execute"), &body)
            .await
    }
}

/// Assert a `200` refusal with exactly `reason` and nothing applied.
pub fn assert_refused(reply: &Reply, reason: &str) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    let json = reply.json();
    assert_eq!(json["reason"], reason, "{json}");
    assert_eq!(json["ok"], false, "{json}");
    assert_eq!(json["applied"], false, "{json}");
}

/// Assert a 4xx/5xx with `status` whose message contains `needle`.
pub fn assert_error(reply: &Reply, status: u16, needle: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    let message = reply.json()["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

/// One HTTP/1.1 request to `addr`, written by hand (`Connection: close`).
pub async fn http(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut request = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).await.unwrap();
    parse_reply(&bytes)
}

/// An HTTP/1.1 response as read off the wire: status, head and body.
pub fn parse_reply(bytes: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Reply {
        status,
        headers: head.to_string(),
        body: body.to_string(),
    }
}

/// The random secret of an API token (`cs1_<id>_<secret>`): everything after
/// the id. The secret is base64url, so it may itself contain `_`.
pub fn token_secret(token: &str) -> &str {
    let (_id, secret) = token
        .strip_prefix("cs1_")
        .and_then(|rest| rest.split_once('_'))
        .expect("an API token");
    assert!(secret.len() >= 40, "{secret:?} is not a whole secret");
    secret
}

/// A fresh API credential of `h`'s principal.
pub async fn api_token(h: &Harness) -> String {
    h.cli(&[
        "--json", "api", "token", "create", "--ttl", "10m", "--stdout",
    ])
    .await
    .json()["token"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Start `countersign api serve` on an ephemeral loopback port: the child,
/// its stderr, what it logged so far, and the address it listens on.
pub async fn api_serve(
    h: &Harness,
) -> (
    tokio::process::Child,
    BufReader<tokio::process::ChildStderr>,
    String,
    std::net::SocketAddr,
) {
    let mut child = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args([
            "--home",
            &h.home(),
            "api",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .env("COUNTERSIGN_LOG", "trace")
        .env_remove("COUNTERSIGN_SESSION")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).await.unwrap() > 0,
                "exited: {seen}"
            );
            seen.push_str(&line);
            if let Some(rest) = line.split("listening on http://").nth(1) {
                assert!(line.contains("(loopback only)"), "{line}");
                return rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        }
    })
    .await
    .expect("the API said where it listens");

    (child, stderr, seen, addr)
}
