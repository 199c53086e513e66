//! Parameters as the API and MCP carry them (one JSON object, already
//! checked against the operation's parameter schema by
//! [`crate::Schemas`]) into a typed [`Operation`]. The CLI builds its
//! [`Operation`] from its own parsed arguments instead.

use countersign_gate::{Outcome, Refused};
use countersign_surface::operations::OperationKey;
use countersign_verifier::{Proof, Refusal};
use serde_json::{Map, Value};

use crate::{Answer, Done, Operation};

/// The default `limit` of `list_proposals`.
pub const DEFAULT_LIST_LIMIT: u32 = 100;

fn string(params: &Map<String, Value>, key: &str) -> String {
    params
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Operation {
    /// The operation `key` (of registry operation `registry_op` for
    /// `propose`) with validated `params`; or, when a parameter is refused
    /// as it is parsed (a malformed proof), the answer to give at once.
    pub fn from_params(
        key: OperationKey,
        registry_op: Option<&str>,
        mut params: Map<String, Value>,
    ) -> Result<Operation, Answer> {
        let id = string(&params, "proposal_id");
        Ok(match key {
            OperationKey::ListOperations => Operation::ListOperations,
            OperationKey::Propose => Operation::Propose {
                operation: registry_op.unwrap_or_default().to_string(),
                arguments: params
                    .get("arguments")
                    .map(Value::to_string)
                    .unwrap_or_default(),
                note: string(&params, "note"),
            },
            OperationKey::GetProposal => Operation::GetProposal { id },
            OperationKey::ListProposals => Operation::ListProposals {
                status: string(&params, "status"),
                limit: params
                    .get("limit")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(DEFAULT_LIST_LIMIT),
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
                        return Err(Answer::done(Done::Outcome {
                            proposal_id: id,
                            outcome: Outcome::Refused(Refused::Proof(Refusal::Malformed)),
                        }));
                    }
                }
            }
            OperationKey::GetResult => Operation::GetResult { id },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn malformed(id: &str) -> Value {
        countersign_surface::results::outcome(
            id,
            &Outcome::Refused(Refused::Proof(Refusal::Malformed)),
        )
    }

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_malformed_proof_is_refused_as_it_is_parsed() {
        let answer = Operation::from_params(
            OperationKey::ExecuteWithProof,
            None,
            params(json!({"proposal_id": "prop_x", "proof": "not a proof"})),
        )
        .unwrap_err();
        assert_eq!(answer.to_value(), Some(malformed("prop_x")));
    }

    #[test]
    fn list_proposals_defaults_its_limit() {
        let op = Operation::from_params(OperationKey::ListProposals, None, Map::new()).unwrap();
        assert!(matches!(
            op,
            Operation::ListProposals { limit: DEFAULT_LIST_LIMIT, ref status } if status.is_empty()
        ));
    }
}
