//! The processes the latency section drives, and its clients of them: the
//! `countersign` binary run once per command, `countersign api serve` over
//! one kept HTTP/1.1 connection (hyper, TCP_NODELAY), and `countersign mcp`
//! over its stdio (newline-delimited JSON-RPC, as an MCP client drives it).
//!
//! Every child is started with `kill_on_drop`, so a failed run leaves no
//! process behind; errors are strings that say what to do.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The `countersign` binary and the home every command runs against.
pub(crate) struct Cli {
    bin: PathBuf,
    home: String,
}

/// Where the workspace binaries of this profile are: beside the `deps/`
/// directory that holds this bench (`target/release/` for `cargo bench`),
/// or `$COUNTERSIGN_BIN_DIR`.
pub(crate) fn binary(name: &str) -> Result<PathBuf, String> {
    let dir = match std::env::var_os("COUNTERSIGN_BIN_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
            exe.parent()
                .and_then(Path::parent)
                .ok_or_else(|| format!("{} is not under target/<profile>/deps", exe.display()))?
                .to_path_buf()
        }
    };
    let path = dir.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} is not built: run `cargo build --release --bins` first \
             (or point COUNTERSIGN_BIN_DIR at a directory holding it)",
            path.display()
        ))
    }
}

impl Cli {
    pub(crate) fn new(bin: PathBuf, home: &Path) -> Cli {
        Cli {
            bin,
            home: home.display().to_string(),
        }
    }

    /// A command of this home, with no session or home from the caller's
    /// environment.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .arg("--home")
            .arg(&self.home)
            .args(args)
            .env_remove("COUNTERSIGN_SESSION")
            .env_remove("COUNTERSIGN_HOME")
            .env_remove("COUNTERSIGN_LOG")
            .kill_on_drop(true);
        command
    }

    /// Run `countersign --home HOME ARGS` with `stdin`; the wall time from
    /// spawn to exit, and stdout. A failed command is an error with its
    /// stderr.
    pub(crate) async fn run(
        &self,
        args: &[&str],
        stdin: &str,
    ) -> Result<(Duration, String), String> {
        let start = Instant::now();
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let mut input = child.stdin.take().ok_or("no stdin")?;
        if !stdin.is_empty() {
            input
                .write_all(stdin.as_bytes())
                .await
                .map_err(|e| format!("stdin: {e}"))?;
        }
        drop(input);
        let output = child
            .wait_with_output()
            .await
            .map_err(|e| format!("countersign {}: {e}", args.join(" ")))?;
        let took = start.elapsed();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            return Err(format!(
                "countersign {} exited with {}: {}{}",
                args.join(" "),
                output.status,
                stdout,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok((took, stdout))
    }

    /// Start `countersign api serve` on an ephemeral loopback port; the
    /// child and the address it says it listens on.
    pub(crate) async fn api_serve(&self) -> Result<(Child, SocketAddr), String> {
        let mut child = self
            .command(&["api", "serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let mut stderr = BufReader::new(child.stderr.take().ok_or("no stderr")?).lines();
        let addr = tokio::time::timeout(Duration::from_secs(30), async {
            let mut seen = String::new();
            loop {
                let Some(line) = stderr.next_line().await.map_err(|e| e.to_string())? else {
                    return Err(format!("countersign api serve exited: {seen}"));
                };
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let addr = rest.split_whitespace().next().unwrap_or_default();
                    return addr
                        .parse::<SocketAddr>()
                        .map_err(|e| format!("{line}: {e}"));
                }
                seen.push_str(&line);
                seen.push('\n');
            }
        })
        .await
        .map_err(|_| "countersign api serve did not say where it listens within 30 s")??;
        // Keep draining its log so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = stderr.next_line().await {} });
        Ok((child, addr))
    }

    /// Start `countersign mcp` and complete the MCP handshake.
    pub(crate) async fn mcp(&self) -> Result<Mcp, String> {
        Mcp::start(self.command(&["mcp"])).await
    }
}

impl Mcp {
    /// Start `command` as an MCP server on its stdio and complete the MCP
    /// handshake.
    pub(crate) async fn start(mut command: Command) -> Result<Mcp, String> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let mut mcp = Mcp {
            child,
            stdin: Some(stdin),
            lines,
            next_id: 1,
        };
        mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "countersign-bench", "version": "0"}}),
        )
        .await?;
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(mcp)
    }
}

/// A running MCP server (`countersign mcp`, or an upstream one), driven
/// over its stdio.
pub(crate) struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Mcp {
    async fn send(&mut self, message: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .await
            .map_err(|e| format!("countersign mcp stdin: {e}"))?;
        stdin.flush().await.map_err(|e| e.to_string())
    }

    /// One JSON-RPC request; its `result`.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .map_err(|_| format!("countersign mcp did not answer {method} within 30 s"))?
                .map_err(|e| e.to_string())?
                .ok_or("countersign mcp exited")?;
            let message: Value = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
            if message["id"] == id {
                return message
                    .get("result")
                    .cloned()
                    .ok_or_else(|| format!("{method}: {message}"));
            }
        }
    }

    /// `tools/call` of `tool`; its structured content, which must not be
    /// an error.
    pub(crate) async fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, String> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        if result["isError"] == true {
            return Err(format!("{tool}: {result}"));
        }
        Ok(result["structuredContent"].clone())
    }

    /// `tools/list`: the tools' count.
    pub(crate) async fn list_tools(&mut self) -> Result<usize, String> {
        let result = self.request("tools/list", json!({})).await?;
        Ok(result["tools"].as_array().map_or(0, Vec::len))
    }

    /// `tools/call` of `tool`; the whole result, which must not be an error.
    pub(crate) async fn call_result(
        &mut self,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, String> {
        let result = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await?;
        if result["isError"] == true {
            return Err(format!("{tool}: {result}"));
        }
        Ok(result)
    }

    /// Hang up and wait for it to finish (it drains its executions), or
    /// kill it after 10 s.
    pub(crate) async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// One kept HTTP/1.1 connection to the API head, with a bearer token.
pub(crate) struct Http {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: String,
    authorization: String,
}

impl Http {
    pub(crate) async fn connect(addr: SocketAddr, token: &str) -> Result<Http, String> {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .map_err(|e| format!("HTTP handshake: {e}"))?;
        tokio::spawn(connection);
        Ok(Http {
            sender,
            host: addr.to_string(),
            authorization: format!("Bearer {token}"),
        })
    }

    /// POST `body` to `path` on the kept connection; the JSON answer, which
    /// must be 200.
    pub(crate) async fn post(&mut self, path: &str, body: String) -> Result<Value, String> {
        use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST};
        let request = hyper::Request::post(path)
            .header(HOST, &self.host)
            .header(AUTHORIZATION, &self.authorization)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        self.sender
            .ready()
            .await
            .map_err(|e| format!("the API connection closed: {e}"))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| format!("POST {path}: {e}"))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("POST {path}: {e}"))?
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes);
        if status != hyper::StatusCode::OK {
            return Err(format!("POST {path}: {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("POST {path}: {e}: {text}"))
    }
}
