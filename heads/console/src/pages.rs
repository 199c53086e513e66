//! The pages (GET): they read, and never change anything.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, Delivery, GetProposalRequest, ListPendingRequest, ListProposalsRequest,
    ProposalStatus, ProposalView,
};
use countersign_service::ApprovalDoes;
use maud::html;
use tonic::transport::Channel;

use crate::ConsoleState;
use crate::auth::{html_response, reading, refusal};
use crate::html::page;
use crate::views::{CardContext, card, history as history_view, pending_list};

/// How many proposals the history shows.
const HISTORY_LIMIT: u32 = 200;

/// The page for a failed signer call: a refusal says what and why, and
/// that nothing was done; an unavailable signer says so.
pub(crate) fn signer_failure(e: &SignerCallError) -> Response {
    match e {
        SignerCallError::Refused(r) => refusal(
            StatusCode::CONFLICT,
            &format!("{} ({}); nothing was done.", r.message, r.code),
        ),
        SignerCallError::Unavailable(m) => refusal(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!(
                "The signer is unavailable ({m}); nothing was done. Is `countersign up` running?"
            ),
        ),
        SignerCallError::Failed(m) => refusal(
            StatusCode::BAD_GATEWAY,
            &format!("The signer failed ({m}); nothing was done."),
        ),
    }
}

/// `GET /`: what waits for a decision.
pub(crate) async fn pending(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
) -> Response {
    if let Err(page) = reading(&state, &headers) {
        return *page;
    }
    let mut approver = state.approver.clone();
    let list = match approver.list_pending(ListPendingRequest {}).await {
        Ok(list) => list.into_inner().proposals,
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    let body = html! {
        h1 { "Waiting for your decision" }
        div #pending aria-live="polite" { (pending_list(&list)) }
        (sign_out())
    };
    html_response(
        StatusCode::OK,
        page("Pending", Some(list.len()), true, body),
    )
}

/// The sign-out form every paired page ends with.
fn sign_out() -> maud::Markup {
    html! {
        form.signout method="post" action="/logout" {
            (crate::html::page_key_field())
            button type="submit" { "Unpair this browser" }
        }
    }
}

/// `GET /history?status=&operation=`: decided and finished proposals.
pub(crate) async fn history(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    if let Err(page) = reading(&state, &headers) {
        return *page;
    }
    let mut status = String::new();
    let mut operation = String::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "status" => status = value.into_owned(),
            "operation" => operation = value.trim().to_owned(),
            _ => {}
        }
    }
    let wanted = match status.as_str() {
        "" => None,
        name => match name.parse::<ProposalStatus>() {
            Ok(wanted) => Some(wanted),
            Err(_) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    &format!("There is no status {status:?}; choose one of the list."),
                );
            }
        },
    };
    let mut approver = state.approver.clone();
    let listed = approver
        .list_proposals(ListProposalsRequest {
            status: wanted.unwrap_or(ProposalStatus::Unspecified).into(),
            limit: HISTORY_LIMIT,
        })
        .await;
    let views: Vec<ProposalView> = match listed {
        Ok(list) => list
            .into_inner()
            .proposals
            .into_iter()
            .filter(|v| operation.is_empty() || v.operation == operation)
            .collect(),
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    let body = html! {
        (history_view(&views, wanted, &operation))
        (sign_out())
    };
    html_response(StatusCode::OK, page("History", None, true, body))
}

/// `GET /proposals/{id}`: the card, with the decisions its status allows.
pub(crate) async fn proposal(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(page) = reading(&state, &headers) {
        return *page;
    }
    let mut approver = state.approver.clone();
    let view = match approver
        .get_proposal(GetProposalRequest {
            proposal_id: id.clone(),
        })
        .await
    {
        Ok(view) => view.into_inner(),
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    // An approval recorded for a run here that this kind cannot have (a
    // stuck one, from before the signer refused it): the person may hand
    // it off, if the signer would accept that now.
    let can_hand_off = view.status() == ProposalStatus::Approved
        && matches!(ApprovalDoes::of(&view), ApprovalDoes::HandOff { .. })
        && hand_off_checked(&mut approver, &view.id).await.is_ok();
    // Whatever the signer would refuse (a changed contract or policy), the
    // person learns before being asked.
    let not_approvable = if view.status().awaits_decision() {
        hand_off_checked(&mut approver, &view.id)
            .await
            .err()
            .map(|status| SignerCallError::from(status).to_string())
    } else {
        None
    };
    let registry = state.registry.last_loaded();
    let operation = registry.get(&view.operation);
    let unverified: Vec<String> = operation
        .map(|op| op.unverified_fields.clone())
        .unwrap_or_default();
    let ctx = CardContext {
        lifetime_secs: operation.map(|op| state.policy.lifetime_for(op)),
        unverified_fields: &unverified,
        not_approvable,
        can_hand_off,
    };
    let body = html! {
        (card(&view, &ctx))
        (sign_out())
    };
    html_response(
        StatusCode::OK,
        page(&format!("{} {}", view.operation, view.id), None, true, body),
    )
}

/// The signer's dry run of an approval of `id` for the proposing session
/// (the one delivery every kind that has a proof offers): its refusal, if
/// it would refuse.
async fn hand_off_checked(
    approver: &mut SignerClient<Channel>,
    id: &str,
) -> Result<(), tonic::Status> {
    approver
        .decide(DecideRequest {
            proposal_id: id.to_owned(),
            approve: true,
            delivery: Delivery::Handoff.into(),
            dry_run: true,
            ..Default::default()
        })
        .await
        .map(drop)
}

/// `GET /pair/{code}`: the page a pairing link opens. It changes nothing:
/// pairing happens only when the person presses the button (a POST).
pub(crate) async fn pair_link(Path(code): Path<String>) -> Response {
    let body = html! {
        h1 { "Pair this browser" }
        p { "This browser will be able to see this installation's proposals and decide them until the pairing expires or is revoked (" code { "countersign console sessions revoke" } ")." }
        form method="post" action="/pair" {
            input type="hidden" name="code" value=(code);
            button type="submit" autofocus { "Pair this browser" }
        }
    };
    html_response(StatusCode::OK, page("Pair", None, false, body))
}

/// Anything else.
pub(crate) async fn not_found() -> Response {
    refusal(StatusCode::NOT_FOUND, "There is no such page.")
}
