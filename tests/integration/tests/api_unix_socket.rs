//! The HTTP API on a Unix socket for one OS user (`countersign api serve
//! --listen unix:PATH --client-user AGENT`), against real users: the agent
//! (a `useradd` user) is answered; another user holding the same bearer
//! credential gets not one byte back and proposes nothing; and the API
//! refuses to make its socket where another user could replace it. Skipped
//! (and says so) when not root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;
mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hardened_support::{Base, Processes, Users, skipped_without_root, uid_of};
use serde_json::Value;
use support::Harness;

/// One request over the Unix socket at `socket`, as `user`: the raw reply.
fn request_as(user: &str, socket: &Path, method: &str, target: &str, token: &str) -> String {
    let out = Command::new("runuser")
        .args(["-u", user, "--", "python3", "-c", CLIENT])
        .arg(socket)
        .args([method, target, token])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// A client that sends one request and prints whatever comes back.
const CLIENT: &str = r#"
import socket, sys
path, method, target, token = sys.argv[1:5]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
body = b'{"arguments":{"name":"over-the-socket","cron":"0 3 * * *"}}' if method == "POST" else b""
try:
    s.sendall((f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n"
               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body)
except (BrokenPipeError, ConnectionResetError):
    pass  # the server closed the connection unread

data = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:
        break
    if not chunk:
        break
    data += chunk
sys.stdout.write(data.decode("utf-8", "replace"))
"#;

fn serve(h: &Harness, socket: &Path, client: &str, log: &Path) -> std::process::Child {
    Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "api", "serve", "--listen"])
        .arg(format!("unix:{}", socket.display()))
        .args(["--client-user", client])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_client_user_is_answered_and_the_socket_is_made_where_nobody_else_writes() {
    if skipped_without_root("api_unix_socket") {
        return;
    }
    let users = Users::create();
    let (agent, other) = (users.agent.clone(), users.signer.clone());
    let (base, _bin) = Base::with_binaries("cs-api-unix");
    let h = Harness::start().await;
    let created = h
        .cli(&[
            "--json", "api", "token", "create", "--ttl", "1h", "--stdout",
        ])
        .await;
    let token = created.json()["token"].as_str().unwrap().to_owned();
    let socket = base.0.join("api.sock");
    let log = base.0.join("api.log");
    let mut processes = Processes::default();
    processes.0.push(serve(&h, &socket, &agent, &log));
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            processes.0[0].try_wait().unwrap().is_none(),
            "the API exited"
        );
        assert!(start.elapsed() < Duration::from_secs(30), "no socket");
        std::thread::sleep(Duration::from_millis(50));
    }

    // The agent is answered, as its credential's session.
    let listed = request_as(&agent, &socket, "GET", "/v1/operations", &token);
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    let proposed = request_as(
        &agent,
        &socket,
        "POST",
        "/v1/operations/schedule.create/proposals",
        &token,
    );
    assert!(proposed.starts_with("HTTP/1.1 200"), "{proposed}");
    assert!(proposed.contains("\"status\":\"pending\""), "{proposed}");

    // Another user with the same credential: nothing comes back, nothing
    // is proposed.
    let before = h.cli(&["--json", "list"]).await.json();
    let refused = request_as(
        &other,
        &socket,
        "POST",
        "/v1/operations/schedule.create/proposals",
        &token,
    );
    assert_eq!(refused, "", "another user gets no byte");
    let refused = request_as(&other, &socket, "GET", "/v1/operations", &token);
    assert_eq!(refused, "");
    let after = h.cli(&["--json", "list"]).await.json();
    assert_eq!(count(&before), 1, "the agent's proposal is listed");
    assert_eq!(count(&after), 1, "nothing more was proposed");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("refused a connection from another user")
            && said.contains(&format!("uid={}", uid_of(&other))),
        "{said}"
    );
    drop(processes);

    // Where another user could replace the socket, it is not made.
    let shared = base.0.join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let run = h
        .cli(&[
            "api",
            "serve",
            "--listen",
            &format!("unix:{}/api.sock", shared.display()),
            "--client-user",
            &agent,
        ])
        .await;
    let why = run.result.unwrap_err().to_string();
    assert!(
        why.contains("can be written by other users (mode 1777)"),
        "{why}"
    );
    assert!(!shared.join("api.sock").exists());
    let theirs = base.0.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    let chowned = Command::new("chown")
        .arg(&other)
        .arg(&theirs)
        .output()
        .unwrap();
    assert!(chowned.status.success());
    let run = h
        .cli(&[
            "api",
            "serve",
            "--listen",
            &format!("unix:{}/api.sock", theirs.display()),
            "--client-user",
            &agent,
        ])
        .await;
    let why = run.result.unwrap_err().to_string();
    assert!(
        why.contains(&format!("belongs to uid {}", uid_of(&other))),
        "{why}"
    );
    drop(users);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_needs_its_client_user_and_a_tcp_address_takes_none() {
    let h = Harness::start().await;
    let refused = h
        .cli(&["api", "serve", "--listen", "unix:/tmp/x.sock"])
        .await;
    assert_eq!(
        refused.result.unwrap_err().to_string(),
        "--listen unix:PATH needs --client-user USER: the only OS user whose connections are served"
    );
    let refused = h.cli(&["api", "serve", "--client-user", "nobody"]).await;
    assert!(
        refused
            .result
            .unwrap_err()
            .to_string()
            .starts_with("--client-user goes with --listen unix:PATH"),
    );
}

fn count(list: &Value) -> usize {
    list.as_array().expect("a list").len()
}
