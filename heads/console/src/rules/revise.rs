//! Revising a rule in the console, through the same `ReviseRule` RPC as
//! `countersign rules revise` at the terminal:
//! - `GET /rules/{id}/revise`: the rule's current scope, and a form with
//!   its current definition to edit and the version it is at;
//! - `POST /rules/{id}/revise`: the signer's dry run checks the new
//!   definition and renders its scope; the page shows that scope whole and
//!   a confirm form bound to the definition's SHA-256;
//! - `POST /rules/{id}/revise/confirm`: the revision, which the signer
//!   applies only to the definition that hashes to what was shown
//!   (`rule_definition_changed`), to a rule still at the version the person
//!   looked at (`rule_changed`) and not revoked (`rule_not_live`).
//!
//! Both POSTs need the paired session's page key. Where the terminal asks
//! for a typed challenge (so that a program at stdin cannot confirm), the
//! console relies on its pairing and page key, as when a person approves
//! a `rule.create` proposal on its card. No passkey is asked: a rule can
//! name no operation that needs one and cannot exist when every approval
//! needs one (the signer refuses such a definition with `invalid_rule`).
//!
//! Must not: apply a definition whose scope the person was not shown (the
//! confirmation carries the digest of the one shown, and the signer
//! checks it); decide anything itself (every check is the signer's).

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::{ReviseRuleRequest, RuleStatus, RuleView};
use countersign_registry::is_terminal_unsafe;
use countersign_registry::rule::MAX_RULE_BYTES;
use maud::html;

use crate::ConsoleState;
use crate::actions::{Authorized, Form};
use crate::auth::{Rejection, html_response, refusal};
use crate::html::{notice, page, page_key_field, preview_block, shown};
use crate::pages::signer_failure;
use crate::rules::paired_rules;

/// `GET /rules/{id}/revise`.
pub(crate) async fn page_of_revision(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let rules = match paired_rules(&state, &headers).await {
        Ok(found) => found,
        Err(page) => return *page,
    };
    let Some(rule) = rules.iter().find(|r| r.id == id) else {
        return refusal(StatusCode::NOT_FOUND, &format!("There is no rule {id}."));
    };
    if rule.status() == RuleStatus::Revoked {
        return refusal(
            StatusCode::CONFLICT,
            &format!("Rule {id} is revoked: nothing can change it any more."),
        );
    }
    let body = html! {
        h1 { "Revise rule " code { (shown(&rule.id)) } }
        p { "At version " (rule.version) " (" (rule.status().name()) "), it approves without asking you:" }
        (preview_block(&rule.scope))
        form method="post" action=(format!("/rules/{}/revise", rule.id)) {
            (page_key_field())
            input type="hidden" name="version" value=(rule.version);
            label for="definition" { "New definition (JSON)" }
            textarea.definition #definition name="definition" rows="12" required spellcheck="false" {
                (editable_json(&rule.definition_json))
            }
            p.hint { "Its current definition, as the signer stores it (keys: docs/rules.md). Nothing changes until you have read the new scope on the next page and confirmed it." }
            button type="submit" { "Show the new scope" }
        }
        p { a href="/rules" { "Back to the rules" } }
    };
    let title = format!("Revise {}", rule.id);
    html_response(StatusCode::OK, page(&title, None, true, body))
}

/// `POST /rules/{id}/revise` with `version` and `definition`: the signer's
/// dry run, and the page that asks to confirm exactly the scope it renders.
pub(crate) async fn preview(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let request = match revision_request(id, &form) {
        Ok(request) => ReviseRuleRequest {
            dry_run: true,
            ..request
        },
        Err(page) => return *page,
    };
    let version = request.version;
    let proposed = match revise_rule(&state, request).await {
        Ok(view) => view,
        Err(page) => return *page,
    };
    let warning = format!(
        "Revising rule {} (version {version}) lets the signer approve every proposal this new scope covers WITHOUT asking you; unused proofs issued under version {version} are refused from now on.",
        proposed.id
    );
    // The signer's canonical text goes back, not the browser's: it is what
    // the scope was rendered from, and what the digest names.
    let body = html! {
        h1 { "Revise rule " code { (shown(&proposed.id)) } "?" }
        p { "The signer checked the definition you sent. As version " (proposed.version) ", the rule would read:" }
        (preview_block(&proposed.scope))
        p.warn { (shown(&warning)) }
        form method="post" action=(format!("/rules/{}/revise/confirm", proposed.id)) {
            (page_key_field())
            input type="hidden" name="version" value=(version);
            input type="hidden" name="definition" value=(proposed.definition_json);
            input type="hidden" name="definition_sha256" value=(proposed.definition_sha256);
            button.approve type="submit" { "Revise this rule" }
        }
        p { a href="/rules" { "Cancel: back to the rules (nothing changes)" } }
    };
    html_response(
        StatusCode::OK,
        page("Confirm the revision", None, true, body),
    )
}

/// `POST /rules/{id}/revise/confirm` with `version`, `definition` and the
/// `definition_sha256` the dry run returned.
pub(crate) async fn confirm(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let request = match revision_request(id, &form) {
        Ok(request) => request,
        Err(page) => return *page,
    };
    let Some(sha256) = form.get("definition_sha256").filter(|s| !s.is_empty()) else {
        return refusal(
            StatusCode::BAD_REQUEST,
            "The form lacks the SHA-256 of the definition you were shown; nothing was revised. Start again from the rule's Revise link.",
        );
    };
    let version = request.version;
    let request = ReviseRuleRequest {
        definition_sha256: sha256.to_owned(),
        ..request
    };
    let revised = match revise_rule(&state, request).await {
        Ok(view) => view,
        Err(page) => return *page,
    };
    let message = format!(
        "Revised rule {} (now version {}): it approves at most {} proposals, {} per hour, until {}; unused proofs issued under version {version} are refused.",
        revised.id, revised.version, revised.max_uses, revised.per_hour, revised.expires_at
    );
    let body = html! {
        (notice("Revised", &message, Some(("/rules", "Back to the rules"))))
        (preview_block(&revised.scope))
    };
    html_response(StatusCode::OK, page("Revised", None, true, body))
}

/// The signer's `ReviseRule`, or the page that says why it refused.
async fn revise_rule(
    state: &ConsoleState,
    request: ReviseRuleRequest,
) -> Result<RuleView, Rejection> {
    let mut approver = state.approver.clone();
    match approver.revise_rule(request).await {
        Ok(view) => Ok(view.into_inner()),
        Err(status) => Err(Box::new(signer_failure(&SignerCallError::from(status)))),
    }
}

/// The revision of rule `id` that a form asks for (the version the person
/// looked at and the new definition; not a dry run, no digest), or the page
/// that says what is wrong with the form.
fn revision_request(id: String, form: &Form) -> Result<ReviseRuleRequest, Rejection> {
    let Some(version) = form.get("version").and_then(|v| v.trim().parse().ok()) else {
        return Err(Box::new(refusal(
            StatusCode::BAD_REQUEST,
            "The form needs the version of the rule you looked at, a whole number; nothing was revised.",
        )));
    };
    let definition = form.get("definition").map(str::trim).unwrap_or_default();
    if definition.is_empty() {
        return Err(Box::new(refusal(
            StatusCode::BAD_REQUEST,
            "The form needs the rule's new definition (JSON); nothing was revised.",
        )));
    }
    if definition.len() > MAX_RULE_BYTES {
        return Err(Box::new(refusal(
            StatusCode::BAD_REQUEST,
            &format!(
                "The definition is {} bytes, more than a rule may have ({MAX_RULE_BYTES}); nothing was revised.",
                definition.len()
            ),
        )));
    }
    Ok(ReviseRuleRequest {
        rule_id: id,
        version,
        definition_json: definition.to_owned(),
        dry_run: false,
        definition_sha256: String::new(),
    })
}

/// JSON text for a text box: every character a terminal must not receive
/// raw (bidi controls, zero-width and other invisible characters) written
/// as a JSON `\u` escape, so the box can neither hide nor reorder text. The
/// value is unchanged: in valid JSON such a character stands only inside a
/// string, where the escape means the same. Tab, newline and carriage
/// return stay (outside a string they are whitespace; inside, invalid).
fn editable_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if is_terminal_unsafe(c) && !matches!(c, '\t' | '\n' | '\r') {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use countersign_registry::rule::RuleDefinition;

    use super::*;

    #[test]
    fn the_editable_definition_hides_nothing_and_means_the_same() {
        let definition = r#"{"constraints":[{"equals":"a\u202eb\u200dc\u{e0041}d\u0007é","pointer":"/name"}],"expires_at":"2999-01-01T00:00:00Z","max_uses":1,"operations":["schedule.create"],"per_hour":1,"sessions":["*"]}"#
            .replace("\\u202e", "\u{202e}")
            .replace("\\u200d", "\u{200d}")
            .replace("\\u{e0041}", "\u{e0041}");
        let editable = editable_json(&definition);
        assert!(!editable.chars().any(is_terminal_unsafe), "{editable}");
        assert!(
            editable.contains(r"a\u202eb\u200dc\udb40\udc41d\u0007é"),
            "{editable}"
        );
        let original = RuleDefinition::parse(definition.as_bytes()).unwrap();
        let edited = RuleDefinition::parse(editable.as_bytes()).unwrap();
        assert_eq!(edited.sha256_hex(), original.sha256_hex());
        assert_eq!(edited.canonical(), definition);
    }
}
