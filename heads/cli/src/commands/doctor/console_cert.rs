//! The console certificate check: the certificate the console serves (the
//! operator's `[console] cert`, or the installation's `pki/console.pem`)
//! names every configured console name and is valid now, so that a
//! browser on another device opening any of the names is not refused.
//! An operator's certificate that does not fails (the console would serve
//! it as it is); the installation's own warns, since the console issues it
//! again for its names when it starts.

use countersign_identity::console_pki::{ca_problem, serving_problem};
use countersign_identity::{Config, Home};

use super::report::Check;

const NAME: &str = "console certificate";

/// The console certificate check.
pub(super) fn check_console_cert(home: &Home, config: &Config) -> Check {
    let Some(console) = &config.console else {
        return Check::ok(NAME, "no [console] configured");
    };
    let (path, own) = match &console.own_cert {
        Some((cert, _)) => (cert.clone(), true),
        None => (home.console_cert_path(), false),
    };
    let pem = match std::fs::read_to_string(&path) {
        Ok(pem) => pem,
        Err(e) if !own && e.kind() == std::io::ErrorKind::NotFound => {
            return Check::ok(
                NAME,
                format!("{} is made when the console first starts", path.display()),
            );
        }
        Err(e) => {
            return Check::fail(
                NAME,
                format!("cannot read {}: {e}", path.display()),
                "fix [console] cert in config.toml",
            );
        }
    };
    let names = console.names.join(", ");
    // The installation's CA must be able to vouch for every name, or the
    // console cannot issue its certificate again and refuses to start.
    if !own {
        match ca_problem(home, &console.names) {
            Ok(None) => {}
            Ok(Some(problem)) => {
                return Check::fail(
                    NAME,
                    format!("{problem}: the console refuses to start with these names"),
                    "make a new console CA with `countersign console trust --new-ca`, restart the console, and trust the new CA where the old one was",
                );
            }
            Err(e) => {
                return Check::fail(
                    NAME,
                    format!("the console CA: {e}"),
                    "replace pki/console-ca.pem with the console CA's PEM certificate",
                );
            }
        }
    }
    match serving_problem(&pem, &console.names, time::OffsetDateTime::now_utc()) {
        Ok(None) => Check::ok(
            NAME,
            format!("{} serves every console name ({names})", path.display()),
        ),
        Ok(Some(problem)) if own => Check::fail(
            NAME,
            format!(
                "{} cannot serve the console's names ({names}): {problem}; a browser opening such a name refuses it",
                path.display()
            ),
            "give [console] cert a certificate for every name of [console] names, or remove the names it lacks",
        ),
        Ok(Some(problem)) => Check::warn(
            NAME,
            format!(
                "{} does not serve the console's names ({names}) now: {problem}",
                path.display()
            ),
            Some("restart the console: it issues its certificate again for its names".into()),
        ),
        Err(e) => Check::fail(
            NAME,
            format!("{}: {e}", path.display()),
            "replace it with the PEM certificate for the console's names",
        ),
    }
}
