//! The transparency log's part of `countersign audit --verify`: the tree
//! walked against the events (a tampered event is named by its leaf
//! index), the stored roots against the leaves, and the latest signed
//! checkpoint's signature under the log's public key: the one given with
//! `--log-key`, or else the one the signer publishes (`PublicKeys`).
//!
//! Renders one line and one JSON object; decides nothing about the chains
//! (`inspect.rs`) or the passkey assertions (`passkey_audit.rs`).

use countersign_ledger::{Ledger, TreeBreak, TreeReport, verify_checkpoint_signature};
use countersign_tlog::VerifierKey;
use serde_json::{Value, json};

use crate::context::Context;
use crate::error::CliError;

/// How long the audit waits for the signer's published log key: the audit
/// of the ledger itself needs no signer, so an unreachable one only leaves
/// the signature unchecked (and says so).
const ASK_SIGNER_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// What became of the latest checkpoint's signature.
enum Signature {
    /// There is no signed checkpoint yet.
    NoCheckpoint,
    /// It verified under this key.
    Verified(VerifierKey),
    /// It did not.
    Refused(TreeBreak),
    /// It could not be checked: no key was given and the signer did not
    /// publish one (the reason).
    NotChecked(String),
}

/// The tree's audit.
pub(crate) struct TreeAudit {
    report: TreeReport,
    signature: Signature,
}

/// Walk the tree and check the latest checkpoint's signature.
pub(crate) async fn verify_tree(
    ctx: &Context,
    ledger: &Ledger,
    log_key: Option<VerifierKey>,
) -> Result<TreeAudit, CliError> {
    let report = ledger.verify_tree().await.map_err(CliError::error)?;
    let signature = match &report.latest {
        None => Signature::NoCheckpoint,
        Some(latest) => {
            let key = match log_key {
                Some(key) => Ok(key),
                None => tokio::time::timeout(ASK_SIGNER_FOR, published_log_key(ctx))
                    .await
                    .unwrap_or_else(|_| {
                        Err("the signer did not answer in time: pass --log-key".into())
                    }),
            };
            match key {
                Err(why) => Signature::NotChecked(why),
                Ok(key) => match verify_checkpoint_signature(latest, &key) {
                    Ok(()) => Signature::Verified(key),
                    Err(problem) => Signature::Refused(problem),
                },
            }
        }
    };
    Ok(TreeAudit { report, signature })
}

/// The log key the signer publishes, or why there is none to use.
async fn published_log_key(ctx: &Context) -> Result<VerifierKey, String> {
    let unreachable = |e: CliError| format!("the signer did not answer ({e}): pass --log-key");
    let mut head = ctx.head().await.map_err(unreachable)?;
    let published = head
        .public_keys(countersign_proto::v1::PublicKeysRequest {})
        .await
        .map_err(|e| unreachable(e.into()))?
        .into_inner();
    if published.log_key.is_empty() {
        return Err("the signer publishes no log key: pass --log-key".into());
    }
    published
        .log_key
        .parse()
        .map_err(|e| format!("the signer's log key is malformed ({e}): pass --log-key"))
}

impl TreeAudit {
    /// True unless the tree or the checkpoint's signature was refused.
    pub(crate) fn is_intact(&self) -> bool {
        self.report.is_intact() && !matches!(self.signature, Signature::Refused(_))
    }

    /// The first problem, if any.
    fn problem(&self) -> Option<String> {
        match (&self.report.first_break, &self.signature) {
            (Some(problem), _) | (None, Signature::Refused(problem)) => Some(problem.to_string()),
            _ => None,
        }
    }

    /// The line `audit --verify` prints.
    pub(crate) fn line(&self) -> String {
        if let Some(problem) = self.problem() {
            return format!("TAMPERED tree: {problem}");
        }
        let head = &self.report.head;
        let pending = match self.report.pending {
            0 => String::new(),
            n => format!(" ({n} more not yet sequenced)"),
        };
        let latest = match (&self.report.latest, &self.signature) {
            (Some(latest), Signature::Verified(key)) => format!(
                "latest checkpoint size {} signed {}, signature verified ({}+{})",
                latest.size,
                latest.signed_at,
                key.name(),
                key.id()
            ),
            (Some(latest), Signature::NotChecked(why)) => format!(
                "latest checkpoint size {} signed {}, signature NOT checked: {why}",
                latest.size, latest.signed_at
            ),
            _ => "no signed checkpoint yet".to_owned(),
        };
        format!(
            "tree: {} leaves{pending}, root {}, {latest}",
            head.size, head.root
        )
    }

    /// The `tree` object of `audit --verify --json`.
    pub(crate) fn json(&self) -> Value {
        let latest = self.report.latest.as_ref().map(|c| {
            json!({"size": c.size, "root": c.root.to_string(), "signed_at": c.signed_at, "note": c.note})
        });
        let signature = match &self.signature {
            Signature::NoCheckpoint => json!(null),
            Signature::Verified(key) => json!({"verified": true, "log_key": key.to_string()}),
            Signature::Refused(problem) => {
                json!({"verified": false, "refused": problem.to_string()})
            }
            Signature::NotChecked(why) => json!({"verified": false, "not_checked": why}),
        };
        json!({
            "intact": self.is_intact(),
            "size": self.report.head.size,
            "root": self.report.head.root.to_string(),
            "pending": self.report.pending,
            "latest_checkpoint": latest,
            "signature": signature,
            "first_break": self.problem(),
        })
    }
}
