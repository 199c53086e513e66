//! Read-only views: `ops list`, `keys list`, `audit [--verify]` (the
//! passkey assertions' part in `passkey_audit.rs`), `audit export` (the
//! OCSF mapping in the `countersign-ocsf` crate).

use countersign_webauthn::RelyingParty;
use serde_json::json;

use super::passkey_audit::verify_passkeys;
use super::tree_audit::verify_tree;

use crate::Io;
use crate::args::{AuditArgs, AuditExportArgs, ExportFormat};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_new, write_text};

/// `countersign ops list`: the operations a caller may propose (the
/// agent operations, which only a hook proposes, are not among them).
pub(crate) fn ops_list(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let registry = ctx.registry()?;
    if json {
        let ops: Vec<_> = registry
            .proposable()
            .map(countersign_surface::results::operation)
            .collect();
        return write_json(io.out, &ops);
    }
    let mut text = String::new();
    for op in registry.proposable() {
        text.push_str(&format!(
            "{:<20} {:<5} {}  {}\n",
            op.name,
            op.class.as_str(),
            &op.contract_revision()[..12],
            op.description
        ));
    }
    write_text(io.out, &text)
}

/// `countersign keys list`
pub(crate) async fn keys_list(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let mut head = ctx.head().await?;
    let published = head
        .public_keys(countersign_proto::v1::PublicKeysRequest {})
        .await?
        .into_inner();
    let keys = published.keys;
    let log_key = Some(published.log_key).filter(|k| !k.is_empty());
    if json {
        let mut keys: Vec<_> = keys
            .iter()
            .map(|k| json!({"key_id": k.key_id, "purpose": "proof", "algorithm": "Ed25519", "public_key_hex": hex::encode(&k.public_key)}))
            .collect();
        if let Some(log_key) = &log_key {
            keys.push(json!({"purpose": "log", "algorithm": "Ed25519", "verifier_key": log_key}));
        }
        for retired in &published.retired_log_keys {
            keys.push(json!({"purpose": "log", "status": "retired", "algorithm": "Ed25519", "verifier_key": retired}));
        }
        return write_json(io.out, &keys);
    }
    let mut text = String::new();
    for k in &keys {
        text.push_str(&format!(
            "{}  Ed25519  {}\n",
            k.key_id,
            hex::encode(&k.public_key)
        ));
    }
    if let Some(log_key) = &log_key {
        text.push_str(&format!("log key (checkpoints)  {log_key}\n"));
    }
    for retired in &published.retired_log_keys {
        text.push_str(&format!("log key (retired)      {retired}\n"));
    }
    write_text(io.out, &text)
}

/// `countersign audit [--verify [--log-key VKEY]]`
pub(crate) async fn audit(
    ctx: &Context,
    args: AuditArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let ledger = ctx.ledger().await?;
    if args.verify {
        let report = ledger.verify_chain().await.map_err(CliError::error)?;
        let tree = verify_tree(ctx, &ledger, args.log_key).await?;
        let rp = ctx.config.passkeys.as_ref().map(|p| RelyingParty {
            rp_id: p.rp_id.clone(),
            origins: p.origins.clone(),
        });
        let passkeys = verify_passkeys(&ledger, rp.as_ref()).await?;
        let verdict = match &report.first_break {
            None => format!(
                "intact: {} in {}, {}, heads digest {}",
                counted(report.events, "event"),
                counted(report.chains, "chain"),
                counted(report.checkpoints, "checkpoint"),
                report.head_hash
            ),
            Some(problem) => format!("TAMPERED: {problem}"),
        };
        if json {
            write_json(
                io.out,
                &json!({
                    "intact": report.is_intact(),
                    "events": report.events,
                    "chains": report.chains,
                    "checkpoints": report.checkpoints,
                    "head_hash": report.head_hash,
                    "heads": countersign_ledger::heads_value(&report.heads),
                    "first_break": report.first_break.as_ref().map(ToString::to_string),
                    "tree": tree.json(),
                    "passkey_assertions_verified": passkeys.verified,
                    "passkey_problems": passkeys.problems,
                }),
            )?;
        } else {
            let mut text = format!("{verdict}\n{}\n", tree.line());
            if let Some(line) = tree.witnesses_line() {
                text.push_str(&line);
                text.push('\n');
            }
            if passkeys.verified > 0 || !passkeys.problems.is_empty() {
                text.push_str(&format!(
                    "passkey assertions: {} verified, {} refused\n",
                    passkeys.verified,
                    passkeys.problems.len()
                ));
            }
            for problem in &passkeys.problems {
                text.push_str(&format!("REFUSED: {problem}\n"));
            }
            write_text(io.out, &text)?;
        }
        if !passkeys.problems.is_empty() {
            return Err(CliError::Error(
                "a stored passkey assertion does not verify".to_string(),
            ));
        }
        return if report.is_intact() && tree.is_intact() {
            Ok(())
        } else {
            Err(CliError::Error(
                "the audit trail has been tampered with".to_string(),
            ))
        };
    }
    let events = ledger.events().await.map_err(CliError::error)?;
    if json {
        let events: Vec<_> = events
            .iter()
            .map(|e| {
                json!({"id": e.id, "chain": e.chain, "seq": e.seq, "at": e.at, "kind": e.kind,
                       "proposal_id": e.proposal_id, "actor": e.actor, "details": e.details,
                       "prev_hash": e.prev_hash, "hash": e.hash})
            })
            .collect();
        return write_json(io.out, &events);
    }
    let mut text = String::new();
    for e in &events {
        text.push_str(&format!(
            "{:>6}  {:<10} {}  {:<12} {}  {}  {}\n",
            e.id,
            chain_position(&e.chain, e.seq),
            e.at,
            e.kind,
            e.proposal_id.as_deref().unwrap_or("-"),
            e.actor,
            e.details
        ));
    }
    write_text(io.out, &text)
}

/// `countersign audit export --format ocsf [--since TIME] [--output FILE]`:
/// every ledger event (at or after TIME), oldest first, as JSON Lines. The
/// whole export is built before anything is written, so a failure leaves
/// no partial file.
pub(crate) async fn audit_export(
    ctx: &Context,
    args: AuditExportArgs,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let ledger = ctx.ledger().await?;
    // The leaves first: an event written in between is then exported
    // without its leaf (null), never with another's.
    let leaves = ledger.leaf_indexes().await.map_err(CliError::error)?;
    let events = ledger.events().await.map_err(CliError::error)?;
    // Every proposal's operation, from its `proposed` event (which may be
    // older than --since).
    let operations: std::collections::HashMap<&str, &str> = events
        .iter()
        .filter(|e| e.kind == "proposed")
        .filter_map(|e| {
            let operation = e.details.get("operation")?.as_str()?;
            Some((e.proposal_id.as_deref()?, operation))
        })
        .collect();
    let mut lines = String::new();
    let mut written = 0_usize;
    for event in &events {
        let event = ocsf_event(event);
        let time =
            countersign_ocsf::event_time(&event).map_err(|e| CliError::Error(e.to_string()))?;
        if args.since.is_some_and(|since| time < since) {
            continue;
        }
        let context = countersign_ocsf::Context {
            operation: event
                .proposal_id
                .as_deref()
                .and_then(|pid| operations.get(pid).copied()),
            leaf_index: leaves.get(&event.id).copied(),
        };
        let value = match args.format {
            ExportFormat::Ocsf => countersign_ocsf::to_ocsf(&event, context),
        }
        .map_err(|e| CliError::Error(e.to_string()))?;
        lines.push_str(&value.to_string());
        lines.push('\n');
        written += 1;
    }
    match &args.output {
        None => write_text(io.out, &lines),
        Some(path) => {
            write_new(path, lines.as_bytes())?;
            write_text(
                io.err,
                &format!(
                    "wrote {} to {}\n",
                    counted(written as u64, "event"),
                    path.display()
                ),
            )
        }
    }
}

/// A ledger row as the OCSF mapping reads it.
fn ocsf_event(event: &countersign_ledger::EventRecord) -> countersign_ocsf::Event {
    countersign_ocsf::Event {
        id: event.id,
        chain: event.chain.clone(),
        seq: event.seq,
        at: event.at.clone(),
        kind: event.kind.clone(),
        proposal_id: event.proposal_id.clone(),
        actor: event.actor.clone(),
        details: event.details.clone(),
        prev_hash: event.prev_hash.clone(),
        hash: event.hash.clone(),
    }
}

/// Where an event sits, as the listing shows it: `#seq` on the global
/// chain, `@principal#seq` (the principal's id shortened) on its own.
fn chain_position(chain: &str, seq: i64) -> String {
    if chain.is_empty() {
        return format!("#{seq}");
    }
    let short: String = chain
        .chars()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("@{short}#{seq}")
}

/// `n` and `noun`, the noun in the plural unless `n` is 1.
fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
