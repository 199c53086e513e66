//! `countersign console trust`: how a person's browser comes to trust the
//! console, once.
//!
//! The console CA is name-constrained (`countersign_identity::console_pki`):
//! trusting it lets it vouch for the console's names and nothing else.
//! This command shows its fingerprint and the steps, or imports it into
//! the invoking user's NSS databases with `certutil` (Chromium reads
//! `~/.pki/nssdb` on Linux; each Firefox profile has its own), as mkcert
//! does. It never imports into a system store, and runs no shell.
//!
//! An import is refused unless the certificate is a console CA whose name
//! constraints permit just the console's names and exclude every IP
//! address ([`check_console_ca`]): any other root would let whoever holds
//! its key impersonate every site to the person's browser. It is refused
//! too when a database already holds another certificate under the
//! nickname. Then the fingerprint is shown at the controlling terminal
//! and the person types a challenge before anything is imported. `--new-ca`
//! removes the old CA from the databases that hold it under the nickname.

use std::path::{Path, PathBuf};
use std::process::Command;

use countersign_identity::console_pki::{CONSOLE_NAME, fingerprint_sha256};
use countersign_identity::console_trust::check_console_ca;
use serde_json::json;

use super::decide::{Confirmation, confirm};

use crate::Io;
use crate::args::TrustArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// The nickname the CA gets in an NSS database.
const NICKNAME: &str = "countersign console CA";

/// The words of the typed confirmation of an import.
const IMPORT: Confirmation = Confirmation {
    needs: "importing a CA",
    does: "import it",
    done: "imported",
};

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
    let names = console_names(ctx, args)?;
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
        check_console_ca(&pem, &names).map_err(|refusal| {
            CliError::Refused(format!(
                "{} is not a console CA that may be trusted: {refusal}; nothing was imported",
                path.display()
            ))
        })?;
        let databases = databases()?;
        let already = holders_of_nickname(&databases, &fingerprint)?;
        confirm(
            io,
            &format!(
                "Trust this CA in your browsers, for {} only:\n  {}\n  SHA-256 fingerprint: {fingerprint}\nCompare the fingerprint with the one the console shows its administrator (`countersign console trust`).\n",
                names.join(", "),
                path.display()
            ),
            &IMPORT,
        )?;
        let imported = import(&path, &databases, &already)?;
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
    let old_fingerprint = std::fs::read_to_string(ctx.home.console_ca_cert_path())
        .ok()
        .and_then(|pem| fingerprint_sha256(&pem).ok());
    let (_, _, retired) =
        countersign_identity::console_pki::replace_console_ca(&ctx.home, &console.names)
            .map_err(|e| CliError::Error(format!("console CA: {e}")))?;
    let removed = match &old_fingerprint {
        Some(old) => remove_from_databases(old)?,
        None => Vec::new(),
    };
    let removed: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
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
                "removed_from": removed,
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
    if !removed.is_empty() {
        text.push_str("the old CA was removed from:\n");
        for db in &removed {
            text.push_str(&format!("  {db}\n"));
        }
    }
    text.push_str(
        "next: restart the console, remove the old CA from every other browser and phone that trusted it, and trust this one there (countersign console trust)\n",
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

/// The console's names an imported CA may vouch for: `--name`, else this
/// home's `[console] names`, else the default name.
fn console_names(ctx: Option<&Context>, args: &TrustArgs) -> Result<Vec<String>, CliError> {
    if !args.names.is_empty() {
        return Ok(args.names.clone());
    }
    match ctx {
        Some(ctx) => Ok(super::console::console_config(ctx, None)?.names),
        None => Ok(vec![CONSOLE_NAME.to_owned()]),
    }
}

/// Every NSS database of this user: the shared one Chromium reads (first,
/// whether it exists yet or not) and each Firefox profile's.
fn databases() -> Result<Vec<PathBuf>, CliError> {
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
    Ok(databases)
}

/// The certificate `db` holds under [`NICKNAME`], as its SHA-256
/// fingerprint, if any (`None` also when the database does not exist).
fn held_under_nickname(db: &Path) -> Result<Option<String>, CliError> {
    if !db.join("cert9.db").is_file() {
        return Ok(None);
    }
    let Some(pem) = certutil_output(&["-L", "-d", &sql(db), "-n", NICKNAME, "-a"])? else {
        return Ok(None);
    };
    fingerprint_sha256(&pem).map(Some).map_err(|e| {
        CliError::Error(format!(
            "{}: the certificate named {NICKNAME:?} does not read: {e}",
            db.display()
        ))
    })
}

/// The databases that already hold the CA of `fingerprint` under the
/// nickname; refused, before anything is imported, if one holds another.
fn holders_of_nickname(databases: &[PathBuf], fingerprint: &str) -> Result<Vec<PathBuf>, CliError> {
    let mut holding = Vec::new();
    for db in databases {
        match held_under_nickname(db)? {
            None => {}
            Some(held) if held == fingerprint => holding.push(db.clone()),
            Some(other) => {
                return Err(CliError::Refused(format!(
                    "the NSS database {} already holds another certificate as {NICKNAME:?} (SHA-256 {other}); nothing was imported. If it is a console CA you no longer trust, remove it (certutil -D -d {} -n '{NICKNAME}') and import again",
                    db.display(),
                    sql(db)
                )));
            }
        }
    }
    Ok(holding)
}

/// Import the CA at `path` into `databases` but those in `already`
/// (which hold it), creating the shared one if missing. Returns the
/// databases that trust it now.
fn import(
    path: &Path,
    databases: &[PathBuf],
    already: &[PathBuf],
) -> Result<Vec<PathBuf>, CliError> {
    let shared = databases
        .first()
        .ok_or_else(|| CliError::Error("no NSS database".into()))?;
    if !shared.join("cert9.db").is_file() {
        std::fs::create_dir_all(shared)
            .map_err(|e| CliError::Error(format!("cannot create {}: {e}", shared.display())))?;
        certutil(&["-N", "--empty-password", "-d", &sql(shared)])?;
    }
    let file = path.to_string_lossy().into_owned();
    for db in databases.iter().filter(|db| !already.contains(db)) {
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
    Ok(databases.to_vec())
}

/// Removes the CA of `fingerprint` from every database of this user that
/// holds it under the nickname (where `--import` put it); another
/// certificate under the nickname is left alone. Returns the databases
/// it was removed from; none when `certutil` is not installed (then
/// nothing was imported with it).
fn remove_from_databases(fingerprint: &str) -> Result<Vec<PathBuf>, CliError> {
    let mut removed = Vec::new();
    for db in databases()? {
        let held = match held_under_nickname(&db) {
            Ok(held) => held,
            Err(CliError::Error(e)) if e.starts_with("certutil was not found") => {
                return Ok(removed);
            }
            Err(e) => return Err(e),
        };
        if held.as_deref() == Some(fingerprint) {
            certutil(&["-D", "-d", &sql(&db), "-n", NICKNAME])?;
            removed.push(db);
        }
    }
    Ok(removed)
}

fn sql(db: &Path) -> String {
    format!("sql:{}", db.display())
}

fn certutil(args: &[&str]) -> Result<(), CliError> {
    let output = run_certutil(args)?;
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

/// What `certutil args` printed, or `None` if it failed (a nickname the
/// database does not hold).
fn certutil_output(args: &[&str]) -> Result<Option<String>, CliError> {
    let output = run_certutil(args)?;
    Ok(output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned()))
}

fn run_certutil(args: &[&str]) -> Result<std::process::Output, CliError> {
    Command::new("certutil").args(args).output().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            CliError::Error(
                "certutil was not found: install it (Debian and Ubuntu: apt install libnss3-tools), or trust the CA by hand (`countersign console trust` shows how)".into(),
            )
        } else {
            CliError::Error(format!("cannot run certutil: {e}"))
        }
    })
}
