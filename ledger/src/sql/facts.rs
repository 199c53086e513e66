//! Reading the fact tables for the audit's comparison with the event log
//! (shared by both backends; the comparison is `crate::facts`).

use sqlx::Row as _;

use super::Conn;
use crate::error::LedgerError;
use crate::facts::{FactRows, IntentRow, PasskeyRow, rule_version_line};

/// Every row `crate::facts` compares, on `conn` (the caller's read
/// snapshot, the one the chain was walked in).
pub(super) async fn read(conn: &mut Conn) -> Result<FactRows, LedgerError> {
    let mut rows = FactRows::default();
    for row in sqlx::query("SELECT id FROM proposals")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.proposals.push(row.try_get("id")?);
    }
    for row in sqlx::query("SELECT proposal_id, decision FROM decisions")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.decisions
            .push((row.try_get("proposal_id")?, row.try_get("decision")?));
    }
    for row in sqlx::query("SELECT proposal_id, proof_sha256, provenance FROM issuances")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.issuances
            .push((row.try_get("proposal_id")?, row.try_get("proof_sha256")?));
        rows.provenances
            .push((row.try_get("proposal_id")?, row.try_get("provenance")?));
    }
    for row in sqlx::query(
        "SELECT r.proposal_id AS proposal_id, r.nonce AS nonce, r.proof_sha256 AS proof_sha256,
                r.key_id AS key_id, i.proof_sha256 AS replaces, r.replaces_key_id AS replaces_key_id
         FROM resigned_proofs r JOIN issuances i ON i.nonce = r.nonce",
    )
    .fetch_all(&mut *conn)
    .await?
    {
        rows.resigned.push(format!(
            "resigned {} {} {} {} {} {}",
            row.try_get::<String, _>("proposal_id")?,
            row.try_get::<String, _>("nonce")?,
            row.try_get::<String, _>("proof_sha256")?,
            row.try_get::<String, _>("key_id")?,
            row.try_get::<String, _>("replaces")?,
            row.try_get::<String, _>("replaces_key_id")?,
        ));
    }
    for row in
        sqlx::query("SELECT proposal_id, approver, credential_id FROM quorum_passkey_assertions")
            .fetch_all(&mut *conn)
            .await?
    {
        rows.quorum_passkeys.push((
            row.try_get("proposal_id")?,
            row.try_get("approver")?,
            row.try_get("credential_id")?,
        ));
    }
    for row in sqlx::query(
        "SELECT proposal_id, approver, decision FROM quorum_decisions ORDER BY proposal_id, seq",
    )
    .fetch_all(&mut *conn)
    .await?
    {
        rows.quorum_decisions.push((
            row.try_get("proposal_id")?,
            row.try_get("approver")?,
            row.try_get("decision")?,
        ));
    }
    for row in sqlx::query("SELECT proposal_id FROM revocations")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.revocations.push(row.try_get("proposal_id")?);
    }
    for row in sqlx::query("SELECT proposal_id, nonce FROM consumed_nonces")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.consumed
            .push((row.try_get("proposal_id")?, row.try_get("nonce")?));
    }
    for row in sqlx::query(
        "SELECT proposal_id, nonce, principal, proof_sha256, arguments_json FROM intents",
    )
    .fetch_all(&mut *conn)
    .await?
    {
        rows.intents.push(IntentRow {
            proposal_id: row.try_get("proposal_id")?,
            nonce: row.try_get("nonce")?,
            principal: row.try_get("principal")?,
            proof_sha256: row.try_get("proof_sha256")?,
            arguments_json: row.try_get("arguments_json")?,
        });
    }
    for row in sqlx::query("SELECT nonce, effect FROM effect_applied")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.applied
            .push((row.try_get("nonce")?, row.try_get("effect")?));
    }
    for row in sqlx::query("SELECT proposal_id, nonce, status FROM completions")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.completions.push((
            row.try_get("proposal_id")?,
            row.try_get("nonce")?,
            row.try_get("status")?,
        ));
    }
    for row in sqlx::query("SELECT principal, namespace, key, value FROM state")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.state.push((
            row.try_get("principal")?,
            row.try_get("namespace")?,
            row.try_get("key")?,
            row.try_get("value")?,
        ));
    }
    for row in
        sqlx::query("SELECT credential_id, principal, authorized_by, public_key FROM passkeys")
            .fetch_all(&mut *conn)
            .await?
    {
        rows.passkeys.push(PasskeyRow {
            credential_id: row.try_get("credential_id")?,
            principal: row.try_get("principal")?,
            authorized_by: row.try_get("authorized_by")?,
            public_key: row.try_get("public_key")?,
        });
    }
    for row in sqlx::query("SELECT credential_id, authorized_by FROM passkey_removals")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.passkey_removals
            .push((row.try_get("credential_id")?, row.try_get("authorized_by")?));
    }
    for row in sqlx::query("SELECT purpose, subject, credential_id FROM passkey_assertions")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.passkey_assertions.push((
            row.try_get("purpose")?,
            row.try_get("subject")?,
            row.try_get("credential_id")?,
        ));
    }
    for row in sqlx::query(
        "SELECT id, version, principal, status, definition_sha256, max_uses, per_hour,
                expires_at FROM rules",
    )
    .fetch_all(&mut *conn)
    .await?
    {
        rows.rule_versions.push(rule_version_line(
            &row.try_get::<String, _>("id")?,
            row.try_get("version")?,
            &row.try_get::<String, _>("principal")?,
            &row.try_get::<String, _>("status")?,
            &row.try_get::<String, _>("definition_sha256")?,
            row.try_get("max_uses")?,
            row.try_get("per_hour")?,
            &row.try_get::<String, _>("expires_at")?,
        ));
    }
    for row in sqlx::query("SELECT proposal_id, id FROM rules WHERE proposal_id IS NOT NULL")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.rules_from_proposals
            .push((row.try_get("proposal_id")?, row.try_get("id")?));
    }
    for row in sqlx::query("SELECT proposal_id, rule_id, version FROM rule_uses")
        .fetch_all(&mut *conn)
        .await?
    {
        rows.rule_uses.push((
            row.try_get("proposal_id")?,
            row.try_get("rule_id")?,
            row.try_get("version")?,
        ));
    }
    Ok(rows)
}
