//! The bundle's format, version 1 (docs/evidence.md): one JSON object,
//! read strictly (every member present, no other member).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `format` of version 1.
pub const FORMAT: &str = "countersign-evidence/v1";

/// One approved action's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// [`FORMAT`].
    pub format: String,
    /// When it was written.
    pub exported_at: String,
    /// The action as proposed.
    pub proposal: ProposalPart,
    /// The operation's contract as canonical JSON text, when the
    /// exporter's registry still held the revision approved.
    pub contract: Option<String>,
    /// SHA-256 of the registry file the exporter read (for reference).
    pub registry_sha256: String,
    /// Who or what decided, with the passkey assertions.
    pub decision: DecisionPart,
    /// The spent proof (`None` with a commitment to the arguments).
    pub proof: Option<String>,
    /// The key set, as `countersign keys export` writes it.
    pub keys: Value,
    /// The consumption and the effect's recorded result.
    pub consumption: ConsumptionPart,
    /// The log's events this bundle relies on.
    pub events: Vec<EventPart>,
}

/// The proposal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProposalPart {
    /// Its id.
    pub id: String,
    /// The installation's principal.
    pub principal: String,
    /// The agent's session.
    pub session: String,
    /// The registry operation.
    pub operation: String,
    /// The canonical arguments' SHA-256.
    pub arguments_sha256: String,
    /// The contract revision.
    pub contract_revision: String,
    /// The policy revision.
    pub policy_revision: String,
    /// When it was proposed.
    pub created_at: String,
    /// The canonical JSON text of the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// Instead of them, a salted commitment (`crate::commitment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_commitment: Option<String>,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecisionPart {
    /// The `approved` event's provenance.
    pub provenance: String,
    /// The relying party the assertions were made for.
    pub relying_party: Option<RelyingPartyPart>,
    /// Each passkey assertion behind the decision.
    pub assertions: Vec<AssertionPart>,
}

/// A WebAuthn relying party.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelyingPartyPart {
    /// The RP ID.
    pub id: String,
    /// The origins the browser may report.
    pub origins: Vec<String>,
}

/// A passkey assertion as stored, with its credential's public key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertionPart {
    /// `None`: the proposal's own person; else the quorum approver.
    pub approver: Option<String>,
    /// The credential id (base64url).
    pub credential_id: String,
    /// The credential's COSE public key as enrolled (base64url).
    pub public_key: String,
    /// The signer's random half of the challenge (base64url).
    pub challenge_random: String,
    /// `direct` or `handoff`.
    pub delivery: String,
    /// Authenticator data (base64url).
    pub authenticator_data: String,
    /// clientDataJSON (base64url).
    pub client_data_json: String,
    /// The signature (base64url).
    pub signature: String,
}

/// The consumption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumptionPart {
    /// The consumed nonce.
    pub nonce: String,
    /// `applied` or `failed`.
    pub status: String,
    /// The recorded error.
    pub error: Option<String>,
    /// The recorded result, canonical JSON text.
    pub result: String,
}

/// One event of the log with its inclusion proof.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventPart {
    /// Its chain (`""`: the global chain).
    pub chain: String,
    /// Its position in the chain.
    pub seq: i64,
    /// When it happened.
    pub at: String,
    /// Its kind.
    pub kind: String,
    /// The proposal concerned.
    pub proposal_id: Option<String>,
    /// Who acted.
    pub actor: String,
    /// Kind-specific details.
    pub details: Value,
    /// The previous event's hash in its chain.
    pub prev_hash: String,
    /// Its hash.
    pub hash: String,
    /// A C2SP tlog-proof of its leaf in the bundle's checkpoint.
    pub tlog_proof: String,
}

impl EventPart {
    /// A string member of its details.
    pub fn detail(&self, name: &str) -> Option<&str> {
        self.details.get(name).and_then(Value::as_str)
    }
}
