//! The API's adapter to the data-operation service: validated request
//! parameters become an [`Operation`], and the service's [`Answer`] becomes
//! the response, exactly as the CLI's `--json` prints it. No operation is
//! implemented here.

use std::sync::Arc;

use axum::response::Response;
use countersign_gate::{Outcome, Refused};
use countersign_registry::Operation as RegistryOperation;
use countersign_service::{Answer, Fault, Operation};
use countersign_surface::operations::{DataOperation, OperationKey};
use countersign_surface::results;
use countersign_verifier::{Proof, Refusal};
use serde_json::{Map, Value};

use crate::ApiState;
use crate::respond::{self, ApiError};

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
    registry_op: Option<&RegistryOperation>,
    mut params: Map<String, Value>,
    session: &str,
) -> Result<Response, ApiError> {
    let Some(key) = OperationKey::of(op.name) else {
        return Err(ApiError::Internal(format!(
            "no service operation for {}",
            op.name
        )));
    };
    let id = string(&params, "proposal_id");
    let operation = match key {
        OperationKey::ListOperations => Operation::ListOperations,
        OperationKey::Propose => {
            let Some(reg) = registry_op else {
                return Err(ApiError::Internal("propose without an operation".into()));
            };
            Operation::Propose {
                operation: reg.name.clone(),
                arguments: params
                    .get("arguments")
                    .map(Value::to_string)
                    .unwrap_or_default(),
                note: string(&params, "note"),
            }
        }
        OperationKey::GetProposal => Operation::GetProposal { id },
        OperationKey::ListProposals => Operation::ListProposals {
            status: string(&params, "status"),
            limit: params
                .get("limit")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(100),
        },
        OperationKey::Withdraw => Operation::Withdraw { id },
        OperationKey::ExecuteHandoff => Operation::ExecuteHandoff { id },
        OperationKey::ExecuteWithProof => {
            let text = match params.remove("proof") {
                Some(Value::String(text)) => text,
                _ => String::new(),
            };
            match Proof::from_text(text) {
                Ok(proof) => Operation::ExecuteWithProof { id, proof },
                Err(_) => {
                    let refused = Outcome::Refused(Refused::Proof(Refusal::Malformed));
                    return Ok(respond::ok(&results::outcome(&id, &refused)));
                }
            }
        }
        OperationKey::GetResult => Operation::GetResult { id },
    };
    render(state.service.call(operation, session).await)
}

/// The service's answer on the wire: a result or a refusal is `200`; a
/// fault is the generic 503 or 500.
fn render(answer: Answer) -> Result<Response, ApiError> {
    match (answer.to_value(), answer) {
        (Some(value), _) => Ok(respond::ok(&value)),
        (None, Answer::Fault(Fault::Unavailable)) => Err(ApiError::Unavailable),
        (None, Answer::Fault(Fault::Internal(detail))) => Err(ApiError::Internal(detail)),
        (None, _) => Err(ApiError::Internal("an answer without a value".into())),
    }
}
