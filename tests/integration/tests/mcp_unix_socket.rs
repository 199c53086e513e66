//! The MCP head on a Unix socket, for an agent that runs as another OS
//! user (`countersign mcp --listen unix:PATH --client-user AGENT`, reached
//! with `countersign mcp --connect unix:PATH --server-user USER`), against
//! real users: the agent (a `useradd` user) gets a session of its own and
//! proposes; a connection from another user is closed unread and proposes
//! nothing; and a socket another user serves at the path the agent was
//! given gets not one byte from the agent's relay. Skipped (and says so)
//! when not root.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hardened_support;
mod support;

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::Parser as _;
use hardened_support::{Base, Processes, Users, skipped_without_root, uid_of};
use serde_json::{Value, json};
use support::Harness;

/// A relay (`countersign mcp --connect`) run as `user`, driven as an MCP
/// client drives a stdio server.
struct Relay {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: PathBuf,
}

impl Relay {
    fn start(bin: &Path, user: &str, socket: &Path, server_user: &str, stderr: PathBuf) -> Relay {
        let mut child = Command::new("runuser")
            .args(["-u", user, "--"])
            .arg(bin.join("countersign"))
            .args(["mcp", "--connect"])
            .arg(format!("unix:{}", socket.display()))
            .args(["--server-user", server_user])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Relay {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        // A relay that was refused may have gone: its pipe is then closed.
        let _ = writeln!(stdin, "{message}");
        let _ = stdin.flush();
    }

    /// The answer to request `id`, or `None` once the relay's output ends.
    fn response(&mut self, id: u64) -> Option<Value> {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(20)).ok()?;
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return Some(message);
            }
        }
    }

    fn initialize(&mut self) -> Option<Value> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "countersign-tests", "version": "0"}}}),
        );
        let answer = self.response(0)?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        Some(answer)
    }

    /// Close stdin and wait for the relay to exit: its status and stderr.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let start = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the relay did not exit"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        (status, std::fs::read_to_string(&self.stderr).unwrap())
    }
}

fn wait_for_file(path: &Path, child: &mut Child) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "{path:?}: its server exited"
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{path:?} never appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn propose_call(id: u64, name: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "propose_schedule_create",
        "arguments": {"arguments": {"name": name, "cron": "0 3 * * *"}}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_client_user_is_served_and_a_squatted_socket_gets_nothing() {
    if skipped_without_root("mcp_unix_socket") {
        return;
    }
    let users = Users::create();
    let (agent, other) = (users.agent.clone(), users.signer.clone());
    let (base, bin) = Base::with_binaries("cs-mcp-unix");
    let h = Harness::start().await;
    let socket = base.0.join("mcp.sock");
    let log = base.0.join("head.log");
    let mut processes = Processes::default();
    processes.0.push(
        Command::new(countersign_integration_tests::bin("countersign"))
            .args(["--home", &h.home(), "mcp", "--listen"])
            .arg(format!("unix:{}", socket.display()))
            .args(["--client-user", &agent])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    wait_for_file(&socket, &mut processes.0[0]);

    // The agent: two connections, two sessions, each proposing.
    let mut first = Relay::start(&bin, &agent, &socket, "root", base.0.join("first.err"));
    let answer = first.initialize().expect("the agent's relay is answered");
    assert!(answer.get("result").is_some(), "{answer}");
    first.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let tools = first.response(1).expect("tools/list is answered");
    assert!(
        tools["result"]["tools"].as_array().unwrap().len() > 3,
        "{tools}"
    );
    first.send(&propose_call(2, "from-the-agent"));
    let proposed = first.response(2).expect("the proposal is answered");
    let content = &proposed["result"]["structuredContent"];
    let first_id = content["id"].as_str().expect("a proposal id").to_owned();
    let first_session = content["session"].as_str().unwrap_or_default().to_owned();
    let mut second = Relay::start(&bin, &agent, &socket, "root", base.0.join("second.err"));
    assert!(second.initialize().is_some());
    second.send(&propose_call(1, "again-from-the-agent"));
    let again = second.response(1).expect("the second proposal is answered");
    let second_id = again["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut sessions = Vec::new();
    for id in [&first_id, &second_id] {
        let shown = h.cli(&["--json", "show", id]).await.json();
        sessions.push(shown["session"].as_str().unwrap().to_owned());
    }
    assert_ne!(
        sessions[0], sessions[1],
        "each connection is its own session"
    );
    if !first_session.is_empty() {
        assert_eq!(first_session, sessions[0]);
    }
    let (status, _) = first.finish();
    assert!(status.success(), "{status}");
    let _ = second.finish();

    // Another user reaches the same socket: closed unread, nothing proposed.
    let pending_before = pending_count(&h).await;
    assert_eq!(pending_before, 2, "the agent's two proposals wait");
    let mut stranger = Relay::start(&bin, &other, &socket, "root", base.0.join("other.err"));
    stranger.send(
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "stranger", "version": "0"}}}),
    );
    stranger.send(&propose_call(1, "from-another-user"));
    assert!(
        stranger.response(0).is_none(),
        "another user's connection gets no answer"
    );
    let _ = stranger.finish();
    assert_eq!(
        pending_count(&h).await,
        pending_before,
        "nothing was proposed"
    );
    let head_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        head_log.contains("refused an MCP connection from another user")
            && head_log.contains(&format!("uid={}", uid_of(&other))),
        "{head_log}"
    );

    // Another user serves a socket where the agent was told to connect:
    // the relay sends it nothing and says why.
    let squat_dir = base.0.join("squat");
    std::fs::create_dir(&squat_dir).unwrap();
    chown(&squat_dir, &other);
    let squat = squat_dir.join("mcp.sock");
    let received = squat_dir.join("received");
    let mut squatter = Command::new("runuser")
        .args(["-u", &other, "--", "python3", "-c", SQUATTER])
        .arg(&squat)
        .arg(&received)
        .spawn()
        .unwrap();
    wait_for_file(&squat, &mut squatter);
    let mut relay = Relay::start(&bin, &agent, &squat, "root", base.0.join("squat.err"));
    relay.send(&propose_call(1, "to-the-squatter"));
    let (status, stderr) = relay.finish();
    assert!(!status.success(), "{status}");
    assert!(
        stderr.contains(&format!(
            "is served by uid {}, not by root (uid 0); nothing was sent",
            uid_of(&other)
        )),
        "{stderr}"
    );
    let start = Instant::now();
    while squatter.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the squatter waits on"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&received)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    assert!(
        bytes.is_empty(),
        "the squatter received {} bytes",
        bytes.len()
    );
    drop(processes);
    drop(users);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unix_socket_needs_its_client_user_and_a_tcp_address_takes_none() {
    let h = Harness::start().await;
    let refused = h.cli(&["mcp", "--listen", "unix:/tmp/x.sock"]).await;
    assert_eq!(
        error_of(&refused),
        "--listen unix:PATH needs --client-user USER: the only OS user whose connections are served"
    );
    let refused = h
        .cli(&["mcp", "--listen", "127.0.0.1:0", "--client-user", "nobody"])
        .await;
    assert!(
        error_of(&refused).starts_with("--client-user goes with --listen unix:PATH"),
        "{}",
        error_of(&refused)
    );
    // Not where another user could replace the socket (/tmp is 1777).
    let refused = h
        .cli(&[
            "mcp",
            "--listen",
            "unix:/tmp/countersign-mcp-test.sock",
            "--client-user",
            "root",
        ])
        .await;
    assert!(
        error_of(&refused).starts_with("/tmp can be written by other users (mode 1777)"),
        "{}",
        error_of(&refused)
    );
    assert!(!std::path::Path::new("/tmp/countersign-mcp-test.sock").exists());
    let refused =
        countersign::Cli::try_parse_from(["countersign", "mcp", "--listen", "unix:relative.sock"])
            .unwrap_err()
            .to_string();
    assert!(
        refused.contains("unix:relative.sock is not an absolute path"),
        "{refused}"
    );
    let refused =
        countersign::Cli::try_parse_from(["countersign", "mcp", "--connect", "unix:/tmp/x.sock"])
            .unwrap_err()
            .to_string();
    assert!(refused.contains("--server-user"), "{refused}");
}

fn error_of(run: &support::Run) -> String {
    run.result.as_ref().unwrap_err().to_string()
}

/// A server on a Unix socket, as another user: it records what it receives
/// on the first connection, then exits.
const SQUATTER: &str = r"
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o666)
s.listen(1)
c, _ = s.accept()
data = b''
while True:
    chunk = c.recv(65536)
    if not chunk:
        break
    data += chunk
open(out, 'wb').write(data)
";

fn chown(path: &Path, user: &str) {
    let out = Command::new("chown").arg(user).arg(path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

async fn pending_count(h: &Harness) -> usize {
    h.cli(&["--json", "pending"])
        .await
        .json()
        .as_array()
        .expect("a list")
        .len()
}
