//! `countersign rules create|revise|list|revoke`: the approver's
//! auto-approval rules, over the approver certificate.
//!
//! Creation and revision are a person's acts at the controlling terminal:
//! the signer checks the definition and renders its exact scope (a dry
//! run), the person reads it and types a fresh challenge, and only then is
//! the rule created or revised, bound to the SHA-256 of the definition
//! shown. A program piping into stdin cannot answer the challenge. Listing
//! and revoking need no challenge: neither widens what is approved.

use countersign_proto::v1::{
    CreateRuleRequest, ListRulesRequest, ReviseRuleRequest, RevokeRuleRequest, RuleView,
};
use countersign_registry::terminal_safe;
use serde_json::{Value, json};

use crate::Io;
use crate::args::{RuleFileArg, RuleRevokeArgs};
use crate::commands::decide::{Confirmation, confirm};
use crate::commands::{input_name, read_input};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// Largest rule file read, in bytes (the signer's own limit is 16 KiB).
const MAX_RULE_FILE_BYTES: u64 = 16 * 1024;

const RULE_CREATION: Confirmation = Confirmation {
    needs: "creating a rule",
    does: "create it",
    done: "created",
};

const RULE_REVISION: Confirmation = Confirmation {
    needs: "revising a rule",
    does: "revise it",
    done: "revised",
};

/// The definition in `args.file` as JSON text: a `.toml` file is converted,
/// anything else (or stdin) is sent as it is, for the signer's strict
/// parser to judge. Read before anything is contacted.
pub(crate) fn read_definition(args: &RuleFileArg, io: &mut Io<'_>) -> Result<String, CliError> {
    let bytes = read_input(&args.file, MAX_RULE_FILE_BYTES, io)?;
    let name = input_name(&args.file);
    let text = String::from_utf8(bytes)
        .map_err(|_| CliError::Refused(format!("{name} is not UTF-8; nothing was created")))?;
    if args.file.extension().is_some_and(|e| e == "toml") {
        let value: Value = toml::from_str(&text).map_err(|e| {
            CliError::Refused(format!(
                "{name} is not valid TOML ({e}); nothing was created"
            ))
        })?;
        return serde_json::to_string(&value).map_err(CliError::error);
    }
    Ok(text)
}

/// `countersign rules create --file FILE`
pub(crate) async fn create(
    ctx: &Context,
    definition: String,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let request = |dry_run, definition_sha256| CreateRuleRequest {
        definition_json: definition.clone(),
        dry_run,
        definition_sha256,
    };
    // The signer's checks and its rendering of the scope, before the
    // person commits: what is shown is what is created (its hash binds it).
    let shown = approver
        .create_rule(request(true, String::new()))
        .await?
        .into_inner();
    let text = format!(
        "\n{}\nCreating this rule lets the signer approve every proposal it covers WITHOUT asking you, until it expires, runs out of uses, or you revoke it (countersign rules revoke).\n",
        shown.scope.trim_end()
    );
    confirm(io, &text, &RULE_CREATION)?;
    let created = approver
        .create_rule(request(false, shown.definition_sha256))
        .await?
        .into_inner();
    if json {
        write_json(io.out, &rule_json(&created))
    } else {
        write_text(
            io.out,
            &format!(
                "created rule {} (version {}); it approves at most {} proposals, {} per hour, until {}\n",
                created.id, created.version, created.max_uses, created.per_hour, created.expires_at
            ),
        )
    }
}

/// `countersign rules revise ID --version N --file FILE`: as `create`, for
/// the rule's next version; the signer refuses it if the rule is no longer
/// at `version` (`rule_changed`) or is revoked (`rule_not_live`).
pub(crate) async fn revise(
    ctx: &Context,
    id: &str,
    version: u64,
    definition: String,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let request = |dry_run, definition_sha256| ReviseRuleRequest {
        rule_id: id.to_owned(),
        version,
        definition_json: definition.clone(),
        dry_run,
        definition_sha256,
    };
    let shown = approver
        .revise_rule(request(true, String::new()))
        .await?
        .into_inner();
    let text = format!(
        "\n{}\nRevising rule {id} (version {version}) lets the signer approve every proposal this new scope covers WITHOUT asking you; unused proofs issued under version {version} are refused from now on.\n",
        shown.scope.trim_end()
    );
    confirm(io, &text, &RULE_REVISION)?;
    let revised = approver
        .revise_rule(request(false, shown.definition_sha256))
        .await?
        .into_inner();
    if json {
        write_json(io.out, &rule_json(&revised))
    } else {
        write_text(
            io.out,
            &format!(
                "revised rule {} (now version {}); it approves at most {} proposals, {} per hour, until {}\n",
                revised.id, revised.version, revised.max_uses, revised.per_hour, revised.expires_at
            ),
        )
    }
}

/// `countersign rules list`
pub(crate) async fn list(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let rules = ctx
        .approver()
        .await?
        .list_rules(ListRulesRequest {})
        .await?
        .into_inner()
        .rules;
    if json {
        let all: Vec<Value> = rules.iter().map(rule_json).collect();
        return write_json(io.out, &json!({ "rules": all }));
    }
    if rules.is_empty() {
        return write_text(io.out, "no rules\n");
    }
    let mut text = String::new();
    for rule in &rules {
        text.push_str(&rule_text(rule));
    }
    write_text(io.out, &text)
}

/// `countersign rules revoke ID`
pub(crate) async fn revoke(
    ctx: &Context,
    args: RuleRevokeArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let revoked = ctx
        .approver()
        .await?
        .revoke_rule(RevokeRuleRequest {
            rule_id: args.id,
            reason: args.reason,
        })
        .await?
        .into_inner();
    if json {
        write_json(io.out, &rule_json(&revoked))
    } else {
        write_text(
            io.out,
            &format!(
                "revoked rule {} (now version {}): it approves nothing more, and its unused proofs are refused\n",
                revoked.id, revoked.version
            ),
        )
    }
}

/// A rule for people: a status line with its budget, then its scope.
fn rule_text(rule: &RuleView) -> String {
    let mut text = format!(
        "{} v{} {}  uses {}/{} ({}/{} in the last hour), {} remaining, expires {}, created by {}\n",
        rule.id,
        rule.version,
        rule.status().name(),
        rule.uses,
        rule.max_uses,
        rule.uses_last_hour,
        rule.per_hour,
        rule.remaining,
        rule.expires_at,
        terminal_safe(&rule.created_by)
    );
    if !rule.reason.is_empty() {
        text.push_str(&format!("  reason: {}\n", terminal_safe(&rule.reason)));
    }
    for line in rule.scope.lines() {
        text.push_str(&format!("  {line}\n"));
    }
    text
}

/// A rule for programs.
fn rule_json(rule: &RuleView) -> Value {
    json!({
        "id": rule.id,
        "version": rule.version,
        "status": rule.status().name(),
        "definition": serde_json::from_str::<Value>(&rule.definition_json).unwrap_or(Value::Null),
        "definition_sha256": rule.definition_sha256,
        "scope": rule.scope,
        "expires_at": rule.expires_at,
        "created_by": rule.created_by,
        "created_at": rule.created_at,
        "uses": rule.uses,
        "max_uses": rule.max_uses,
        "uses_last_hour": rule.uses_last_hour,
        "per_hour": rule.per_hour,
        "remaining": rule.remaining,
        "reason": rule.reason,
    })
}
