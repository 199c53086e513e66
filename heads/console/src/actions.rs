//! The decisions (POST): each needs a paired session and its page key,
//! goes to the signer with the console's approver credential, and answers
//! with a page that says exactly what happened. A refusal changes nothing.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::{
    DecideRequest, Delivery, ResolveUncertainRequest, RevokeOutcome, RevokeRequest,
};
use countersign_verifier::Proof;
use maud::html;

use crate::ConsoleState;
use crate::auth::{Paired, clear_cookie, html_response, paired, refusal, set_cookie};
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
    let run_now = match form.get("delivery") {
        Some("handoff") => false,
        Some("run") => true,
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
    let request = DecideRequest {
        proposal_id: id.clone(),
        approve: true,
        delivery: if run_now {
            Delivery::Direct
        } else {
            Delivery::Handoff
        }
        .into(),
        passkey,
        ..Default::default()
    };
    let mut approver = state.approver.clone();
    let mut decided = match approver.decide(request).await {
        Ok(d) => d.into_inner(),
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    let Some(view) = decided.proposal.take() else {
        return refusal(
            StatusCode::BAD_GATEWAY,
            "The signer answered without the proposal.",
        );
    };
    if !decided.created_rule_id.is_empty() {
        // A rule.create proposal: the approval created the rule; there is
        // no proof to run.
        return done(
            StatusCode::OK,
            "Rule created",
            &format!(
                "Approved {}: rule {} is created and approves what it covers without asking (see Rules).",
                view.id, decided.created_rule_id
            ),
            &view.id,
        );
    }
    if decided.proof_sha256.is_empty() {
        // A quorum approval short of the required count: recorded, no proof.
        let (approvals, required) = view.quorum.as_ref().map_or((0, 0), |q| {
            let approvals = q
                .decisions
                .iter()
                .filter(|d| d.decision == "approve")
                .count();
            (approvals, q.required)
        });
        return done(
            StatusCode::OK,
            "Approval recorded",
            &format!(
                "Your approval of {} is recorded: {approvals} of {required} required approvals. No proof exists until the quorum is reached; nothing was executed.",
                view.id
            ),
            &view.id,
        );
    }
    if !run_now {
        return done(
            StatusCode::OK,
            "Approved",
            &format!(
                "Approved {} for ONE execution by the head of session {}; its authorization expires at {}.",
                view.id, view.session, decided.expires_at
            ),
            &view.id,
        );
    }
    let proof = match Proof::from_text(std::mem::take(&mut decided.proof)) {
        Ok(proof) => proof,
        Err(e) => {
            return refusal(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "The signer returned an unusable proof ({e}); revoke the approval of {id}."
                ),
            );
        }
    };
    let outcome = match state.gate.execute(&view.id, &view.session, &proof).await {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!(proposal_id = %view.id, error = %e, "approve and run: the gate failed");
            return refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!(
                    "Approved, but the execution failed before an outcome was recorded ({e}). See the proposal's status."
                ),
            );
        }
    };
    let result = outcome
        .disposition()
        .filter(|d| !d.result.is_null())
        .map(|d| d.result.to_string());
    let body = html! {
        h1 { "Approved and run" }
        p.message role="status" { (crate::html::shown(&outcome.summary())) }
        @if let Some(result) = &result {
            h2 { "Result" }
            (block(result))
        }
        p { a href={ "/proposals/" (view.id) } { "Back to the proposal" } }
    };
    html_response(StatusCode::OK, page("Approved and run", None, true, body))
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
    let mut approver = state.approver.clone();
    let request = DecideRequest {
        proposal_id: id.clone(),
        approve: false,
        reason: reason.to_owned(),
        ..Default::default()
    };
    match approver.decide(request).await {
        Ok(_) => done(StatusCode::OK, "Denied", &format!("Denied {id}."), &id),
        Err(status) => signer_failure(&SignerCallError::from(status)),
    }
}

/// `POST /proposals/{id}/revoke` with an optional `reason`.
pub(crate) async fn revoke(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let mut approver = state.approver.clone();
    let request = RevokeRequest {
        proposal_id: id.clone(),
        reason: form
            .get("reason")
            .map(str::trim)
            .unwrap_or_default()
            .to_owned(),
    };
    let response = match approver.revoke(request).await {
        Ok(r) => r.into_inner(),
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    match RevokeOutcome::try_from(response.outcome) {
        Ok(RevokeOutcome::Revoked) => done(
            StatusCode::OK,
            "Revoked",
            &format!("Revoked {id}: its proof can no longer be used."),
            &id,
        ),
        Ok(RevokeOutcome::AlreadyUsed) => done(
            StatusCode::CONFLICT,
            "Too late",
            &format!("The proof of {id} was already used; nothing was revoked."),
            &id,
        ),
        Ok(RevokeOutcome::NothingToRevoke) => done(
            StatusCode::CONFLICT,
            "Nothing to revoke",
            &format!("{id} has no unused proof to revoke; nothing was done."),
            &id,
        ),
        _ => refusal(
            StatusCode::BAD_GATEWAY,
            "The signer gave an unknown revocation outcome.",
        ),
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
    let mut approver = state.approver.clone();
    let request = ResolveUncertainRequest {
        proposal_id: id.clone(),
        applied,
    };
    match approver.resolve_uncertain(request).await {
        Ok(r) => {
            let r = r.into_inner();
            let status = if applied { "applied" } else { "not applied" };
            done(
                StatusCode::OK,
                "Resolved",
                &format!("Resolved {id} as {status} (by {}).", r.resolved_by),
                &id,
            )
        }
        Err(status) => signer_failure(&SignerCallError::from(status)),
    }
}

/// `POST /pair` with `code`: redeem a one-time pairing code, set the
/// session cookie and go to the pending list.
pub(crate) async fn pair(State(state): State<Arc<ConsoleState>>, body: Bytes) -> Response {
    let form = Form::parse(&body);
    let code = form.get("code").map(str::trim).unwrap_or_default();
    match state.sessions.redeem(code) {
        Ok(Ok(redeemed)) => {
            tracing::info!(session = %redeemed.record.id, "a browser was paired");
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
    let body = html! {
        div #forget-page-key hidden {}
        (notice("Unpaired", "This browser is no longer paired.", None))
    };
    let mut response = html_response(StatusCode::OK, page("Unpaired", None, false, body));
    clear_cookie(&mut response, state.sessions.approver().as_str());
    response
}
