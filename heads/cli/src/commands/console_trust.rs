//! `countersign console trust`: how a person's browser comes to trust the
//! console, once.
//!
//! The console CA is name-constrained (`countersign_identity::console_pki`):
//! trusting it lets it vouch for the console's names and nothing else.
//! This command shows its fingerprint and the steps, or imports it into
//! the invoking user's NSS databases with `certutil` (Chromium reads
//! `~/.pki/nssdb` on Linux; each Firefox profile has its own), as mkcert
//! does. It never imports into a system store, and runs no shell.

use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_identity::console_pki::fingerprint_sha256;
use serde_json::json;

use crate::Io;
use crate::args::TrustArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// The nickname the CA gets in an NSS database.
const NICKNAME: &str = "countersign console CA";

/// `countersign console trust [--import | --pem] [--ca FILE] | --new-ca`
pub(crate) fn trust(
    ctx: Option<&Context>,
    args: &TrustArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    if args.new_ca {
        let ctx = ctx.ok_or_else(|| {
            CliError::Error("no countersign home: --new-ca replaces a home's console CA".into())
        })?;
        return new_ca(ctx, json, io);
    }
    let path = match (&args.ca, ctx) {
        (Some(path), _) => path.clone(),
        (None, None) => {
            return Err(CliError::Error(
                "no console CA: pass --ca FILE or a countersign home".into(),
            ));
        }
        (None, Some(ctx)) => {
            let console = super::console::console_config(ctx, None)?;
            if console.own_cert.is_some() {
                return Err(CliError::Refused(
                    "this console serves the operator's own certificate ([console] cert): trust the CA that issued it, or pass it with --ca FILE".into(),
                ));
            }
            // Make sure the CA exists (a home from before the console CA).
            countersign_identity::console_pki::ensure_console_cert(&ctx.home, &console.names)
                .map_err(|e| CliError::Error(format!("console certificate: {e}")))?;
            ctx.home.console_ca_cert_path()
        }
    };
    let pem = std::fs::read_to_string(&path)
        .map_err(|e| CliError::Error(format!("cannot read {}: {e}", path.display())))?;
    let fingerprint = fingerprint_sha256(&pem).map_err(CliError::error)?;
    if args.pem {
        return write_text(io.out, &pem);
    }
    if args.import {
        let imported = import(&path)?;
        let listed: Vec<String> = imported.iter().map(|p| p.display().to_string()).collect();
        if json {
            return write_json(
                io.out,
                &json!({"ca": path.display().to_string(), "sha256": fingerprint, "imported_into": listed}),
            );
        }
        let mut text = format!(
            "imported {} (SHA-256 {fingerprint}) into:\n",
            path.display()
        );
        for db in &listed {
            text.push_str(&format!("  {db}\n"));
        }
        text.push_str("restart the browser, then open the console's link\n");
        return write_text(io.out, &text);
    }
    if json {
        return write_json(
            io.out,
            &json!({"ca": path.display().to_string(), "sha256": fingerprint}),
        );
    }
    write_text(io.out, &steps(&path, &fingerprint))
}

/// `--new-ca`: a new console CA for the configured names, in place of the
/// old one, whose key is deleted.
fn new_ca(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let console = super::console::console_config(ctx, None)?;
    if console.own_cert.is_some() {
        return Err(CliError::Refused(
            "this console serves the operator's own certificate ([console] cert): it has no console CA to replace".into(),
        ));
    }
    let (_, _, retired) =
        countersign_identity::console_pki::replace_console_ca(&ctx.home, &console.names)
            .map_err(|e| CliError::Error(format!("console CA: {e}")))?;
    let path = ctx.home.console_ca_cert_path();
    let pem = std::fs::read_to_string(&path)
        .map_err(|e| CliError::Error(format!("cannot read {}: {e}", path.display())))?;
    let fingerprint = fingerprint_sha256(&pem).map_err(CliError::error)?;
    if json {
        return write_json(
            io.out,
            &json!({
                "ca": path.display().to_string(),
                "sha256": fingerprint,
                "names": console.names,
                "retired": retired.as_ref().map(|r| r.display().to_string()),
            }),
        );
    }
    let mut text = format!(
        "made a new console CA for {}\n{}\nSHA-256 fingerprint: {fingerprint}\n",
        console.names.join(", "),
        path.display()
    );
    if let Some(retired) = &retired {
        text.push_str(&format!(
            "the old CA's certificate is now {} (its key is deleted: it vouches for nothing more)\n",
            retired.display()
        ));
    }
    text.push_str(
        "next: restart the console, remove the old CA from every browser and phone that trusted it, and trust this one there (countersign console trust)\n",
    );
    write_text(io.out, &text)
}

fn steps(path: &Path, fingerprint: &str) -> String {
    let file = path.display();
    format!(
        "The console's CA: {file}
SHA-256 fingerprint: {fingerprint}
It may vouch only for the console's names (X.509 name constraints), so
trusting it trusts nothing else. Trust it once, as the user whose browser
decides:

  countersign console trust --import      (Chromium and Firefox on Linux;
                                           needs certutil: apt install libnss3-tools)
or by hand:
  Chromium: certutil -d sql:$HOME/.pki/nssdb -A -t C,, -n '{NICKNAME}' -i {file}
  Firefox:  Settings > Privacy & Security > Certificates > View Certificates >
            Authorities > Import, choose {file}, tick \"identify websites\"

Before you trust it, check that the fingerprint your browser shows is the
one above. Then restart the browser and open the console's link.
"
    )
}

/// Import the CA at `path` into every NSS database of this user: the
/// shared one Chromium reads (created if missing) and each Firefox
/// profile's. Returns the databases changed.
fn import(path: &Path) -> Result<Vec<PathBuf>, CliError> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute())
        .ok_or_else(|| CliError::Error("HOME is not set to an absolute path".into()))?;
    let mut databases = vec![home.join(".pki/nssdb")];
    for profiles in [".mozilla/firefox", "snap/firefox/common/.mozilla/firefox"] {
        if let Ok(entries) = std::fs::read_dir(home.join(profiles)) {
            for entry in entries.flatten() {
                if entry.path().join("cert9.db").is_file() {
                    databases.push(entry.path());
                }
            }
        }
    }
    let shared = &databases[0];
    if !shared.join("cert9.db").is_file() {
        std::fs::create_dir_all(shared)
            .map_err(|e| CliError::Error(format!("cannot create {}: {e}", shared.display())))?;
        certutil(&["-N", "--empty-password", "-d", &sql(shared)])?;
    }
    let file = path.to_string_lossy().into_owned();
    for db in &databases {
        certutil(&[
            "-A",
            "-d",
            &sql(db),
            "-t",
            "C,,",
            "-n",
            NICKNAME,
            "-i",
            &file,
        ])?;
    }
    Ok(databases)
}

fn sql(db: &Path) -> String {
    format!("sql:{}", db.display())
}

fn certutil(args: &[&str]) -> Result<(), CliError> {
    let output = Command::new("certutil").args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::Error(
                "certutil was not found: install it (Debian and Ubuntu: apt install libnss3-tools), or trust the CA by hand (`countersign console trust` shows how)".into(),
            )
        } else {
            CliError::Error(format!("cannot run certutil: {e}"))
        }
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(CliError::Error(format!(
            "certutil {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
