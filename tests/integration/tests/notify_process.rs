//! Notification delivery is not the signer's: the real `countersign-signer`
//! binary, configured with a `[notify]` webhook to a receiver in this test,
//! records a waiting proposal and sends nothing (the receiver sees no
//! connection in a window many times what delivery takes), and
//! `countersign notify status` shows it waiting in the signer's outbox.
//! Then `countersign notify serve` (its own process, with the notifier
//! certificate) delivers it exactly once, and the receiver finds, through
//! /proc, that the connection it accepted belongs to that process, not to
//! the signer's.
//!
//! Before the notify process existed, the signer POSTed the notification
//! itself within milliseconds of the proposal, and this test failed at its
//! first assertion.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod notify_support;

use countersign_integration_tests::bin;
use notify_support::{SECRET, request_complete};
const ARGS: &str = r#"{"name":"nightly","cron":"0 3 * * *"}"#;

/// A child process killed (and reaped) on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request the receiver accepted: which process had the other end of
/// the connection, and what it sent.
#[derive(Debug, Clone)]
struct Accepted {
    pid: Option<u32>,
    request: String,
}

/// The inode of the TCP socket whose local end is 127.0.0.1:`local` and
/// remote end 127.0.0.1:`remote`, from /proc/net/tcp.
fn socket_inode(local: u16, remote: u16) -> Option<u64> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let port_of = |field: &str| {
        field
            .split(':')
            .nth(1)
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
    };
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() > 9
            && port_of(fields[1]) == Some(local)
            && port_of(fields[2]) == Some(remote))
        .then(|| fields[9].parse().ok())
        .flatten()
    })
}

/// The process holding the socket `inode` open, from /proc/<pid>/fd.
fn owner_of(inode: u64) -> Option<u32> {
    let wanted = format!("socket:[{inode}]");
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let fds = std::fs::read_dir(entry.path().join("fd")).ok()?;
        fds.filter_map(Result::ok)
            .any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|target| target.to_string_lossy() == wanted)
            })
            .then_some(pid)
    })
}

/// A plain HTTP receiver on 127.0.0.1 that answers 204 to every request,
/// after looking up the process at the other end of each connection.
fn start_receiver() -> (u16, Arc<Mutex<Vec<Accepted>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            // The client waits for the answer, so its socket is open now.
            let peer = stream.peer_addr().unwrap().port();
            let pid = socket_inode(peer, port).and_then(owner_of);
            let request = read_request(&mut stream);
            log.lock().unwrap().push(Accepted { pid, request });
            let _ = stream.write_all(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (port, accepted)
}

/// The request's head and body (as much as Content-Length says).
fn read_request(stream: &mut TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
        if request_complete(&request) {
            break;
        }
    }
    String::from_utf8_lossy(&request).to_string()
}

fn countersign(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(bin("countersign"))
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("COUNTERSIGN_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "countersign {args:?}: {out:?}");
    out
}

fn status_json(home: &Path) -> serde_json::Value {
    serde_json::from_slice(&countersign(home, &["--json", "notify", "status"], "").stdout).unwrap()
}

/// Starts `program args`, waiting (at most 30 s) for `ready` on its stderr.
fn start_until(program: &Path, args: &[&str], home: &Path, ready: &str) -> Running {
    let mut child = Command::new(program)
        .args(args)
        .arg("--home")
        .arg(home)
        .env_remove("COUNTERSIGN_HOME")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "{program:?} was not ready");
        match lines.next() {
            Some(Ok(line)) if line.contains(ready) => break,
            Some(Ok(_)) => {}
            _ => panic!("{program:?} exited before it was ready"),
        }
    }
    // Keep draining its log so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Running(child)
}

#[test]
fn the_signer_process_sends_nothing_and_the_notify_process_delivers_once() {
    let (port, accepted) = start_receiver();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    countersign(&home, &["init"], "");
    let secret = dir.path().join("whsec");
    countersign_identity::files::write_private_new(&secret, SECRET.as_bytes()).unwrap();
    let signer_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = home.join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[signer]\naddr = \"127.0.0.1:{signer_port}\"\n[metrics]\nnotify = \"127.0.0.1:{metrics_port}\"\n[notify]\npoll_ms = 50\nretry_initial_ms = 50\n[notify.webhook]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret_file = \"{}\"\n",
        secret.display()
    ));
    std::fs::write(&config, text).unwrap();

    let signer = start_until(
        &bin("countersign-signer"),
        &["serve"],
        &home,
        "countersign-signer listening on",
    );
    let proposed: serde_json::Value = serde_json::from_slice(
        &countersign(
            &home,
            &["--json", "propose", "schedule.create", "--args-file", "-"],
            ARGS,
        )
        .stdout,
    )
    .unwrap();
    let id = proposed["id"].as_str().unwrap().to_owned();

    // The signer has the notification and sends nothing: no connection in
    // 3 s, where the notify process delivers within a poll (50 ms).
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        accepted.lock().unwrap().is_empty(),
        "the signer's process connected to the receiver: {:?}",
        accepted.lock().unwrap()
    );
    let waiting = status_json(&home);
    assert_eq!(waiting["enabled"], true, "{waiting}");
    assert_eq!(waiting["waiting"], 1, "{waiting}");
    assert_eq!(waiting["channels"][0]["channel"], "webhook", "{waiting}");
    assert_eq!(waiting["channels"][0]["delivered"], 0, "{waiting}");
    assert_eq!(waiting["channels"][0]["pending"], 0, "{waiting}");

    let notify = start_until(
        &bin("countersign"),
        &["notify", "serve"],
        &home,
        "delivering the signer's notifications",
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while accepted.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "nothing was delivered");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Exactly one delivery: nothing more in the next second.
    std::thread::sleep(Duration::from_secs(1));
    let received = accepted.lock().unwrap().clone();
    let [one] = received.as_slice() else {
        panic!("{received:?}")
    };
    assert!(one.request.contains(&id), "{}", one.request);
    assert!(!one.request.contains("v4.public."), "{}", one.request);
    assert_eq!(
        one.pid,
        Some(notify.0.id()),
        "the connection is the notify process's (the signer is {})",
        signer.0.id()
    );

    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = status_json(&home);
        if status["channels"][0]["delivered"] == 1 && status["waiting"] == 0 {
            assert_eq!(
                status["channels"][0]["deliveries"][0]["proposal_id"],
                id.as_str()
            );
            break;
        }
        assert!(Instant::now() < deadline, "{status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The notify process counts what it took and each attempt, served at
    // `[metrics] notify`.
    let mut scrape = TcpStream::connect(("127.0.0.1", metrics_port)).unwrap();
    scrape
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut metrics = String::new();
    scrape.read_to_string(&mut metrics).unwrap();
    for line in [
        "countersign_notifications_taken_total 1",
        "countersign_notification_attempts_total{channel=\"webhook\",result=\"delivered\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    drop(notify);
    drop(signer);
}

/// The VAPID key is the notify process's alone: another OS user on the
/// same host reads neither it nor anything of the home, even with every
/// directory above the home open to it (`countersign init` made the key;
/// a real `useradd` user tries with `runuser`). Needs root.
#[test]
fn another_os_user_cannot_read_the_vapid_key() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: needs root to create a second OS user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The other user may walk down to the home, as to a home under /home.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = dir.path().join("home");
    countersign(&home, &["init"], "");
    let key = home.join("notify").join("vapid.key");
    assert!(key.is_file(), "init makes the VAPID key");
    let user = format!(
        "cs-other-{}",
        std::process::id() ^ (std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos())
    );
    let made = Command::new("useradd")
        .args(["--user-group", "--shell", "/bin/sh", &user])
        .output()
        .unwrap();
    assert!(made.status.success(), "useradd: {made:?}");
    let read = Command::new("runuser")
        .args(["-u", &user, "--", "cat"])
        .arg(&key)
        .output()
        .unwrap();
    let _ = Command::new("userdel").args(["-r", &user]).output();
    assert!(!read.status.success(), "{read:?}");
    assert!(read.stdout.is_empty(), "{read:?}");
    assert!(
        String::from_utf8_lossy(&read.stderr).contains("Permission denied"),
        "{read:?}"
    );
    // Its owner reads it: the refusal is the other user's.
    assert!(
        std::fs::read_to_string(&key)
            .unwrap()
            .contains("PRIVATE KEY")
    );
}
