//! The `pin` effect of `gateway.pin`: the tool definitions a person
//! accepted are written into the pins file beside the registry file this
//! head follows, between the intent and the completion transactions.
//!
//! The file is replaced whole under its lock (read as it is now, changed,
//! written beside and renamed over, mode 0600), so another pinning made
//! meanwhile is kept and a reader sees the old or the new file, never a
//! part. An acceptance applies only while each tool is still pinned as it
//! was when proposed (`Pins::accept`); otherwise it failed and nothing was
//! pinned. Writing the same acceptance again changes nothing, so reconcile
//! replays an interrupted one.

use std::path::PathBuf;

use countersign_identity::IdentityError;
use countersign_identity::files::replace_private_locked;
use countersign_ledger::{EffectOutcome, Intent};
use countersign_registry::effect::{EffectKind, PinTools};
use countersign_registry::gateway::{Pins, pin_requests};
use serde_json::{Value, json};

use super::{Apply, Approved, Ran, Replay, Running};
use crate::execute::{Gate, GateError};
use crate::outcome::Outcome;
use crate::reconcile::Replayed;

/// The pins file this head writes.
pub(super) struct PinWrite {
    pub(super) path: PathBuf,
}

/// Why the pins file was not replaced.
struct NotPinned(String);

impl From<IdentityError> for NotPinned {
    fn from(e: IdentityError) -> Self {
        NotPinned(e.to_string())
    }
}

impl PinWrite {
    /// Pin the definitions in the intent's arguments (as recorded from the
    /// verified claims): applied, with each tool's digest, or failed with
    /// nothing pinned.
    async fn run(&self, intent: &Intent) -> Result<EffectOutcome, GateError> {
        let path = self.path.clone();
        let arguments = intent.arguments_json().to_owned();
        let written = tokio::task::spawn_blocking(move || pin(&path, &arguments))
            .await
            .map_err(|e| GateError::Effect(format!("the pins file writer stopped: {e}")))?;
        Ok(match written {
            Ok(result) => EffectOutcome::Applied { result },
            Err(NotPinned(error)) => EffectOutcome::Failed {
                error,
                result: Value::Null,
            },
        })
    }
}

/// Pins what `arguments` carry in the file at `path`, under its lock.
fn pin(path: &std::path::Path, arguments: &str) -> Result<Value, NotPinned> {
    let value: Value = serde_json::from_str(arguments).map_err(|e| NotPinned(e.to_string()))?;
    let requests = pin_requests(&value).map_err(NotPinned)?;
    let name = path
        .file_name()
        .map_or_else(|| "pins".into(), |n| n.to_string_lossy().into_owned());
    let lock = path.with_file_name(format!(".{name}.lock"));
    let mut accepted = Vec::new();
    replace_private_locked(path, &lock, |current| -> Result<Vec<u8>, NotPinned> {
        let mut pins = match current {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes).map_err(|e| NotPinned(e.to_string()))?;
                Pins::parse(text).map_err(|e| NotPinned(e.to_string()))?
            }
            None => Pins::empty(),
        };
        accepted = pins.accept(&requests).map_err(NotPinned)?;
        Ok(pins.to_text().into_bytes())
    })
    .map_err(|NotPinned(why)| NotPinned(format!("{}: {why}", path.display())))?;
    let pinned: Vec<Value> = accepted
        .iter()
        .map(|a| json!({"tool": a.tool, "sha256": a.sha256, "already_pinned": a.already}))
        .collect();
    Ok(json!({ "pinned": pinned }))
}

impl Apply for PinWrite {
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            let lease = PinTools.intent_lease().unwrap_or_default();
            gate.two_phase(approved, lease, async |intent: &Intent| {
                Ok(Ran::Completed(self.run(intent).await?))
            })
            .await
        })
    }

    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(async move {
            let outcome = self.run(replay.intent).await?;
            replay.completed(outcome).await
        })
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use countersign_registry::gateway::{PINS_FILE, PinRequest, ToolDefinition, pin_arguments};

    use super::*;

    fn request(description: &str, replaces: Option<String>) -> PinRequest {
        PinRequest {
            upstream: "files".into(),
            tool: "write_file".into(),
            description: Some(description.into()),
            input_schema: json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            shown: serde_json::Map::new(),
            replaces,
        }
    }

    fn sha(description: &str) -> String {
        ToolDefinition {
            name: "write_file".into(),
            description: Some(description.into()),
            input_schema: json!({"type": "object"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            shown: serde_json::Map::new(),
        }
        .sha256_hex()
        .unwrap_or_default()
    }

    #[test]
    fn the_pins_file_is_written_private_and_a_stale_acceptance_leaves_it_as_it_is() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(PINS_FILE);
        let first = pin_arguments(&[request("one", None)]).to_string();
        let result = pin(&path, &first).unwrap_or_else(|NotPinned(e)| panic!("{e}"));
        assert_eq!(
            result,
            json!({"pinned": [{"tool": "files/write_file", "sha256": sha("one"), "already_pinned": false}]})
        );
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
        let written = std::fs::read(&path).unwrap_or_default();

        // Applied again (a replay): nothing changes.
        let again = pin(&path, &first).unwrap_or_else(|NotPinned(e)| panic!("{e}"));
        assert_eq!(again["pinned"][0]["already_pinned"], true);

        // Proposed over nothing, now that `one` is pinned: refused, the
        // file untouched.
        let stale = pin_arguments(&[request("two", None)]).to_string();
        let refused = pin(&path, &stale).err().map(|NotPinned(e)| e);
        assert_eq!(
            refused,
            Some(format!(
                "{}: files/write_file is pinned at {} now, not at nothing as when this was proposed; nothing was pinned",
                path.display(),
                sha("one")
            ))
        );
        assert_eq!(std::fs::read(&path).unwrap_or_default(), written);

        // Over the current pin: applied.
        let next = pin_arguments(&[request("two", Some(sha("one")))]).to_string();
        pin(&path, &next).unwrap_or_else(|NotPinned(e)| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let pins = Pins::parse(&text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            pins.get("files", "write_file").map(|p| p.sha256.clone()),
            Some(sha("two"))
        );
    }

    #[test]
    fn a_pins_file_that_does_not_parse_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join(PINS_FILE);
        std::fs::write(&path, "{not json").unwrap_or_else(|e| panic!("{e}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|e| panic!("{e}"));
        let args = pin_arguments(&[request("one", None)]).to_string();
        assert!(pin(&path, &args).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap_or_default(),
            "{not json"
        );
    }
}
