//! The data operations themselves, once a request is authenticated and its
//! parameters validated: each is a thin call to the signer (as this
//! installation's head) or to the gate, answered with the surface's result
//! value, exactly as the CLI's `--json` prints it.

use std::sync::Arc;

use axum::response::Response;
use countersign_gate::{Outcome, Refused};
use countersign_proto::v1::{
    GetProposalRequest, ListProposalsRequest, ProposeRequest, WithdrawRequest,
};
use countersign_registry::Operation;
use countersign_surface::operations::DataOperation;
use countersign_surface::results;
use countersign_verifier::{Proof, Refusal};
use serde_json::{Map, Value};

use crate::ApiState;
use crate::respond::{self, ApiError, signer_refusal};

fn string(params: &Map<String, Value>, key: &str) -> String {
    params
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Run data operation `op` with validated `params` for `session`.
pub(crate) async fn dispatch(
    state: &Arc<ApiState>,
    op: &DataOperation,
    registry_op: Option<&Operation>,
    mut params: Map<String, Value>,
    session: &str,
) -> Result<Response, ApiError> {
    let mut head = state.parts.head.clone();
    let proposal_id = string(&params, "proposal_id");
    let answer = match op.name {
        "list_operations" => {
            let ops: Vec<Value> = state
                .parts
                .registry
                .operations()
                .map(results::operation)
                .collect();
            return Ok(respond::ok(&Value::Array(ops)));
        }
        "propose" => {
            let Some(reg) = registry_op else {
                return Err(ApiError::Internal("propose without an operation".into()));
            };
            let arguments_json = params
                .get("arguments")
                .map(Value::to_string)
                .unwrap_or_default();
            head.propose(ProposeRequest {
                operation: reg.name.clone(),
                arguments_json,
                session: session.to_string(),
                note: string(&params, "note"),
            })
            .await
            .map(|r| results::proposal(&r.into_inner()))
        }
        "get_proposal" => head
            .get_proposal(GetProposalRequest { proposal_id })
            .await
            .map(|r| results::proposal(&r.into_inner())),
        "list_proposals" => head
            .list_proposals(ListProposalsRequest {
                status: string(&params, "status"),
                limit: params
                    .get("limit")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(100),
            })
            .await
            .map(|r| results::proposals(&r.into_inner().proposals)),
        "withdraw" => head
            .withdraw(WithdrawRequest { proposal_id })
            .await
            .map(|r| results::proposal(&r.into_inner())),
        "execute" => {
            let gate = state.parts.gate.clone();
            let session = session.to_string();
            // Its own task: a client that goes away, or the request
            // timeout, must not cut an effect off between intent and completion.
            let outcome = tokio::spawn(async move {
                let outcome = gate
                    .execute_handoff(&mut head, &proposal_id, &session)
                    .await;
                (proposal_id, outcome)
            })
            .await
            .map_err(|e| ApiError::Internal(format!("execution task: {e}")))?;
            return execution(&outcome.0, outcome.1);
        }
        "execute_with_proof" => {
            let text = match params.remove("proof") {
                Some(Value::String(text)) => text,
                _ => String::new(),
            };
            let proof = match Proof::from_text(text) {
                Ok(proof) => proof,
                Err(_) => {
                    let refused = Outcome::Refused(Refused::Proof(Refusal::Malformed));
                    return Ok(respond::ok(&results::outcome(&proposal_id, &refused)));
                }
            };
            let gate = state.parts.gate.clone();
            let session = session.to_string();
            let outcome = tokio::spawn(async move {
                let outcome = gate.execute(&proposal_id, &session, &proof).await;
                (proposal_id, outcome)
            })
            .await
            .map_err(|e| ApiError::Internal(format!("execution task: {e}")))?;
            return execution(&outcome.0, outcome.1);
        }
        "get_result" => return result(state, &proposal_id).await,
        other => {
            return Err(ApiError::Internal(format!(
                "no handler for data operation {other}"
            )));
        }
    };
    match answer {
        Ok(value) => Ok(respond::ok(&value)),
        Err(status) => signer_refusal(&status),
    }
}

fn execution(
    proposal_id: &str,
    outcome: Result<Outcome, countersign_gate::GateError>,
) -> Result<Response, ApiError> {
    let outcome = outcome.map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(respond::ok(&results::outcome(proposal_id, &outcome)))
}

/// The recorded disposition of one of this principal's proposals.
async fn result(state: &ApiState, proposal_id: &str) -> Result<Response, ApiError> {
    let ledger = state.parts.gate.ledger();
    let owned = ledger
        .proposal(proposal_id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .is_some_and(|p| p.proposal.principal == state.parts.principal);
    if !owned {
        return Ok(respond::refused(
            "unknown_proposal",
            &format!("no proposal {proposal_id} for this principal"),
        ));
    }
    match ledger
        .disposition(proposal_id)
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
    {
        Some(d) => Ok(respond::ok(&results::disposition(&d))),
        None => Ok(respond::refused(
            "not_executed",
            &format!("{proposal_id} has not been executed"),
        )),
    }
}
