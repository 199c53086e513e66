//! Test support: the real MCP servers installed by `npm ci --prefix
//! tests/mcp-servers` (from the npm registry, written by the MCP project),
//! run through `node`; a gateway file naming them; finding a child by its
//! command line.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use countersign_gateway::{CallFailure, Upstreams};
use countersign_registry::gateway::GatewayFile;

/// `node`, found on `PATH`.
pub fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("node is not on PATH (the MCP server tests need Node 20+)"))
}

/// The entry point of the npm package `@modelcontextprotocol/<package>`.
pub fn server(package: &str) -> PathBuf {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp-servers/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        entry.is_file(),
        "{} is missing: run `npm ci --prefix tests/mcp-servers`",
        entry.display()
    );
    entry
}

/// A TOML string literal.
pub fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Parses a `gateway.toml`.
pub fn gateway(toml: &str) -> GatewayFile {
    GatewayFile::parse(toml).unwrap_or_else(|e| panic!("gateway.toml: {e}\n{toml}"))
}

/// A stdio upstream block running `node <package entry> <args...>`.
pub fn stdio_upstream(name: &str, package: &str, args: &[&str], extra: &str) -> String {
    let mut all = vec![quoted(&server(package).display().to_string())];
    all.extend(args.iter().map(|a| quoted(a)));
    format!(
        "[[upstream]]\nname = \"{name}\"\n[upstream.stdio]\nprogram = {}\nargs = [{}]\n{extra}\n",
        quoted(&node().display().to_string()),
        all.join(", ")
    )
}

/// The pids of processes whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            pids.push(pid);
        }
    }
    pids
}

/// Calls until the call succeeds or `within` passes; the last failure
/// panics.
pub async fn call_until_ok(
    upstreams: &Upstreams,
    upstream: &str,
    tool: &str,
    arguments: serde_json::Value,
    within: Duration,
) -> serde_json::Value {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let arguments = arguments.as_object().cloned().unwrap_or_default();
        let result = upstreams
            .call(upstream, tool, arguments, Duration::from_secs(10))
            .await;
        match result {
            Ok(value) => return value,
            Err(failure) if tokio::time::Instant::now() >= deadline => {
                panic!("{upstream}/{tool} still fails: {failure:?}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// The text of a tool result's first content item.
pub fn text_of(result: &serde_json::Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {result}"))
}

/// Asserts a failure is `Unanswered`.
pub fn assert_unanswered(result: Result<serde_json::Value, CallFailure>) {
    match result {
        Err(CallFailure::Unanswered(_)) => {}
        other => panic!("expected Unanswered, got {other:?}"),
    }
}

/// server-everything over streamable HTTP; killed when dropped.
pub struct EverythingHttp {
    child: std::process::Child,
    /// Its loopback port.
    pub port: u16,
}

impl EverythingHttp {
    pub async fn start() -> EverythingHttp {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap_or_else(|e| panic!("free port: {e}"));
        let child = std::process::Command::new(node())
            .arg(server("server-everything"))
            .arg("streamableHttp")
            .env_clear()
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("node: {e}"));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "server-everything did not listen"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        EverythingHttp { child, port }
    }

    pub fn upstream(&self, extra: &str) -> String {
        format!(
            "[[upstream]]\nname = \"web\"\n[upstream.http]\nurl = \"http://127.0.0.1:{}/mcp\"\n{extra}\n",
            self.port
        )
    }
}

impl Drop for EverythingHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a front the test puts before an upstream saw: connections,
/// bytes, and the `Authorization` header of every request.
#[derive(Default)]
pub struct Seen {
    pub connections: usize,
    pub bytes: usize,
    pub authorizations: Vec<String>,
}

/// Relays `client` (a TLS or Unix stream the front accepted) to
/// 127.0.0.1:`backend`, recording into `log` what the client sends.
pub async fn relay<S>(client: S, backend: u16, log: std::sync::Arc<std::sync::Mutex<Seen>>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let Ok(upstream) = tokio::net::TcpStream::connect(("127.0.0.1", backend)).await else {
        return;
    };
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = upstream.into_split();
    let up = async {
        let mut buf = vec![0u8; 65536];
        loop {
            let n = client_read.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&buf[..n]).to_string();
            {
                let mut seen = log.lock().unwrap_or_else(|e| e.into_inner());
                seen.bytes += n;
                for line in text.lines() {
                    if line.to_ascii_lowercase().starts_with("authorization:") {
                        let value = line.split_once(':').map(|(_, v)| v.trim().to_owned());
                        seen.authorizations.extend(value);
                    }
                }
            }
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async {
        let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
    };
    tokio::join!(up, down);
}

/// `text` in a new file `name` of `dir`, mode 0600; its path.
pub fn private_file(dir: &Path, name: &str, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{name}: {e}"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("{e}"));
    path.display().to_string()
}
