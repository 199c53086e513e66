//! Decoding rows (of either backend) into the ledger's records. Only reading; the
//! queries that produce these rows live with their callers.

use countersign_verifier::Premise;
use sqlx::Row as _;

use time::OffsetDateTime;

use super::DbRow;
use crate::error::LedgerError;
use crate::status::{Facts, derive};
use crate::timefmt;
use crate::types::{
    Disposition, DispositionStatus, Intent, IssuanceRecord, Proposal, ProposalPolicy,
    ProposalRecord, ResignedProof,
};

/// The joined select behind every proposal read; append a WHERE clause.
macro_rules! proposal_select {
    () => {
        "SELECT p.id, p.principal, p.session, p.operation, p.arguments_json, p.arguments_sha256,
                p.contract_revision, p.policy_revision, p.note, p.preview, p.created_at, p.premise,
                p.decide_by, p.policy,
                d.decision AS decision, d.reason AS decision_reason,
                i.proof_sha256 AS i_proof_sha256, i.consume_digest AS i_consume_digest,
                i.nonce AS i_nonce, i.principal AS i_principal,
                i.session AS i_session, i.operation AS i_operation,
                i.arguments_sha256 AS i_arguments_sha256, i.contract_revision AS i_contract_revision,
                i.policy_revision AS i_policy_revision, i.provenance AS i_provenance,
                i.audience AS i_audience, i.issued_at AS i_issued_at, i.expires_at AS i_expires_at,
                i.key_id AS i_key_id, rs.proof_sha256 AS rs_proof_sha256,
                rs.consume_digest AS rs_consume_digest, rs.key_id AS rs_key_id,
                rs.replaces_key_id AS rs_replaces_key_id,
                r.reason AS revocation_reason,
                n.nonce AS consumed_nonce,
                c.status AS completion_status, c.error AS completion_error,
                cr.id AS created_rule
         FROM proposals p
         LEFT JOIN decisions d ON d.proposal_id = p.id
         LEFT JOIN issuances i ON i.proposal_id = p.id
         LEFT JOIN resigned_proofs rs ON rs.nonce = i.nonce
         LEFT JOIN revocations r ON r.proposal_id = p.id
         LEFT JOIN consumed_nonces n ON n.proposal_id = p.id
         LEFT JOIN completions c ON c.proposal_id = p.id
         LEFT JOIN rules cr ON cr.proposal_id = p.id AND cr.version = 1 "
    };
}
pub(super) use proposal_select;

/// A stored premise (the canonical JSON of a `prem` claim), or `None`.
pub(super) fn premise_col(row: &DbRow, col: &str) -> Result<Option<Premise>, LedgerError> {
    let Some(text) = row.try_get::<Option<String>, _>(col)? else {
        return Ok(None);
    };
    let value = countersign_verifier::canonical::parse(text.as_bytes(), text.len())
        .map_err(|e| LedgerError::Corrupt(format!("stored premise: {e}")))?;
    Premise::from_claim_value(value)
        .map(Some)
        .map_err(|_| LedgerError::Corrupt("stored premise is malformed".into()))
}

/// A stored policy verdict, parsed (`None`: no policy set then).
fn policy_col(row: &DbRow, col: &str) -> Result<Option<ProposalPolicy>, LedgerError> {
    let Some(text) = row.try_get::<Option<String>, _>(col)? else {
        return Ok(None);
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| LedgerError::Corrupt(format!("stored policy verdict: {e}")))
}

/// An identifier column, parsed: a stored id of the wrong form is
/// corruption, never passed on as text.
fn id_col<T>(row: &DbRow, col: &str) -> Result<T, LedgerError>
where
    T: TryFrom<String, Error = countersign_verifier::IdError>,
{
    let text: String = row.try_get(col)?;
    T::try_from(text).map_err(|e| LedgerError::Corrupt(format!("stored {col}: {e}")))
}

fn time_col(row: &DbRow, col: &str) -> Result<OffsetDateTime, LedgerError> {
    let text: String = row.try_get(col)?;
    timefmt::parse(&text)
}

/// A nullable time column.
pub(super) fn optional_time_col(
    row: &DbRow,
    col: &str,
) -> Result<Option<OffsetDateTime>, LedgerError> {
    row.try_get::<Option<String>, _>(col)?
        .map(|text| timefmt::parse(&text))
        .transpose()
}

fn issuance(row: &DbRow) -> Result<Option<IssuanceRecord>, LedgerError> {
    let Some(proof_sha256) = row.try_get::<Option<String>, _>("i_proof_sha256")? else {
        return Ok(None);
    };
    let nonce: String = row.try_get("i_nonce")?;
    let resigned = match row.try_get::<Option<String>, _>("rs_proof_sha256")? {
        Some(resigned_sha256) => Some(ResignedProof {
            proposal_id: row.try_get("id")?,
            nonce: nonce.clone(),
            proof_sha256: resigned_sha256,
            consume_digest: row.try_get("rs_consume_digest")?,
            key_id: row.try_get("rs_key_id")?,
            replaces_key_id: row.try_get("rs_replaces_key_id")?,
        }),
        None => None,
    };
    Ok(Some(IssuanceRecord {
        proof_sha256,
        consume_digest: row.try_get("i_consume_digest")?,
        nonce,
        principal: row.try_get("i_principal")?,
        session: row.try_get("i_session")?,
        proposal_id: row.try_get("id")?,
        operation: row.try_get("i_operation")?,
        arguments_sha256: row.try_get("i_arguments_sha256")?,
        contract_revision: row.try_get("i_contract_revision")?,
        policy_revision: row.try_get("i_policy_revision")?,
        provenance: row.try_get("i_provenance")?,
        audience: row.try_get("i_audience")?,
        issued_at: time_col(row, "i_issued_at")?,
        expires_at: time_col(row, "i_expires_at")?,
        key_id: row.try_get("i_key_id")?,
        resigned,
    }))
}

/// A row of `proposal_select!()` as a record with its status as of `now`.
pub(super) fn proposal(row: &DbRow, now: OffsetDateTime) -> Result<ProposalRecord, LedgerError> {
    let issuance = issuance(row)?;
    let decide_by = optional_time_col(row, "decide_by")?;
    let facts = Facts {
        decision: row.try_get("decision")?,
        decide_by,
        decision_reason: row.try_get("decision_reason")?,
        expires_at: issuance.as_ref().map(|i| i.expires_at),
        revocation_reason: row.try_get("revocation_reason")?,
        consumed: row
            .try_get::<Option<String>, _>("consumed_nonce")?
            .is_some(),
        completion: row.try_get("completion_status")?,
        completion_error: row.try_get("completion_error")?,
        created_rule: row.try_get::<Option<String>, _>("created_rule")?.is_some(),
    };
    let (status, reason) = derive(facts, now);
    let proposal = Proposal {
        id: id_col(row, "id")?,
        principal: id_col(row, "principal")?,
        session: id_col(row, "session")?,
        operation: row.try_get("operation")?,
        arguments_json: row.try_get("arguments_json")?,
        arguments_sha256: row.try_get("arguments_sha256")?,
        contract_revision: row.try_get("contract_revision")?,
        policy_revision: row.try_get("policy_revision")?,
        note: row.try_get("note")?,
        preview: row.try_get("preview")?,
        created_at: time_col(row, "created_at")?,
        premise: premise_col(row, "premise")?,
        decide_by,
        policy: policy_col(row, "policy")?,
    };
    Ok(ProposalRecord {
        proposal,
        status,
        reason,
        issuance,
    })
}

/// The columns behind `intent`, of `intents t`.
macro_rules! intent_columns {
    () => {
        "t.nonce, t.proposal_id, t.principal, t.session, t.operation, t.arguments_json,
         t.proof_sha256, t.contract_revision, t.recorded_at, t.lease_until"
    };
}
pub(super) use intent_columns;

/// A row of `intents`.
pub(super) fn intent(row: &DbRow) -> Result<Intent, LedgerError> {
    let recorded_at = time_col(row, "recorded_at")?;
    Ok(Intent {
        proposal_id: row.try_get("proposal_id")?,
        nonce: row.try_get("nonce")?,
        principal: row.try_get("principal")?,
        session: row.try_get("session")?,
        operation: row.try_get("operation")?,
        arguments_json: row.try_get("arguments_json")?,
        proof_sha256: row.try_get("proof_sha256")?,
        contract_revision: row.try_get("contract_revision")?,
        recorded_at,
        // An intent recorded before leases were kept has none.
        lease_until: match row.try_get::<String, _>("lease_until")?.as_str() {
            "" => recorded_at,
            text => timefmt::parse(text)?,
        },
    })
}

/// A consumed nonce joined with its completion (`status`, `error`,
/// `result`, `completed_at`, all NULL while uncertain).
pub(super) fn disposition(row: &DbRow) -> Result<Disposition, LedgerError> {
    let proposal_id: String = row.try_get("proposal_id")?;
    let nonce: String = row.try_get("nonce")?;
    let Some(status) = row.try_get::<Option<String>, _>("status")? else {
        return Ok(Disposition {
            proposal_id,
            nonce,
            status: DispositionStatus::Uncertain,
            result: serde_json::Value::Null,
            error: row.try_get("error")?,
            completed_at: None,
        });
    };
    let result: String = row.try_get("result")?;
    let completed_at: String = row.try_get("completed_at")?;
    completed(
        proposal_id,
        nonce,
        &status,
        row.try_get("error")?,
        &result,
        &completed_at,
    )
}

/// The disposition of a completion, from its stored column values.
pub(super) fn completed(
    proposal_id: String,
    nonce: String,
    status: &str,
    error: Option<String>,
    result: &str,
    completed_at: &str,
) -> Result<Disposition, LedgerError> {
    let status = match status {
        "applied" => DispositionStatus::Applied,
        "failed" => DispositionStatus::Failed,
        other => return Err(LedgerError::Corrupt(format!("completion status {other:?}"))),
    };
    let result = serde_json::from_str(result)
        .map_err(|e| LedgerError::Corrupt(format!("completion result: {e}")))?;
    Ok(Disposition {
        proposal_id,
        nonce,
        status,
        result,
        error,
        completed_at: Some(timefmt::parse(completed_at)?),
    })
}

/// The select behind `disposition`; append a WHERE clause on `n.`.
macro_rules! disposition_select {
    () => {
        "SELECT n.nonce AS nonce, n.proposal_id AS proposal_id,
                c.status AS status, c.error AS error, c.result AS result,
                c.completed_at AS completed_at
         FROM consumed_nonces n LEFT JOIN completions c ON c.nonce = n.nonce "
    };
}
pub(super) use disposition_select;
