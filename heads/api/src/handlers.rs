//! The API's adapter to the data-operation service: validated request
//! parameters become an [`Operation`], and the service's [`Answer`] becomes
//! the response, exactly as the CLI's `--json` prints it. No operation is
//! implemented here.

use std::sync::Arc;

use axum::response::Response;
use countersign_registry::Operation as RegistryOperation;
use countersign_service::{Answer, Fault, Operation};
use countersign_surface::operations::{DataOperation, OperationKey};
use serde_json::{Map, Value};

use crate::ApiState;
use crate::respond::{self, ApiError};

/// Run data operation `op` with validated `params` for `session`.
pub(crate) async fn dispatch(
    state: &Arc<ApiState>,
    op: &DataOperation,
    registry_op: Option<&RegistryOperation>,
    params: Map<String, Value>,
    session: &str,
) -> Result<Response, ApiError> {
    let Some(key) = OperationKey::of(op.name) else {
        return Err(ApiError::Internal(format!(
            "no service operation for {}",
            op.name
        )));
    };
    let answer = match Operation::from_params(key, registry_op.map(|r| r.name.as_str()), params) {
        Ok(operation) => state.service.call(operation, session).await,
        Err(answer) => answer,
    };
    render(answer)
}

/// The service's answer on the wire: a result or a refusal is `200`; a
/// fault is the generic 503 or 500.
fn render(answer: Answer) -> Result<Response, ApiError> {
    match (answer.to_value(), answer) {
        (Some(value), _) => Ok(respond::ok(&value)),
        (None, Answer::Fault(Fault::Unavailable(_))) => Err(ApiError::Unavailable),
        (None, Answer::Fault(Fault::Internal(detail))) => Err(ApiError::Internal(detail)),
        (None, _) => Err(ApiError::Internal("an answer without a value".into())),
    }
}
