//! A streamable HTTP upstream over a Unix socket: server-everything (npm)
//! behind a socket made here. The gateway sends the bearer credential over
//! it only when the kernel reports (SO_PEERCRED) that the socket's server
//! runs as the configured `peer_user`; served by anyone else, the socket
//! gets no request and no credential.

mod common;

use std::os::unix::fs::MetadataExt as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{EverythingHttp, Seen, call_until_ok, gateway, private_file, quoted};
use countersign_gateway::{UpstreamError, Upstreams};
use serde_json::json;

/// A Unix socket at `path` forwarding to 127.0.0.1:`backend`.
fn socket_front(path: &std::path::Path, backend: u16) -> Arc<Mutex<Seen>> {
    let listener =
        tokio::net::UnixListener::bind(path).unwrap_or_else(|e| panic!("bind {path:?}: {e}"));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            log.lock().unwrap_or_else(|e| e.into_inner()).connections += 1;
            tokio::spawn(common::relay(stream, backend, Arc::clone(&log)));
        }
    });
    seen
}

fn upstream(socket: &std::path::Path, peer_user: &str, bearer: &str) -> String {
    format!(
        "[[upstream]]\nname = \"sock\"\n[upstream.http]\nurl = \"http://127.0.0.1/mcp\"\nunix_socket = {}\npeer_user = {}\nbearer_file = {}\n",
        quoted(&socket.display().to_string()),
        quoted(peer_user),
        quoted(bearer)
    )
}

/// server-everything behind a Unix socket served by this test process,
/// and a bearer file.
struct Front {
    _everything: EverythingHttp,
    _dir: tempfile::TempDir,
    socket: std::path::PathBuf,
    seen: Arc<Mutex<Seen>>,
    /// The uid the kernel reports for the socket's server (this process).
    uid: u32,
    bearer: String,
}

async fn front() -> Front {
    let everything = EverythingHttp::start().await;
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let socket = dir.path().join("mcp.sock");
    let seen = socket_front(&socket, everything.port);
    let uid = std::fs::metadata(&socket)
        .map(|m| m.uid())
        .unwrap_or_else(|e| panic!("{e}"));
    let bearer = private_file(dir.path(), "bearer", "tok-unix\n");
    Front {
        _everything: everything,
        _dir: dir,
        socket,
        seen,
        uid,
        bearer,
    }
}

#[tokio::test]
async fn a_unix_socket_served_by_the_peer_user_gets_the_bearer_on_every_request() {
    let f = front().await;
    // The socket's server is this test process: its uid is the peer's.
    let upstreams = Upstreams::start(&gateway(&upstream(
        &f.socket,
        &f.uid.to_string(),
        &f.bearer,
    )));
    call_until_ok(
        &upstreams,
        "sock",
        "echo",
        json!({"message": "over the socket"}),
        Duration::from_secs(10),
    )
    .await;
    upstreams.shutdown().await;
    let seen = f.seen.lock().unwrap_or_else(|e| e.into_inner());
    assert!(seen.connections >= 1);
    assert!(!seen.authorizations.is_empty());
    assert!(
        seen.authorizations.iter().all(|a| a == "Bearer tok-unix"),
        "{:?}",
        seen.authorizations
    );
}

#[tokio::test]
async fn a_unix_socket_served_by_another_user_gets_no_request_and_no_credential() {
    let f = front().await;
    let uid = f.uid;
    // The configuration expects another user than the one serving it.
    let expected = uid.wrapping_add(1);
    let upstreams = Upstreams::start(&gateway(&upstream(
        &f.socket,
        &expected.to_string(),
        &f.bearer,
    )));
    let listed = upstreams.list_tools("sock").await;
    let Err(UpstreamError::Unavailable { reason, .. }) = &listed else {
        panic!("{listed:?}");
    };
    assert!(
        reason.contains(&format!(
            "its server runs as uid {uid}, not as `peer_user` \"{expected}\" (uid {expected})"
        )),
        "{reason}"
    );
    upstreams.shutdown().await;
    let seen = f.seen.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(seen.bytes, 0);
    assert!(seen.authorizations.is_empty(), "{:?}", seen.authorizations);
}
