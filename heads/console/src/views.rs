//! How proposals look: the pending list (also sent live), the history table
//! and the proposal card with its decision forms.
//!
//! The card shows what the signer stored and rendered, never anything the
//! browser sent: the authoritative preview, the canonical arguments, the
//! operation, the contract and policy revisions, the proposing session and
//! head, age and expiry. Model-supplied text is labelled as such, and an
//! argument holding any non-ASCII character is marked, in the list and on
//! the card, naming its code points and whether it mixes scripts: a
//! Cyrillic `а` looks exactly like a Latin `a`.
//!
//! Every card leads with the action (the signer's structured action: the
//! command, the diff, the upstream tool call and its arguments, the
//! request), then its risk and decision window, then only the decisions
//! that can succeed (from the approver service's one table,
//! [`ApprovalDoes`]), then the details one tap away, in `<details>` that
//! the script opens on a wide screen. On a phone (360-430 px wide) the
//! action's first lines stand above the first button. The pending list
//! shows each proposal's one-line action summary and risk.

use countersign_proto::v1::{ActionPart, ProposalStatus, ProposalView, QuorumDecision, QuorumView};
use countersign_registry::Class;
use countersign_registry::lookalike::argument_warnings_of_json;
use countersign_registry::rule::RULE_CREATE;
use countersign_service::ApprovalDoes;
use countersign_surface::results;
use maud::{Markup, html};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::html::{block, page_key_field, preview_block, row, shown, with_code};

/// What the card knows besides the proposal itself.
pub(crate) struct CardContext<'a> {
    /// The lifetime a proof of this operation gets, from the registry.
    pub(crate) lifetime_secs: Option<u64>,
    /// Argument fields the registry marks as model-supplied and unverified.
    pub(crate) unverified_fields: &'a [String],
    /// For a pending proposal: why the signer would refuse an approval now
    /// (checked with a dry run before the person is asked), if it would.
    pub(crate) not_approvable: Option<String>,
    /// For an approved proposal: whether its approval, recorded for a run
    /// at an approver's interface that cannot run it, may be handed off
    /// to the proposing session (the signer's dry run said so).
    pub(crate) can_hand_off: bool,
}

/// Which head proposed, as far as the session name tells: each head names
/// its sessions (`mcp-…` for the MCP head, `api:…` for the HTTP API).
fn head_of(session: &str) -> &'static str {
    if session.starts_with("mcp-") {
        "MCP head"
    } else if session.starts_with("api:") {
        "HTTP API head"
    } else {
        "CLI or another head"
    }
}

/// "3 min ago" from an RFC 3339 time.
pub(crate) fn age(created_at: &str) -> String {
    let Ok(created) = OffsetDateTime::parse(created_at, &Rfc3339) else {
        return created_at.to_owned();
    };
    let secs = (OffsetDateTime::now_utc() - created).whole_seconds().max(0);
    match secs {
        0..60 => format!("{secs} s ago"),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86400 => format!("{} h ago", secs / 3600),
        _ => format!("{} days ago", secs / 86400),
    }
}

/// The one-line summary of the action: the signer's, else (a proposal
/// whose operation is no longer registered at its contract) the preview's
/// `Action:` line, else its first line.
fn summary(v: &ProposalView) -> &str {
    if let Some(action) = &v.action {
        return &action.summary;
    }
    v.preview
        .lines()
        .find_map(|l| l.strip_prefix("Action:"))
        .map(str::trim)
        .or_else(|| v.preview.lines().next())
        .unwrap_or_default()
}

/// What approving risks, as the signer's view says (the registry's class,
/// an agent call's tool class, a gateway tool's as the operator says).
fn risk(v: &ProposalView) -> Markup {
    let (name, meaning) = match Class::parse(&v.risk) {
        Some(class) => (class.as_str(), class.meaning()),
        None => (
            "not known",
            "its operation is no longer registered as it was proposed",
        ),
    };
    html! {
        span class={ "risk " (name) } { "Risk: " strong { (name) } " (" (meaning) ")" }
    }
}

/// The action first on the card: each part labelled, its value escaped,
/// a multi-line value one line each (no line of a value can pass for a
/// part of its own), a shell command marked as such, a diff's lines
/// marked added or removed, a model-supplied part labelled so.
fn action(v: &ProposalView) -> Markup {
    html! {
        section.action #action aria-labelledby="action-h" {
            h2 #action-h { "What approving does" }
            p.summary #card-summary { (shown(summary(v))) }
            @if let Some(action) = &v.action {
                dl.parts {
                    // A plain part the summary above says already is not
                    // said twice (a built-in's); a command keeps its own,
                    // marked as shell.
                    @for part in action.parts.iter().filter(|p| !(p.syntax == "text" && p.text == action.summary)) {
                        dt {
                            (shown(&part.label))
                            @if part.model_supplied { " " span.warn.model { "model-supplied, unverified" } }
                        }
                        dd { (part_value(part)) }
                    }
                }
            }
        }
    }
}

/// One part's value: its lines, each escaped, marked by syntax.
fn part_value(part: &ActionPart) -> Markup {
    let body = part.text.strip_suffix('\n').unwrap_or(&part.text);
    let lines: Vec<String> = body.split('\n').map(shown).collect();
    html! {
        @match part.syntax.as_str() {
            "shell" => pre.block.shell aria-label="shell command" { span.prompt aria-hidden="true" { "$ " } (lines.join("\n")) },
            "diff" => pre.block.diff aria-label="unified diff" {
                @for line in &lines {
                    @let class = match line.chars().next() {
                        Some('+') if !line.starts_with("+++") => "add",
                        Some('-') if !line.starts_with("---") => "del",
                        _ => "ctx",
                    };
                    span class=(class) { (line) } "\n"
                }
            },
            _ if lines.len() > 1 => pre.block { (lines.join("\n")) },
            _ => code { (lines.join("")) },
        }
    }
}

/// When what is decided stops being usable, if anything expires: a
/// pending proposal's decision window, with the time left; an approval's
/// proof.
fn expiry(v: &ProposalView) -> Option<Markup> {
    if let Some(left) = results::time_left_text(v, time::OffsetDateTime::now_utc()) {
        return Some(html! {
            // `data-window`: the page's script keeps the time left current.
            span.expiry { time datetime=(v.decide_by) data-window { (left) } }
        });
    }
    (v.status() == ProposalStatus::Approved && !v.expires_at.is_empty()).then(|| {
        html! {
            span.expiry { "Proof expires " time datetime=(v.expires_at) { (v.expires_at) } }
        }
    })
}

/// The facts line of the list and the card: risk class and expiry.
fn facts(v: &ProposalView) -> Markup {
    html! {
        p.facts {
            (risk(v))
            @if let Some(e) = expiry(v) { " · " (e) }
        }
    }
}

/// The pending list as the live fragment the page and the event stream
/// share: each item's operation, action summary and risk.
pub(crate) fn pending_list(views: &[ProposalView]) -> Markup {
    html! {
        @if views.is_empty() {
            p #pending-empty { "Nothing is waiting for a decision." }
        }
        ul #pending-list.items {
            @for v in views {
                li.proposal data-proposal=(v.id) {
                    a.op href={ "/proposals/" (v.id) } {
                        strong { (shown(&v.operation)) }
                        " " span.pid { (v.id) }
                    }
                    p.summary { (shown(summary(v))) }
                    (facts(v))
                    @if !argument_warnings_of_json(&v.arguments_json).is_empty() {
                        p.warn.lookalike { "Non-ASCII text in the arguments: look closely" }
                    }
                    p.meta {
                        (head_of(&v.session)) ", session " code { (shown(&v.session)) }
                        ", proposed " (age(&v.created_at))
                    }
                }
            }
        }
    }
}

/// History: a filter form (works without JavaScript) and a table.
pub(crate) fn history(
    views: &[ProposalView],
    wanted: Option<ProposalStatus>,
    operation: &str,
) -> Markup {
    html! {
        h1 { "History" }
        form.filters method="get" action="/history" {
            label for="status" { "Status" }
            select #status name="status" {
                option value="" selected[wanted.is_none()] { "any" }
                @for s in ProposalStatus::ALL {
                    option value=(s.name()) selected[wanted == Some(*s)] { (s.name()) }
                }
            }
            label for="operation" { "Operation" }
            input #operation name="operation" value=(operation) placeholder="any";
            button type="submit" { "Filter" }
        }
        @if views.is_empty() {
            p { "No proposals match." }
        } @else {
            table {
                thead { tr { th { "Proposal" } th { "Operation" } th { "Action" } th { "Status" } th { "Decided by" } th { "Created" } th { "Reason" } } }
                tbody {
                    @for v in views {
                        tr {
                            td { a href={ "/proposals/" (v.id) } { (v.id) } }
                            td { (shown(&v.operation)) }
                            td { (shown(summary(v))) }
                            td { span class={ "status " (v.status().name()) } { (v.status().name()) } }
                            td { (shown(&v.provenance)) }
                            td { time datetime=(v.created_at) { (v.created_at) } }
                            td { (shown(&v.reason)) }
                        }
                    }
                }
            }
        }
    }
}

/// The warning for arguments holding non-ASCII text, computed from the
/// canonical arguments themselves (so it is there for a proposal stored
/// before the preview carried `Non-ASCII:` lines).
fn lookalikes(arguments_json: &str) -> Markup {
    let warnings = argument_warnings_of_json(arguments_json);
    html! {
        @if !warnings.is_empty() {
            section.lookalike aria-labelledby="lookalike-h" {
                h2 #lookalike-h { "Look closely: " span.warn { "non-ASCII text" } }
                p {
                    "These arguments hold characters outside ASCII. A letter of another script "
                    "can look exactly like the one you expect; invisible characters are shown "
                    "as " code { "\\u{..}" } " escapes."
                }
                ul {
                    @for w in &warnings {
                        li { code { (shown(&w.to_string())) } }
                    }
                }
            }
        }
    }
}

/// A part of the card one tap away: closed on a phone, opened by the
/// script on a wide screen (`data-wide-open`), its heading the summary.
fn more(id: &str, heading: Markup, body: Markup) -> Markup {
    html! {
        details.more #(id) data-wide-open {
            summary { h2 { (heading) } }
            (body)
        }
    }
}

/// One proposal with everything a person needs to decide, and the forms
/// for what can be decided in its status: first what a decision needs
/// (operation, summary, risk class, expiry, warnings, the decisions), then
/// the preview, the note, the arguments and the details, one tap away.
pub(crate) fn card(v: &ProposalView, ctx: &CardContext<'_>) -> Markup {
    html! {
        h1 { (shown(&v.operation)) " " span class={ "status " (v.status().name()) } { (v.status().name()) } }
        (action(v))
        (facts(v))
        @if !argument_warnings_of_json(&v.arguments_json).is_empty() {
            p.warn.lookalike { "Non-ASCII text in the arguments: look closely (below)" }
        }
        @if let Some(policy) = results::policy_text(v) {
            p.policy { "Policy: " (policy) }
        }
        (decisions(v, ctx))
        @if let Some(q) = &v.quorum {
            (quorum(q))
        }
        (lookalikes(&v.arguments_json))
        @if !ctx.unverified_fields.is_empty() {
            p.warn {
                "Model-supplied, unverified fields in the arguments: "
                @for (i, f) in ctx.unverified_fields.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (shown(f)) }
                }
            }
        }
        (more("preview", html! { "What will happen (the signer's preview)" }, preview_block(&v.preview)))
        @if !v.note.is_empty() {
            (more("note", html! { "Note from the agent " span.warn { "model-supplied, unverified" } }, block(&v.note)))
        }
        (more("arguments", html! { "Canonical arguments (exactly what is signed)" }, block(&v.arguments_json)))
        (more("facts", html! { "Details" }, html! {
            dl {
                (row("Proposal", &v.id))
                (row("Operation", &v.operation))
                (row("Contract revision", &v.contract_revision))
                (row("Policy revision", &v.policy_revision))
                (row("Arguments SHA-256", &v.arguments_sha256))
                (row("Proposing head", head_of(&v.session)))
                (row("Session", &v.session))
                (row("Principal", &v.principal))
                (row("Proposed", &format!("{} ({})", v.created_at, age(&v.created_at))))
                @if !v.decide_by.is_empty() {
                    (row("Decide by", &v.decide_by))
                }
                @if !v.expires_at.is_empty() {
                    (row("Proof expires", &v.expires_at))
                } @else if let Some(secs) = ctx.lifetime_secs {
                    (row("Expiry", &format!("an approval's proof is valid for {secs} s")))
                }
                @if !v.provenance.is_empty() {
                    (row("Decided by", &v.provenance))
                }
                @if !v.reason.is_empty() {
                    (row("Reason", &v.reason))
                }
                @if v.handoff_waiting {
                    (row("Handoff", "approved; waiting for the head of the proposing session to execute it"))
                }
            }
        }))
    }
}

/// A quorum: how many approvals of whom it needs, and each decision so
/// far, so every approver sees the others'.
fn quorum(q: &QuorumView) -> Markup {
    let approvals = countersign_service::approver::approvals(q).count();
    html! {
        section.quorum aria-labelledby="quorum-h" {
            h2 #quorum-h { "Quorum" }
            p {
                (approvals) " of " (q.required) " required approvals, from: "
                @for (i, name) in q.approvers.iter().enumerate() {
                    @if i > 0 { ", " }
                    code { (shown(name)) }
                }
            }
            @if !q.decisions.is_empty() {
                ol.quorum-decisions {
                    @for d in &q.decisions {
                        li {
                            code { (shown(&d.approver)) }
                            @match d.decision() {
                                QuorumDecision::Approve => " approved",
                                QuorumDecision::Deny => " denied",
                                QuorumDecision::Unspecified => " decided (in a way this console does not know)",
                            }
                            " at " (shown(&d.decided_at))
                            @if !d.reason.is_empty() { ": " (shown(&d.reason)) }
                        }
                    }
                }
            }
        }
    }
}

/// One approval's form: a POST with the page key and `delivery`, the
/// passkey ceremony's fields when the proposal needs one.
fn approve_form(v: &ProposalView, delivery: &str, label: &str, hint: Markup) -> Markup {
    let action = format!("/proposals/{}/approve", v.id);
    let passkey_form = v.passkey_required.then_some("decision");
    let challenge_url = v
        .passkey_required
        .then(|| format!("/proposals/{}/passkey-challenge", v.id));
    html! {
        form method="post" action=(action) data-passkey=[passkey_form] data-challenge=[challenge_url.as_deref()] {
            (page_key_field())
            input type="hidden" name="delivery" value=(delivery);
            @if v.passkey_required { input type="hidden" name="passkey" value=""; }
            button.approve type="submit" { (label) }
            p.hint { (hint) }
            @if v.passkey_required { p.refusal role="alert" hidden {} }
        }
    }
}

/// What approving for the proposing session does, by who runs it there.
fn handoff_hint(v: &ProposalView) -> Markup {
    let session = html! { code { (shown(&v.session)) } };
    html! {
        @match v.effect_kind.as_str() {
            "hook" => { "The agent's hook waiting in session " (session) " lets the agent run this call, once. Nothing runs in the console." },
            "mcp" => { "The gateway in session " (session) " calls the tool once, for the agent's waiting call (or its execute_approved). Nothing runs in the console." },
            _ => { "Authorizes ONE later execution by the head of session " (session) " (for example when the agent calls execute_approved)." },
        }
    }
}

/// The forms for this status. Every form is a POST with the page key.
fn decisions(v: &ProposalView, ctx: &CardContext<'_>) -> Markup {
    let action = |verb: &str| format!("/proposals/{}/{verb}", v.id);
    html! {
        @match v.status() {
            ProposalStatus::Pending => {
                @if let Some(why) = &ctx.not_approvable {
                    p.refusal role="alert" { "It cannot be approved now: " (with_code(why)) }
                } @else if v.operation == RULE_CREATE {
                    // A proposed rule: approving creates it; no proof, nothing runs.
                    section.decide aria-labelledby="approve-h" {
                        h2 #approve-h { "Create this rule" }
                        p.hint { "Approving CREATES the auto-approval rule shown above: the signer will then approve every proposal it covers WITHOUT asking you, until it expires, runs out of uses, or you revoke it (Rules)." }
                        form method="post" action=(action("approve")) {
                            (page_key_field())
                            input type="hidden" name="delivery" value="handoff";
                            button.approve type="submit" { "Approve and create the rule" }
                        }
                    }
                } @else {
                    // Only the decisions that can succeed (the approver
                    // service's table): a handoff always; running here only
                    // where this console runs the effect.
                    section.decide aria-labelledby="approve-h" {
                        h2 #approve-h { "Approve" }
                        @if v.passkey_required {
                            p.hint { "Approving needs your passkey, with user verification (a PIN or biometric)." }
                        }
                        (approve_form(v, "handoff", "Approve for the proposing session", handoff_hint(v)))
                        @if ApprovalDoes::of(v) == ApprovalDoes::RunHere {
                            (approve_form(v, "run", "Approve and run now", html! { "The console executes it now, once, and shows the outcome." }))
                        }
                    }
                }
                section.decide aria-labelledby="deny-h" {
                    h2 #deny-h { "Deny" }
                    form method="post" action=(action("deny")) {
                        (page_key_field())
                        label for="reason" { "Reason (required)" }
                        textarea #reason name="reason" required rows="2" maxlength="2000" {}
                        button.deny type="submit" { "Deny" }
                    }
                }
            }
            ProposalStatus::Approved => {
                @if ctx.can_hand_off {
                    section.decide aria-labelledby="handoff-h" {
                        h2 #handoff-h { "Hand off" }
                        p { "This approval was recorded for a run at an approver's interface, which cannot run it: nothing ran. Hand it off to the proposing session, or revoke it below." }
                        (approve_form(v, "handoff", "Hand off to the proposing session", handoff_hint(v)))
                    }
                }
                section.decide aria-labelledby="revoke-h" {
                    h2 #revoke-h { "Revoke" }
                    form method="post" action=(action("revoke")) {
                        (page_key_field())
                        label for="revoke-reason" { "Reason (optional)" }
                        input #revoke-reason name="reason" maxlength="2000";
                        button.deny type="submit" { "Revoke the unused proof" }
                    }
                }
            }
            ProposalStatus::Uncertain => {
                section.decide aria-labelledby="resolve-h" {
                    h2 #resolve-h { "Resolve the interrupted execution" }
                    p { "Its execution was interrupted: whether the effect happened is not known. Check the world first; this cannot be changed." }
                    form method="post" action=(action("resolve")) {
                        (page_key_field())
                        fieldset {
                            legend { "What happened?" }
                            label { input type="radio" name="applied" value="yes" required; " The effect DID happen (it will read applied)" }
                            label { input type="radio" name="applied" value="no"; " The effect did NOT happen (it will read failed)" }
                        }
                        label { input type="checkbox" name="checked" value="yes" required; " I checked the world" }
                        button type="submit" { "Record" }
                    }
                }
            }
            // Decided, or a status this console does not know: nothing to decide.
            ProposalStatus::Denied
            | ProposalStatus::Withdrawn
            | ProposalStatus::Revoked
            | ProposalStatus::Expired
            | ProposalStatus::Applied
            | ProposalStatus::Failed
            | ProposalStatus::Unspecified => {}
        }
    }
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
