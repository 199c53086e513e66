//! Parameters as the API and MCP carry them (one JSON object, already
//! checked against the operation's parameter schema by
//! [`crate::Schemas`]) into a typed [`Operation`]. The CLI builds its
//! [`Operation`] from its own parsed arguments instead.

use countersign_gate::{Outcome, Refused};
use countersign_proto::UnknownName;
use countersign_proto::reason::Reason;
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
        // The schema's pattern admits only a proposal id, where there is one.
        let id = || {
            crate::proposal_id(
                params
                    .get("proposal_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            )
        };
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
            OperationKey::GetProposal => Operation::GetProposal { id: id()? },
            OperationKey::ListProposals => Operation::ListProposals {
                // The schema allows only a status's name, or none.
                status: match params.get("status").and_then(Value::as_str) {
                    None => None,
                    Some(name) => Some(name.parse().map_err(|e: UnknownName| {
                        Answer::refused(Reason::InvalidField, e.to_string())
                    })?),
                },
                limit: params
                    .get("limit")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(DEFAULT_LIST_LIMIT),
            },
            OperationKey::Withdraw => Operation::Withdraw { id: id()? },
            OperationKey::ExecuteHandoff => Operation::ExecuteHandoff { id: id()? },
            OperationKey::ExecuteWithProof => {
                let id = id()?;
                let text = match params.remove("proof") {
                    Some(Value::String(text)) => text,
                    _ => String::new(),
                };
                match Proof::from_text(text) {
                    Ok(proof) => Operation::ExecuteWithProof { id, proof },
                    Err(_) => {
                        return Err(Answer::done(Done::Outcome {
                            proposal_id: id.into(),
                            outcome: Outcome::Refused(Refused::Proof(Refusal::Malformed)),
                        }));
                    }
                }
            }
            OperationKey::GetResult => Operation::GetResult { id: id()? },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const ID: &str = "prop_0123456789abcdef0123456789abcdef";

    fn malformed(id: &str) -> Value {
        crate::results::outcome(id, &Outcome::Refused(Refused::Proof(Refusal::Malformed)))
    }

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_malformed_proof_is_refused_as_it_is_parsed() {
        let answer = Operation::from_params(
            OperationKey::ExecuteWithProof,
            None,
            params(json!({"proposal_id": ID, "proof": "not a proof"})),
        )
        .unwrap_err();
        assert_eq!(answer.to_value(), Some(malformed(ID)));
    }

    #[test]
    fn a_malformed_proposal_id_is_refused_before_anything_runs() {
        for key in [
            OperationKey::GetProposal,
            OperationKey::Withdraw,
            OperationKey::ExecuteHandoff,
            OperationKey::ExecuteWithProof,
            OperationKey::GetResult,
        ] {
            let answer = Operation::from_params(
                key,
                None,
                params(json!({"proposal_id": "prop_x", "proof": "not a proof"})),
            )
            .unwrap_err();
            assert_eq!(
                answer.to_value(),
                Some(countersign_surface::results::refusal(
                    "invalid_field",
                    "invalid proposal_id: expected prop_ followed by 32 lowercase hex characters"
                )),
                "{key:?}"
            );
        }
    }

    #[test]
    fn list_proposals_defaults_its_limit() {
        let op = Operation::from_params(OperationKey::ListProposals, None, Map::new()).unwrap();
        assert!(matches!(
            op,
            Operation::ListProposals {
                limit: DEFAULT_LIST_LIMIT,
                status: None
            }
        ));
    }

    #[test]
    fn list_proposals_takes_a_status_by_name_and_refuses_any_other() {
        let op = Operation::from_params(
            OperationKey::ListProposals,
            None,
            params(json!({"status": "uncertain"})),
        )
        .unwrap();
        assert!(matches!(
            op,
            Operation::ListProposals {
                status: Some(countersign_proto::v1::ProposalStatus::Uncertain),
                ..
            }
        ));
        let refused = Operation::from_params(
            OperationKey::ListProposals,
            None,
            params(json!({"status": "unknown"})),
        )
        .unwrap_err();
        assert_eq!(
            refused.to_value(),
            Some(countersign_surface::results::refusal(
                "invalid_field",
                "unknown proposal status `unknown`: expected one of pending, denied, withdrawn, \
                 approved, revoked, expired, applied, failed, uncertain"
            ))
        );
    }
}
