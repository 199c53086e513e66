//! The decisions (POST): each needs a paired session and its page key,
//! goes to the signer with the console's approver credential, and answers
//! with a page that says exactly what happened. A refusal changes nothing.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::header::USER_AGENT;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use countersign_gate::Outcome;
use countersign_service::{Approval, Approved, ApproverError, Delivery, Revoked};
use maud::html;

use crate::ConsoleState;
use crate::auth::{Paired, html_response, paired, refusal, set_cookie};
use crate::html::{block, notice, page};
use crate::pages::signer_failure;
use crate::sessions::PairingRefusal;

/// A form body's fields (`application/x-www-form-urlencoded`).
pub(crate) struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &Bytes) -> Self {
        Form(
            form_urlencoded::parse(body)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The one value of `name`; a repeated field counts as absent.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        let mut values = self.0.iter().filter(|(k, _)| k == name);
        match (values.next(), values.next()) {
            (Some((_, v)), None) => Some(v),
            _ => None,
        }
    }
}

/// A decision's POST: the paired session and its form, with the page
/// key checked before any handler runs; otherwise the page that says why.
pub(crate) struct Authorized {
    pub(crate) session: Paired,
    pub(crate) form: Form,
}

impl FromRequest<Arc<ConsoleState>> for Authorized {
    type Rejection = Response;

    async fn from_request(request: Request, state: &Arc<ConsoleState>) -> Result<Self, Response> {
        let session = paired(state, request.headers()).map_err(|page| *page)?;
        let body = Bytes::from_request(request, state)
            .await
            .map_err(|e| unreadable_form(e.status()))?;
        let form = Form::parse(&body);
        session
            .check_page_key(form.get(crate::auth::PAGE_KEY_FIELD))
            .map_err(|page| *page)?;
        Ok(Self { session, form })
    }
}

/// The page for a form body that could not be read: larger than
/// [`crate::MAX_BODY_BYTES`] (413), or cut off.
fn unreadable_form(status: StatusCode) -> Response {
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "The form is larger than the console accepts ({} bytes); nothing was done.",
            crate::MAX_BODY_BYTES
        )
    } else {
        "The form could not be read; nothing was done.".to_owned()
    };
    refusal(status, &message)
}

/// The page after a decision.
fn done(status: StatusCode, heading: &str, message: &str, id: &str) -> Response {
    let back = format!("/proposals/{id}");
    html_response(
        status,
        page(
            heading,
            None,
            true,
            notice(heading, message, Some((&back, "Back to the proposal"))),
        ),
    )
}

/// `POST /proposals/{id}/approve` with `delivery=handoff|run`.
pub(crate) async fn approve(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let delivery = match form.get("delivery") {
        Some("handoff") => Delivery::Handoff { session: None },
        Some("run") => Delivery::RunNow,
        _ => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "Choose how the approval is delivered (for the proposing session, or run now); nothing was approved.",
            );
        }
    };
    // A passkey approval's assertion, as the page's script put it there.
    let passkey = match form.get("passkey").filter(|p| !p.is_empty()) {
        None => None,
        Some(text) => match crate::passkeys::assertion_field(text) {
            Ok(assertion) => Some(assertion),
            Err(e) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    &format!("{e}; nothing was approved."),
                );
            }
        },
    };
    let approval = Approval {
        proposal_id: id,
        delivery,
        passkey,
    };
    match state.decisions.approve(approval).await {
        Ok(approved) => approved_page(approved),
        Err(e) => approver_failure(e),
    }
}

/// The page that says what an approval did.
fn approved_page(approved: Approved) -> Response {
    match approved {
        Approved::RuleCreated { proposal, rule_id } => done(
            StatusCode::OK,
            "Rule created",
            &format!(
                "Approved {}: rule {rule_id} is created and approves what it covers without asking (see Rules).",
                proposal.id
            ),
            &proposal.id,
        ),
        Approved::QuorumPending {
            proposal,
            approvals,
            required,
        } => done(
            StatusCode::OK,
            "Approval recorded",
            &format!(
                "Your approval of {} is recorded: {approvals} of {required} required approvals. No proof exists until the quorum is reached; nothing was executed.",
                proposal.id
            ),
            &proposal.id,
        ),
        Approved::HandedOff {
            proposal,
            expires_at,
        } => {
            let runs = match proposal.effect_kind.as_str() {
                "hook" => "the agent's hook waiting there lets the agent run the call, once",
                "mcp" => {
                    "the gateway there calls the tool once, for the agent's waiting call (or its execute_approved)"
                }
                _ => "the head there may execute it ONCE",
            };
            done(
                StatusCode::OK,
                "Approved",
                &format!(
                    "Approved {}: handed off to session {}: {runs}. The authorization expires at {expires_at}.",
                    proposal.id, proposal.session
                ),
                &proposal.id,
            )
        }
        Approved::ProofIssued { proposal, .. } => refusal(
            StatusCode::BAD_GATEWAY,
            &format!(
                "The signer returned a proof the console did not ask for; revoke the approval of {}.",
                proposal.id
            ),
        ),
        Approved::Ran { proposal, outcome } => {
            let result = outcome
                .disposition()
                .filter(|d| !d.result.is_null())
                .map(|d| d.result.to_string());
            // A refusal is not a run: its title says so (nothing applied).
            let title = match &outcome {
                Outcome::Refused(_) => "Approved, but not run",
                _ => "Approved and run",
            };
            let body = html! {
                h1 { (title) }
                p.message role="status" { (crate::html::shown(&outcome.summary())) }
                @if let Some(result) = &result {
                    h2 { "Result" }
                    (block(result))
                }
                p { a href={ "/proposals/" (proposal.id) } { "Back to the proposal" } }
            };
            html_response(StatusCode::OK, page(title, None, true, body))
        }
    }
}

/// The page for an approver operation that did not complete.
fn approver_failure(e: ApproverError) -> Response {
    match e {
        ApproverError::Signer(e) => signer_failure(&e),
        ApproverError::Unusable {
            proposal_id,
            detail,
        } => refusal(
            StatusCode::BAD_GATEWAY,
            &format!(
                "The signer's answer was unusable ({detail}); revoke the approval of {proposal_id}."
            ),
        ),
        failed @ ApproverError::RunFailed { .. } => {
            tracing::error!(error = %failed, "approve and run: the execution failed");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("{failed}. See the proposal's status."),
            )
        }
    }
}

/// `POST /proposals/{id}/deny` with a required `reason`.
pub(crate) async fn deny(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let reason = form.get("reason").map(str::trim).unwrap_or_default();
    if reason.is_empty() {
        return refusal(
            StatusCode::BAD_REQUEST,
            "A denial needs a reason; nothing was denied.",
        );
    }
    match state.decisions.deny(&id, reason).await {
        Ok(_) => done(StatusCode::OK, "Denied", &format!("Denied {id}."), &id),
        Err(e) => approver_failure(e),
    }
}

/// `POST /proposals/{id}/revoke` with an optional `reason`.
pub(crate) async fn revoke(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let reason = form.get("reason").map(str::trim).unwrap_or_default();
    match state.decisions.revoke(&id, reason).await {
        Ok(Revoked::Revoked) => done(
            StatusCode::OK,
            "Revoked",
            &format!("Revoked {id}: its proof can no longer be used."),
            &id,
        ),
        Ok(Revoked::AlreadyUsed) => done(
            StatusCode::CONFLICT,
            "Too late",
            &format!("The proof of {id} was already used; nothing was revoked."),
            &id,
        ),
        Ok(Revoked::NothingToRevoke) => done(
            StatusCode::CONFLICT,
            "Nothing to revoke",
            &format!("{id} has no unused proof to revoke; nothing was done."),
            &id,
        ),
        Err(e) => approver_failure(e),
    }
}

/// `POST /proposals/{id}/resolve` with `applied=yes|no` and `checked=yes`.
pub(crate) async fn resolve(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let applied = match form.get("applied") {
        Some("yes") => true,
        Some("no") => false,
        _ => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "Say whether the effect happened; nothing was recorded.",
            );
        }
    };
    if form.get("checked") != Some("yes") {
        return refusal(
            StatusCode::BAD_REQUEST,
            "Confirm that you checked the world; nothing was recorded.",
        );
    }
    match state.decisions.resolve(&id, applied).await {
        Ok(resolved_by) => {
            let status = if applied { "applied" } else { "not applied" };
            done(
                StatusCode::OK,
                "Resolved",
                &format!("Resolved {id} as {status} (by {resolved_by})."),
                &id,
            )
        }
        Err(e) => approver_failure(e),
    }
}

/// `POST /pair` with `code`: redeem a one-time pairing code, set the
/// session cookie and go to the pending list.
pub(crate) async fn pair(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = Form::parse(&body);
    let code = form.get("code").map(str::trim).unwrap_or_default();
    let user_agent = headers.get(USER_AGENT).and_then(|v| v.to_str().ok());
    let device = crate::devices::name_from_user_agent(user_agent);
    match state.sessions.redeem(code, &device) {
        Ok(Ok(redeemed)) => {
            tracing::info!(session = %redeemed.record.id, %device, "a browser was paired");
            // The page key goes to this page's script, once: it keeps it in
            // the origin's storage and goes on to the pending list.
            let body = html! {
                div #new-page-key hidden data-key=(redeemed.page_key.expose_secret()) {}
                (notice(
                    "Paired",
                    "This browser is paired. Deciding needs JavaScript: the console's script keeps this pairing's page key and adds it to every decision.",
                    Some(("/", "Continue")),
                ))
            };
            let mut response = html_response(StatusCode::OK, page("Paired", None, true, body));
            set_cookie(
                &mut response,
                state.sessions.approver().as_str(),
                redeemed.session.expose_secret(),
            );
            response
        }
        Ok(Err(why)) => {
            let status = match why {
                PairingRefusal::Invalid => StatusCode::FORBIDDEN,
                PairingRefusal::Used | PairingRefusal::Expired => StatusCode::GONE,
            };
            refusal(status, &format!("{why}; this browser was not paired."))
        }
        Err(e) => {
            tracing::error!(error = %e, "the console session store failed");
            refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The console's session store cannot be written; see the console's log.",
            )
        }
    }
}

/// `POST /logout`: revoke this browser's session and forget the cookie.
pub(crate) async fn logout(
    State(state): State<Arc<ConsoleState>>,
    Authorized { session, .. }: Authorized,
) -> Response {
    if let Err(e) = state.sessions.revoke(&session.record.id) {
        tracing::error!(error = %e, "cannot revoke a console session");
        return refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The console's session store cannot be written; this browser is still paired.",
        );
    }
    crate::push_devices::published_or_later(&state).await;
    crate::devices::unpaired_here(&state, session.record.device_name())
}
