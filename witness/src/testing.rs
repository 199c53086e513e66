//! Test support (cargo feature `testing`): a real c2sp.org/tlog-witness
//! nobody here wrote, aics-witness from PyPI, which scripts/test installs
//! into `tests/witness/venv` (see tests/witness/requirements.txt), started
//! on a free loopback port and trusting one log. For this crate's tests and
//! the end-to-end tests; not for production use.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use countersign_tlog::VerifierKey;

/// Where scripts/test installs aics-witness (or `$COUNTERSIGN_TEST_WITNESS`).
pub fn aics_witness_program() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("COUNTERSIGN_TEST_WITNESS") {
        return Some(PathBuf::from(path));
    }
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/witness/venv/bin/aics-witness");
    path.exists().then_some(path)
}

/// A running aics-witness; killed when dropped.
#[derive(Debug)]
pub struct AicsWitness {
    /// Its cosignature key.
    pub key: VerifierKey,
    /// Its submission prefix, `http://127.0.0.1:<port>`.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl AicsWitness {
    /// Starts a witness named `name` that trusts the log of `log_key`
    /// (whose name is the log's origin). `None`, after printing SKIPPED,
    /// when aics-witness is not installed outside CI; in CI (`$CI` set)
    /// its absence panics.
    ///
    /// # Panics
    /// If it is missing in CI, or does not start and listen within 10 s.
    pub fn start(name: &str, log_key: &VerifierKey) -> Option<AicsWitness> {
        let Some(program) = aics_witness_program() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "aics-witness is not installed: scripts/test installs it into tests/witness/venv"
            );
            eprintln!("SKIPPED: aics-witness is not installed (scripts/test installs it)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let config = dir.path().join("witness.json");
        let run = |args: &[&str]| {
            let out = Command::new(&program)
                .args(args)
                .env("AICS_WITNESS_CONFIG", &config)
                .output()
                .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
            assert!(out.status.success(), "aics-witness {args:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let printed = run(&["init", "--name", name]);
        let key: VerifierKey = printed
            .lines()
            .find_map(|l| l.trim().parse().ok())
            .unwrap_or_else(|| panic!("no vkey in {printed:?}"));
        run(&[
            "add-log",
            "--origin",
            log_key.name().as_str(),
            "--vkey",
            &log_key.to_string(),
        ]);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap_or_else(|e| panic!("free port: {e}"))
            .port();
        let mut child = Command::new(&program)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .env("AICS_WITNESS_CONFIG", &config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(AicsWitness {
                    key,
                    url: format!("http://127.0.0.1:{port}"),
                    child,
                    _dir: dir,
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("aics-witness did not listen on {port}");
    }
}

impl Drop for AicsWitness {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
