//! `credential create`: issue a named approver credential for a trusted
//! interface from the installation's CA. The certificate, key and CA are
//! written by `countersign_identity::pki::export_named_approver`; this module
//! parses nothing more and only renders what was written. It never prints
//! the key.

use countersign_identity::IdentityError;
use countersign_identity::pki::export_named_approver;
use serde_json::json;

use crate::Io;
use crate::args::CredentialCreateArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// `countersign credential create --approver NAME --out-dir DIR`
pub(crate) fn create(
    ctx: &Context,
    args: CredentialCreateArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let export =
        export_named_approver(&ctx.home, &args.approver, &args.out_dir).map_err(|e| match e {
            IdentityError::Missing(_)
            | IdentityError::NotADirectory(_)
            | IdentityError::AlreadyExists(_) => CliError::Refused(e.to_string()),
            other => CliError::error(other),
        })?;
    let provenance = format!("human:cert:{}/{}", ctx.principal, args.approver);
    if json {
        return write_json(
            io.out,
            &json!({
                "approver": args.approver.as_str(),
                "uri": export.uri,
                "provenance": provenance,
                "certificate": export.cert.display().to_string(),
                "key": export.key.display().to_string(),
                "ca": export.ca.display().to_string(),
                "ca_written": export.ca_written,
            }),
        );
    }
    let ca = if export.ca_written {
        "wrote"
    } else {
        "kept (identical)"
    };
    write_text(
        io.out,
        &format!(
            "issued approver credential {uri}\n\
             wrote {cert}\n\
             wrote {key} (private key, mode 0600)\n\
             {ca} {ca_path}\n\
             decisions made with it are recorded as {provenance}\n\
             whoever can read the key can approve: keep it away from the agent's user\n",
            uri = export.uri,
            cert = export.cert.display(),
            key = export.key.display(),
            ca_path = export.ca.display(),
        ),
    )
}
