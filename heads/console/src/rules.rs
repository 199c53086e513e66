//! The Rules page: this principal's auto-approval rules with their uses
//! and remaining budget (`GET /rules`), revoking one
//! (`POST /rules/{id}/revoke`, with the page key like every decision), and a
//! link to revise one (`revise`). A rule's scope is the text the signer
//! rendered from its canonical definition, shown escaped and whole.
//!
//! Creating a rule from a file is not offered here: it is done at the
//! terminal (`countersign rules create`), or by approving a `rule.create`
//! proposal on its card. Revoking only narrows what is approved, so the
//! page key of a paired session is enough; revising may widen, so it
//! goes through the signer's rendering of the new scope first (`revise`).

pub(crate) mod revise;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::{ListRulesRequest, RevokeRuleRequest, RuleStatus, RuleView};
use maud::{Markup, html};

use crate::ConsoleState;
use crate::actions::Authorized;
use crate::auth::{Rejection, html_response, reading};
use crate::html::{notice, page, page_key_field, preview_block, row, shown};
use crate::pages::signer_failure;

/// This principal's rules, for a paired session; otherwise the page that
/// says why not.
async fn paired_rules(
    state: &ConsoleState,
    headers: &HeaderMap,
) -> Result<Vec<RuleView>, Rejection> {
    reading(state, headers)?;
    let mut approver = state.approver.clone();
    match approver.list_rules(ListRulesRequest {}).await {
        Ok(list) => Ok(list.into_inner().rules),
        Err(status) => Err(Box::new(signer_failure(&SignerCallError::from(status)))),
    }
}

/// `GET /rules`.
pub(crate) async fn page_of_rules(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
) -> Response {
    let rules = match paired_rules(&state, &headers).await {
        Ok(found) => found,
        Err(page) => return *page,
    };
    let body = html! {
        h1 { "Auto-approval rules" }
        p { "The signer approves every proposal a live rule covers without asking you, within its uses and hourly rate, until it expires or you revoke it. Rules are created at the terminal: " code { "countersign rules create --file FILE" } ". A rule's " em { "Revise" } " link changes its definition here, after you read the new scope the signer renders." }
        @if rules.is_empty() {
            p.empty { "No rules." }
        }
        @for rule in &rules {
            (rule_card(rule))
        }
    };
    html_response(StatusCode::OK, page("Rules", None, true, body))
}

/// One rule: status, budget, scope, a revise link unless it is revoked (an
/// expired rule may be revised into a live one), and a revoke form while it
/// is active.
fn rule_card(rule: &RuleView) -> Markup {
    let uses = format!("{} of {}", rule.uses, rule.max_uses);
    let hour = format!("{} of {}", rule.uses_last_hour, rule.per_hour);
    html! {
        section.card.rule id=(format!("rule-{}", rule.id)) {
            h2 { code { (shown(&rule.id)) } " " span.status { (rule.status().name()) } }
            dl {
                (row("Version", &rule.version.to_string()))
                (row("Uses", &uses))
                (row("Uses in the last hour", &hour))
                (row("Remaining now", &rule.remaining.to_string()))
                (row("Expires", &rule.expires_at))
                (row("Created by", &rule.created_by))
                (row("Created at", &rule.created_at))
                @if !rule.reason.is_empty() {
                    (row("Reason", &rule.reason))
                }
            }
            (preview_block(&rule.scope))
            @if rule.status() != RuleStatus::Revoked {
                p { a href=(format!("/rules/{}/revise", rule.id)) { "Revise this rule" } }
            }
            @if rule.status() == RuleStatus::Active {
                form method="post" action=(format!("/rules/{}/revoke", rule.id)) {
                    (page_key_field())
                    label for=(format!("reason-{}", rule.id)) { "Why (recorded)" }
                    input id=(format!("reason-{}", rule.id)) type="text" name="reason" maxlength="2000";
                    button type="submit" { "Revoke this rule" }
                }
            }
        }
    }
}

/// `POST /rules/{id}/revoke` with an optional `reason`.
pub(crate) async fn revoke(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let mut approver = state.approver.clone();
    let reason = form.get("reason").map(str::trim).unwrap_or_default();
    let request = RevokeRuleRequest {
        rule_id: id.clone(),
        reason: if reason.is_empty() {
            "revoked in the console".to_owned()
        } else {
            reason.to_owned()
        },
    };
    match approver.revoke_rule(request).await {
        Ok(revoked) => {
            let revoked = revoked.into_inner();
            let message = format!(
                "Revoked rule {} (now version {}): it approves nothing more, and its unused proofs are refused.",
                revoked.id, revoked.version
            );
            html_response(
                StatusCode::OK,
                page(
                    "Revoked",
                    None,
                    true,
                    notice("Revoked", &message, Some(("/rules", "Back to the rules"))),
                ),
            )
        }
        Err(status) => signer_failure(&SignerCallError::from(status)),
    }
}
