//! The transparency log's part of `countersign audit --verify`: the tree
//! walked against the events (a tampered event is named by its leaf
//! index), the stored roots against the leaves, and the latest signed
//! checkpoint's signature under one of the log's public keys: those given
//! with `--log-key`, or else those the signer publishes (`PublicKeys`: the
//! current key and the ones it retired).
//!
//! Renders one line and one JSON object; decides nothing about the chains
//! (`inspect.rs`) or the passkey assertions (`passkey_audit.rs`).

use countersign_ledger::{
    Ledger, StoredCheckpoint, TreeBreak, TreeReport, verify_checkpoint_signature,
};
use countersign_tlog::{Note, Policy, VerifierKey};
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

/// What the witnesses cosigned, when a policy is configured or a
/// cosignature is stored.
enum Witnessed {
    /// No `[tlog] policy` and no stored cosignature: nothing to say.
    Nothing,
    /// The latest cosigned checkpoint's size and witnesses, and whether it
    /// meets the policy's quorum (the refusal if not); `None` without a
    /// policy.
    Cosigned {
        size: u64,
        witnesses: Vec<String>,
        quorum: Option<Result<(), String>>,
    },
    /// A policy is configured and nothing is cosigned yet (or the policy
    /// could not be read).
    NotYet(String),
}

/// The tree's audit.
pub(crate) struct TreeAudit {
    report: TreeReport,
    signature: Signature,
    witnessed: Witnessed,
}

/// Walk the tree and check the latest checkpoint's signature.
pub(crate) async fn verify_tree(
    ctx: &Context,
    ledger: &Ledger,
    log_keys: Vec<VerifierKey>,
) -> Result<TreeAudit, CliError> {
    let report = ledger.verify_tree().await.map_err(CliError::error)?;
    let signature = match &report.latest {
        None => Signature::NoCheckpoint,
        Some(latest) => {
            let keys = if log_keys.is_empty() {
                tokio::time::timeout(ASK_SIGNER_FOR, published_log_keys(ctx))
                    .await
                    .unwrap_or_else(|_| {
                        Err("the signer did not answer in time: pass --log-key".into())
                    })
            } else {
                Ok(log_keys)
            };
            match keys {
                Err(why) => Signature::NotChecked(why),
                Ok(keys) => signed_by_one_of(latest, keys),
            }
        }
    };
    let witnessed = witnessed(ctx, ledger).await?;
    Ok(TreeAudit {
        report,
        signature,
        witnessed,
    })
}

/// The latest cosigned checkpoint, judged by the configured policy's
/// quorum (a cosignature the ledger cannot verify is left out of the note
/// it gives, and logged).
async fn witnessed(ctx: &Context, ledger: &Ledger) -> Result<Witnessed, CliError> {
    let policy = match &ctx.config.tlog {
        None => None,
        Some(tlog) => match std::fs::read(&tlog.policy)
            .map_err(|e| e.to_string())
            .and_then(|bytes| Policy::parse(&bytes).map_err(|e| e.to_string()))
        {
            Ok(policy) => Some(policy),
            Err(e) => {
                return Ok(Witnessed::NotYet(format!(
                    "the policy {} is not readable: {e}",
                    tlog.policy.display()
                )));
            }
        },
    };
    let latest = ledger
        .latest_cosigned_checkpoint()
        .await
        .map_err(CliError::error)?;
    let Some((size, note)) = latest else {
        return Ok(match policy {
            None => Witnessed::Nothing,
            Some(_) => Witnessed::NotYet("no checkpoint is cosigned yet".into()),
        });
    };
    let parsed = Note::parse(note.as_bytes()).map_err(CliError::error)?;
    // The log signs under its origin's name; every other line is a
    // witness's cosignature.
    let origin = parsed.text().lines().next().unwrap_or_default();
    let witnesses = parsed
        .signatures()
        .iter()
        .filter(|s| s.name().as_str() != origin)
        .map(|s| s.name().to_string())
        .collect();
    let quorum = policy.map(|policy| {
        policy
            .verify_checkpoint(&parsed)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    Ok(Witnessed::Cosigned {
        size,
        witnesses,
        quorum,
    })
}

/// The checkpoint's signature under the first of `keys` (at least one)
/// that verifies it; else the refusal under the first key it names, or
/// under the first key.
fn signed_by_one_of(latest: &StoredCheckpoint, keys: Vec<VerifierKey>) -> Signature {
    let mut refusals = Vec::new();
    for key in keys {
        match verify_checkpoint_signature(latest, &key) {
            Ok(()) => return Signature::Verified(key),
            Err(problem) => refusals.push((key, problem)),
        }
    }
    let named = refusals
        .iter()
        .position(|(key, _)| names_key_id(&latest.note, key));
    let index = named.unwrap_or(0);
    match refusals.into_iter().nth(index) {
        Some((_, problem)) => Signature::Refused(problem),
        None => Signature::NotChecked("no log key to check it with: pass --log-key".into()),
    }
}

/// Whether a signature line of `note` carries `key`'s key ID.
fn names_key_id(note: &str, key: &VerifierKey) -> bool {
    countersign_tlog::Note::parse(note.as_bytes()).is_ok_and(|parsed| {
        parsed
            .signatures()
            .iter()
            .any(|s| s.name() == key.name() && s.id() == key.id())
    })
}

/// The log keys the signer publishes, current first, or why there are none
/// to use.
async fn published_log_keys(ctx: &Context) -> Result<Vec<VerifierKey>, String> {
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
    std::iter::once(&published.log_key)
        .chain(&published.retired_log_keys)
        .map(|key| {
            key.parse().map_err(|e| {
                format!("the signer's log key {key:?} is malformed ({e}): pass --log-key")
            })
        })
        .collect()
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

    /// The line on witnesses `audit --verify` prints, if there is one to
    /// print.
    pub(crate) fn witnesses_line(&self) -> Option<String> {
        match &self.witnessed {
            Witnessed::Nothing => None,
            Witnessed::NotYet(why) => Some(format!("witnesses: {why}")),
            Witnessed::Cosigned {
                size,
                witnesses,
                quorum,
            } => {
                let verdict = match quorum {
                    None => String::new(),
                    Some(Ok(())) => ", the policy's quorum met".into(),
                    Some(Err(why)) => format!(", the policy's quorum NOT met: {why}"),
                };
                Some(format!(
                    "witnesses: latest cosigned checkpoint size {size}, by {}{verdict}",
                    witnesses.join(", ")
                ))
            }
        }
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
            "witnesses": self.witnesses_json(),
            "first_break": self.problem(),
        })
    }

    fn witnesses_json(&self) -> Value {
        match &self.witnessed {
            Witnessed::Nothing => json!(null),
            Witnessed::NotYet(why) => json!({"cosigned": null, "why": why}),
            Witnessed::Cosigned {
                size,
                witnesses,
                quorum,
            } => json!({
                "cosigned": {"size": size, "witnesses": witnesses},
                "quorum_met": quorum.as_ref().map(Result::is_ok),
                "quorum_refused": quorum.as_ref().and_then(|q| q.as_ref().err()),
            }),
        }
    }
}
