//! Auto-approval rules (shared by both backends, see the crate root): each
//! version written with its event, the rules read back with their uses,
//! and, inside an approval's transaction, the check and the record of one
//! use.
//!
//! Every write here and every approval under a rule first takes the chain
//! head's lock (on SQLite the write lock is already held), then reads the
//! rule and its uses: so a revocation and an approval, or two approvals,
//! never both see the budget before the other's write. The consume
//! transaction (`consume.rs`) reads the rule after the same lock.

use countersign_verifier::Grant;
use serde_json::json;
use sqlx::Row as _;
use time::Duration;

use super::locks::lock_head;
use super::signer::lock_undecided;
use super::rows::{self, proposal_select};
use super::{Conn, DbRow, Store, events};
use crate::error::LedgerError;
use crate::rules::{RuleChange, RuleRecord, RuleStatus};
use crate::timefmt;
use crate::types::IssuanceRecord;

/// The operation whose approval creates a rule (the registry's
/// `rule::RULE_CREATE`; the ledger does not depend on the registry).
const RULE_CREATE: &str = "rule.create";

/// The latest version of each rule, with its creation and its uses; `$1`
/// is the start of the last hour.
macro_rules! rule_select {
    () => {
        "SELECT r.id AS id, r.version AS version, r.principal AS principal,
                r.status AS status, r.definition AS definition,
                r.definition_sha256 AS definition_sha256, r.max_uses AS max_uses,
                r.per_hour AS per_hour, r.expires_at AS expires_at,
                r.changed_by AS changed_by, r.changed_at AS changed_at, r.reason AS reason,
                f.changed_by AS created_by, f.changed_at AS created_at,
                (SELECT COUNT(*) FROM rule_uses u WHERE u.rule_id = r.id) AS uses,
                (SELECT COUNT(*) FROM rule_uses u
                 WHERE u.rule_id = r.id AND u.used_at > $1) AS uses_last_hour
         FROM rules r JOIN rules f ON f.id = r.id AND f.version = 1
         WHERE r.version = (SELECT MAX(x.version) FROM rules x WHERE x.id = r.id) "
    };
}

/// The start of the hour before `now`, as stored timestamps compare.
fn hour_before(now: time::OffsetDateTime) -> Result<String, LedgerError> {
    timefmt::format(now - Duration::hours(1))
}

fn count(row: &DbRow, column: &str) -> Result<u64, LedgerError> {
    u64::try_from(row.try_get::<i64, _>(column)?)
        .map_err(|_| LedgerError::Corrupt(format!("negative rule {column}")))
}

fn record(row: &DbRow) -> Result<RuleRecord, LedgerError> {
    let status: String = row.try_get("status")?;
    let time = |column: &str| -> Result<_, LedgerError> {
        timefmt::parse(&row.try_get::<String, _>(column)?)
    };
    Ok(RuleRecord {
        id: row.try_get("id")?,
        version: count(row, "version")?,
        principal: row.try_get("principal")?,
        status: RuleStatus::parse(&status)
            .ok_or_else(|| LedgerError::Corrupt(format!("rule status {status:?}")))?,
        definition: row.try_get("definition")?,
        definition_sha256: row.try_get("definition_sha256")?,
        max_uses: count(row, "max_uses")?,
        per_hour: count(row, "per_hour")?,
        expires_at: time("expires_at")?,
        created_by: row.try_get("created_by")?,
        created_at: time("created_at")?,
        changed_by: row.try_get("changed_by")?,
        changed_at: time("changed_at")?,
        reason: row.try_get("reason")?,
        uses: count(row, "uses")?,
        uses_last_hour: count(row, "uses_last_hour")?,
    })
}

fn signed(n: u64) -> Result<i64, LedgerError> {
    i64::try_from(n).map_err(|_| LedgerError::Corrupt(format!("{n} does not fit the ledger")))
}

/// The latest version of rule `id`, on `conn`.
async fn latest(conn: &mut Conn, id: &str) -> Result<Option<RuleRecord>, LedgerError> {
    let row = sqlx::query(concat!(rule_select!(), "AND r.id = $2"))
        .bind(hour_before(timefmt::now())?)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.as_ref().map(record).transpose()
}

/// The kind of the event that records a version.
fn event_kind(version: u64, status: RuleStatus) -> &'static str {
    match (version, status) {
        (_, RuleStatus::Revoked) => "rule_revoked",
        (1, RuleStatus::Active) => "rule_created",
        (_, RuleStatus::Active) => "rule_revised",
    }
}

/// Insert version `version` of `change` with `status` and its event, on
/// `conn` inside the caller's write transaction (which holds the chain
/// head's lock and has checked that this version follows the live one).
async fn insert_version(
    conn: &mut Conn,
    change: &RuleChange,
    version: u64,
    status: RuleStatus,
    reason: &str,
    proposal_id: Option<&str>,
) -> Result<(), LedgerError> {
    let at = timefmt::format(timefmt::now())?;
    let expires_at = timefmt::format(change.expires_at)?;
    sqlx::query(
        "INSERT INTO rules (id, version, principal, status, definition, definition_sha256,
             max_uses, per_hour, expires_at, changed_by, changed_at, reason, proposal_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&change.id)
    .bind(signed(version)?)
    .bind(&change.principal)
    .bind(status.as_str())
    .bind(&change.definition)
    .bind(&change.definition_sha256)
    .bind(signed(change.max_uses)?)
    .bind(signed(change.per_hour)?)
    .bind(&expires_at)
    .bind(&change.by)
    .bind(&at)
    .bind(reason)
    .bind(proposal_id)
    .execute(&mut *conn)
    .await?;
    let mut details = json!({
        "rule": change.id,
        "version": version,
        "principal": change.principal,
        "status": status.as_str(),
        "definition_sha256": change.definition_sha256,
        "max_uses": change.max_uses,
        "per_hour": change.per_hour,
        "expires_at": expires_at,
        "reason": reason,
    });
    if let (Some(pid), Some(fields)) = (proposal_id, details.as_object_mut()) {
        fields.insert("proposal".into(), json!(pid));
    }
    let kind = event_kind(version, status);
    let chain = &change.principal;
    events::append(conn, chain, &at, kind, proposal_id, &change.by, &details).await
}

/// The change that revokes `current`: its definition and limits, by `by`.
fn revocation_of(current: &RuleRecord, by: &str) -> RuleChange {
    RuleChange {
        id: current.id.clone(),
        principal: current.principal.clone(),
        definition: current.definition.clone(),
        definition_sha256: current.definition_sha256.clone(),
        max_uses: current.max_uses,
        per_hour: current.per_hour,
        expires_at: current.expires_at,
        by: by.to_owned(),
    }
}

impl Store {
    /// Create a rule (version 1) and its `rule_created` event.
    /// `DuplicateRule` if the id exists.
    pub(crate) async fn create_rule(&self, change: &RuleChange) -> Result<RuleRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_head(&mut tx, &change.principal).await?;
        if latest(&mut tx, &change.id).await?.is_some() {
            return Err(LedgerError::DuplicateRule(change.id.clone()));
        }
        insert_version(&mut tx, change, 1, RuleStatus::Active, "", None).await?;
        let created = latest(&mut tx, &change.id).await?;
        tx.commit().await?;
        created.ok_or_else(|| LedgerError::Corrupt(format!("rule {} vanished", change.id)))
    }

    /// A person's approval of a `rule.create` proposal, creating the rule
    /// it proposes; see [`crate::Ledger::create_rule_from_proposal`].
    pub(crate) async fn create_rule_from_proposal(
        &self,
        change: &RuleChange,
        proposal_id: &str,
    ) -> Result<RuleRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_undecided(&mut tx, proposal_id, &change.principal).await?;
        let row = sqlx::query(concat!(proposal_select!(), "WHERE p.id = $1"))
            .bind(proposal_id)
            .fetch_one(&mut *tx)
            .await?;
        let p = rows::proposal(&row, timefmt::now())?;
        // Exactly the rule the proposal's canonical arguments define.
        if p.proposal.operation != RULE_CREATE
            || p.proposal.arguments_sha256 != change.definition_sha256
            || p.proposal.arguments_json != change.definition
        {
            return Err(LedgerError::IssuanceMismatch(proposal_id.to_owned()));
        }
        lock_head(&mut tx, &change.principal).await?;
        if latest(&mut tx, &change.id).await?.is_some() {
            return Err(LedgerError::DuplicateRule(change.id.clone()));
        }
        let at = timefmt::format(timefmt::now())?;
        sqlx::query(
            "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
             VALUES ($1, 'approve', $2, NULL, $3)",
        )
        .bind(proposal_id)
        .bind(&change.principal)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        let details = json!({ "created_rule": change.id, "by": change.by });
        events::append(
            &mut tx,
            &change.principal,
            &at,
            "approved",
            Some(proposal_id),
            &change.principal,
            &details,
        )
        .await?;
        let pid = Some(proposal_id);
        insert_version(&mut tx, change, 1, RuleStatus::Active, "", pid).await?;
        let created = latest(&mut tx, &change.id).await?;
        tx.commit().await?;
        created.ok_or_else(|| LedgerError::Corrupt(format!("rule {} vanished", change.id)))
    }

    /// A new version of a live rule; see [`crate::Ledger::revise_rule`].
    pub(crate) async fn revise_rule(
        &self,
        change: &RuleChange,
        expected_version: u64,
    ) -> Result<RuleRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_head(&mut tx, &change.principal).await?;
        let current = live(&mut tx, &change.id, &change.principal).await?;
        if current.version != expected_version {
            return Err(LedgerError::RuleChanged(change.id.clone()));
        }
        insert_version(
            &mut tx,
            change,
            current.version + 1,
            RuleStatus::Active,
            "",
            None,
        )
        .await?;
        let revised = latest(&mut tx, &change.id).await?;
        tx.commit().await?;
        revised.ok_or_else(|| LedgerError::Corrupt(format!("rule {} vanished", change.id)))
    }

    /// Revoke a rule; see [`crate::Ledger::revoke_rule`].
    pub(crate) async fn revoke_rule(
        &self,
        id: &str,
        principal: &str,
        by: &str,
        reason: &str,
    ) -> Result<RuleRecord, LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_head(&mut tx, principal).await?;
        let current = latest(&mut tx, id)
            .await?
            .filter(|r| r.principal == principal)
            .ok_or_else(|| LedgerError::UnknownRule(id.to_owned()))?;
        if current.status == RuleStatus::Revoked {
            return Err(LedgerError::RuleNotLive(id.to_owned()));
        }
        let change = revocation_of(&current, by);
        let version = current.version + 1;
        insert_version(&mut tx, &change, version, RuleStatus::Revoked, reason, None).await?;
        let revoked = latest(&mut tx, id).await?;
        tx.commit().await?;
        revoked.ok_or_else(|| LedgerError::Corrupt(format!("rule {id} vanished")))
    }

    /// The principal's rules (latest versions), oldest first.
    pub(crate) async fn rules(&self, principal: &str) -> Result<Vec<RuleRecord>, LedgerError> {
        let rows = sqlx::query(concat!(
            rule_select!(),
            "AND r.principal = $2 ORDER BY f.changed_at, r.id"
        ))
        .bind(hour_before(timefmt::now())?)
        .bind(principal)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(record).collect()
    }

    /// One rule's latest version.
    pub(crate) async fn rule(&self, id: &str) -> Result<Option<RuleRecord>, LedgerError> {
        let mut conn = self.reader.acquire().await?;
        latest(&mut conn, id).await
    }
}

/// Rule `id` of `principal`, if its latest version is active (expired or
/// not: a person may revise an expired rule into a live one).
async fn live(conn: &mut Conn, id: &str, principal: &str) -> Result<RuleRecord, LedgerError> {
    let current = latest(conn, id)
        .await?
        .filter(|r| r.principal == principal)
        .ok_or_else(|| LedgerError::UnknownRule(id.to_owned()))?;
    if current.status != RuleStatus::Active {
        return Err(LedgerError::RuleNotLive(id.to_owned()));
    }
    Ok(current)
}

/// Inside an approval's write transaction, before anything is written:
/// whether `grant` may issue one more proof for `principal` now. The rule
/// must exist for that principal (`UnknownRule`), be live at exactly that
/// version (`RuleNotLive`: revised, revoked or expired since), and have
/// uses left in total (`RuleExhausted`) and in the last hour
/// (`RuleRateLimited`). Takes the chain head's lock first.
pub(super) async fn check_use(
    conn: &mut Conn,
    grant: &Grant,
    principal: &str,
) -> Result<(), LedgerError> {
    lock_head(conn, principal).await?;
    let rule = latest(conn, &grant.rule)
        .await?
        .filter(|r| r.principal == principal)
        .ok_or_else(|| LedgerError::UnknownRule(grant.rule.clone()))?;
    if rule.version != grant.version || !rule.is_live(timefmt::now()) {
        return Err(LedgerError::RuleNotLive(grant.rule.clone()));
    }
    if rule.uses >= rule.max_uses {
        return Err(LedgerError::RuleExhausted(grant.rule.clone()));
    }
    if rule.uses_last_hour >= rule.per_hour {
        return Err(LedgerError::RuleRateLimited(grant.rule.clone()));
    }
    Ok(())
}

/// Record the use of `grant` by issuance `i` at `at`, on `conn` inside the
/// approval's write transaction, after [`check_use`] and the issuance.
pub(super) async fn insert_use(
    conn: &mut Conn,
    grant: &Grant,
    i: &IssuanceRecord,
    at: &str,
) -> Result<(), LedgerError> {
    sqlx::query(
        "INSERT INTO rule_uses (proposal_id, rule_id, version, principal, used_at)
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(&i.proposal_id)
    .bind(&grant.rule)
    .bind(signed(grant.version)?)
    .bind(&i.principal)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
