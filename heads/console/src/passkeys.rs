//! Passkeys in the console: the page that lists, enrols and removes them,
//! and the challenge endpoints the page's script calls before it runs a
//! WebAuthn ceremony (`assets/console.js`).
//!
//! The console only carries bytes between the browser and the signer: the
//! signer draws every challenge and checks every registration and
//! assertion. A challenge endpoint answers JSON (the script's), everything
//! else a page; each needs a paired session and its page key
//! ([`Authorized`]). Without JavaScript nothing here can succeed, and a
//! passkey approval is refused by the signer as `passkey_required`.

use countersign_proto::reason::Reason;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, BeginRemovalRequest, Delivery, EnrolRequest,
    ListPasskeysRequest, PasskeyAssertion, PasskeyChallenge, PasskeyView, RemovePasskeyRequest,
};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::json;

use crate::ConsoleState;
use crate::actions::Authorized;
use crate::auth::{html_response, refusal};
use crate::html::{notice, page, page_key_field, shown};
use crate::pages::signer_failure;

/// An assertion as the script sends it: every byte string base64url.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AssertionJson {
    challenge_id: String,
    credential_id: String,
    authenticator_data: String,
    client_data_json: String,
    signature: String,
}

/// A registration as the script sends it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistrationJson {
    challenge_id: String,
    attestation_object: String,
    client_data_json: String,
}

fn bytes(field: &str, text: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| format!("{field} is not base64url"))
}

impl AssertionJson {
    fn into_wire(self) -> Result<PasskeyAssertion, String> {
        Ok(PasskeyAssertion {
            credential_id: bytes("credential_id", &self.credential_id)?,
            authenticator_data: bytes("authenticator_data", &self.authenticator_data)?,
            client_data_json: bytes("client_data_json", &self.client_data_json)?,
            signature: bytes("signature", &self.signature)?,
            challenge_id: self.challenge_id,
        })
    }
}

/// The assertion a form field carries (JSON, as the script wrote it).
pub(crate) fn assertion_field(text: &str) -> Result<PasskeyAssertion, String> {
    serde_json::from_str::<AssertionJson>(text)
        .map_err(|e| format!("the passkey answer is malformed ({e})"))?
        .into_wire()
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    let mut response = (status, value.to_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A signer refusal or failure as the script shows it.
fn json_failure(e: &SignerCallError) -> Response {
    let (status, reason) = match e {
        SignerCallError::Refused(r) => (StatusCode::CONFLICT, r.code.as_str()),
        SignerCallError::Unavailable(_) => {
            (StatusCode::SERVICE_UNAVAILABLE, Reason::Unavailable.code())
        }
        SignerCallError::Failed(_) => (StatusCode::BAD_GATEWAY, "failed"),
    };
    json_response(
        status,
        &json!({"reason": reason, "message": format!("{e}; nothing was done.")}),
    )
}

fn challenge_json(c: &PasskeyChallenge) -> serde_json::Value {
    json!({
        "challenge_id": c.challenge_id,
        "challenge": URL_SAFE_NO_PAD.encode(&c.challenge),
        "rp_id": c.rp_id,
        "allowed": c.allowed_credential_ids.iter().map(|id| URL_SAFE_NO_PAD.encode(id)).collect::<Vec<_>>(),
        "timeout_ms": c.timeout_ms,
    })
}

/// `POST /proposals/{id}/passkey-challenge` with `delivery=handoff|run`.
pub(crate) async fn decision_challenge(
    State(state): State<Arc<ConsoleState>>,
    Path(id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let delivery = match form.get("delivery") {
        Some("handoff") => Delivery::Handoff,
        Some("run") => Delivery::Direct,
        _ => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"reason": Reason::InvalidField.code(), "message": "delivery must be handoff or run"}),
            );
        }
    };
    let mut approver = state.approver.clone();
    match approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: id,
            delivery: delivery.into(),
            execute_in_session: String::new(),
        })
        .await
    {
        Ok(c) => json_response(StatusCode::OK, &challenge_json(&c.into_inner())),
        Err(status) => json_failure(&SignerCallError::from(status)),
    }
}

/// `GET /passkeys`: this console's approver's passkeys, the enrolment
/// form and a removal form for each active one.
pub(crate) async fn page_of_passkeys(
    State(state): State<Arc<ConsoleState>>,
    headers: HeaderMap,
) -> Response {
    if let Err(page) = crate::auth::reading(&state, &headers) {
        return *page;
    }
    let mut approver = state.approver.clone();
    let list = match approver.list_passkeys(ListPasskeysRequest {}).await {
        Ok(list) => list.into_inner(),
        Err(status) => return signer_failure(&SignerCallError::from(status)),
    };
    let active: Vec<&PasskeyView> = list
        .passkeys
        .iter()
        .filter(|p| p.removed_at.is_empty())
        .collect();
    let body = html! {
        h1 { "Passkeys" }
        p {
            @if list.required {
                "Every approval needs one of these passkeys, with user verification (a PIN or biometric)."
            } @else {
                "Operations that require it need one of these passkeys, with user verification (a PIN or biometric), to be approved."
            }
        }
        (table(&list.passkeys, active.len()))
        section.decide aria-labelledby="enrol-h" {
            h2 #enrol-h { "Enrol a passkey" }
            form method="post" action="/passkeys/enrol" data-passkey="enrol" {
                (page_key_field())
                input type="hidden" name="registration" value="";
                label for="passkey-name" { "Name" }
                input #passkey-name name="name" required maxlength="64" placeholder="for example: laptop";
                label for="enrolment-code" { "Enrolment code" }
                input #enrolment-code name="enrolment_code" required autocomplete="off";
                p.hint { "Every passkey needs a one-time code the signer's administrator draws for this console's approver: " code { "countersign-signer passkeys enrolment-code --approver console" } " (or the name the console was started with, " code { "--as NAME" } "). A passkey enrolled here is this approver's alone." }
                button type="submit" { "Enrol" }
                p.refusal role="alert" hidden {}
            }
        }
    };
    html_response(StatusCode::OK, page("Passkeys", None, true, body))
}

fn table(passkeys: &[PasskeyView], active: usize) -> Markup {
    html! {
        @if passkeys.is_empty() {
            p { "No passkey is enrolled." }
        } @else {
            table {
                thead { tr { th { "Name" } th { "Enrolled" } th { "Authorized by" } th { "Status" } th {} } }
                tbody {
                    @for p in passkeys {
                        tr {
                            td { (shown(&p.name)) }
                            td { (shown(&p.enrolled_at)) " by " (shown(&p.enrolled_by)) }
                            td { code { (shown(&p.authorized_by)) } }
                            td { @if p.removed_at.is_empty() { "active" } @else { "removed " (shown(&p.removed_at)) } }
                            td {
                                @if p.removed_at.is_empty() && active > 1 {
                                    form method="post" action={ "/passkeys/" (p.credential_id) "/remove" } data-passkey="remove" {
                                        (page_key_field())
                                        input type="hidden" name="assertion" value="";
                                        button.deny type="submit" { "Remove" }
                                        p.refusal role="alert" hidden {}
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `POST /passkeys/enrolment-challenge`.
pub(crate) async fn enrolment_challenge(
    State(state): State<Arc<ConsoleState>>,
    _: Authorized,
) -> Response {
    let mut approver = state.approver.clone();
    match approver.begin_enrolment(BeginEnrolmentRequest {}).await {
        Ok(c) => {
            let c = c.into_inner();
            let b64 = |ids: &[Vec<u8>]| {
                ids.iter()
                    .map(|id| URL_SAFE_NO_PAD.encode(id))
                    .collect::<Vec<_>>()
            };
            json_response(
                StatusCode::OK,
                &json!({
                    "challenge_id": c.challenge_id,
                    "creation_challenge": URL_SAFE_NO_PAD.encode(&c.creation_challenge),
                    "rp_id": c.rp_id,
                    "user_id": URL_SAFE_NO_PAD.encode(&c.user_id),
                    "user_name": c.user_name,
                    "exclude": b64(&c.exclude_credential_ids),
                    "timeout_ms": c.timeout_ms,
                }),
            )
        }
        Err(status) => json_failure(&SignerCallError::from(status)),
    }
}

fn done(heading: &str, message: &str) -> Response {
    html_response(
        StatusCode::OK,
        page(
            heading,
            None,
            true,
            notice(
                heading,
                message,
                Some(("/passkeys", "Back to the passkeys")),
            ),
        ),
    )
}

/// `POST /passkeys/enrol` with `name`, `registration` (the script's JSON)
/// and `enrolment_code` (every enrolment needs one, drawn for this
/// console's approver).
pub(crate) async fn enrol(
    State(state): State<Arc<ConsoleState>>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let registration = match form
        .get("registration")
        .filter(|r| !r.is_empty())
        .map(serde_json::from_str::<RegistrationJson>)
    {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("The registration is malformed ({e}); nothing was enrolled."),
            );
        }
        None => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "No passkey was created (enrolling needs JavaScript and a passkey); nothing was enrolled.",
            );
        }
    };
    let request = (|| {
        Ok::<_, String>(EnrolRequest {
            challenge_id: registration.challenge_id,
            name: form.get("name").unwrap_or_default().to_owned(),
            attestation_object: bytes("attestation_object", &registration.attestation_object)?,
            client_data_json: bytes("client_data_json", &registration.client_data_json)?,
            enrolment_code: form.get("enrolment_code").unwrap_or_default().to_owned(),
        })
    })();
    let request = match request {
        Ok(r) => r,
        Err(e) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("{e}; nothing was enrolled."),
            );
        }
    };
    let mut approver = state.approver.clone();
    match approver.enrol(request).await {
        Ok(view) => {
            let view = view.into_inner();
            done(
                "Passkey enrolled",
                &format!("Enrolled the passkey {:?}.", view.name),
            )
        }
        Err(status) => signer_failure(&SignerCallError::from(status)),
    }
}

/// `POST /passkeys/{id}/removal-challenge`.
pub(crate) async fn removal_challenge(
    State(state): State<Arc<ConsoleState>>,
    Path(credential_id): Path<String>,
    _: Authorized,
) -> Response {
    let mut approver = state.approver.clone();
    match approver
        .begin_removal(BeginRemovalRequest { credential_id })
        .await
    {
        Ok(c) => json_response(StatusCode::OK, &challenge_json(&c.into_inner())),
        Err(status) => json_failure(&SignerCallError::from(status)),
    }
}

/// `POST /passkeys/{id}/remove` with `assertion` (the script's JSON).
pub(crate) async fn remove(
    State(state): State<Arc<ConsoleState>>,
    Path(credential_id): Path<String>,
    Authorized { form, .. }: Authorized,
) -> Response {
    let authorization = match form
        .get("assertion")
        .filter(|a| !a.is_empty())
        .map(assertion_field)
    {
        Some(Ok(a)) => a,
        Some(Err(e)) => {
            return refusal(
                StatusCode::BAD_REQUEST,
                &format!("{e}; nothing was removed."),
            );
        }
        None => {
            return refusal(
                StatusCode::BAD_REQUEST,
                "Removing a passkey needs an enrolled passkey's confirmation (and JavaScript); nothing was removed.",
            );
        }
    };
    let mut approver = state.approver.clone();
    match approver
        .remove_passkey(RemovePasskeyRequest {
            credential_id,
            authorization: Some(authorization),
        })
        .await
    {
        Ok(view) => done(
            "Passkey removed",
            &format!("Removed the passkey {:?}.", view.into_inner().name),
        ),
        Err(status) => signer_failure(&SignerCallError::from(status)),
    }
}
