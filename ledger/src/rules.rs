//! Auto-approval rules as the ledger records them: a version to write
//! ([`RuleChange`]) and a rule as read back with its uses ([`RuleRecord`]).
//!
//! The ledger neither parses nor matches a rule's definition (the
//! registry's `rule` module does); it keeps each version append-only,
//! counts uses and the last hour's uses inside the approval's transaction,
//! and checks at consumption that the version a proof names is still the
//! live one.

use time::OffsetDateTime;

/// A rule's status as recorded (expiry is derived by the reader).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleStatus {
    /// The latest version approves what it covers until it expires.
    Active,
    /// Revoked: it approves nothing more, and proofs issued under it are
    /// refused at consumption.
    Revoked,
}

impl RuleStatus {
    /// The stored text (`active`, `revoked`).
    pub fn as_str(self) -> &'static str {
        match self {
            RuleStatus::Active => "active",
            RuleStatus::Revoked => "revoked",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<RuleStatus> {
        match text {
            "active" => Some(RuleStatus::Active),
            "revoked" => Some(RuleStatus::Revoked),
            _ => None,
        }
    }
}

/// A new version of a rule (its creation or a revision), as a person
/// confirmed it. The limits are the definition's own, read by the caller
/// from the definition it parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleChange {
    /// `rule_` + 32 hex.
    pub id: String,
    /// The principal whose proposals it approves.
    pub principal: String,
    /// The canonical JSON definition.
    pub definition: String,
    /// Its SHA-256 (lowercase hex).
    pub definition_sha256: String,
    /// Most uses over the rule's life.
    pub max_uses: u64,
    /// Most uses in any hour.
    pub per_hour: u64,
    /// When it stops approving.
    pub expires_at: OffsetDateTime,
    /// The approver who made the change (`<principal>` or `<principal>/<name>`).
    pub by: String,
}

/// A rule's latest version, with its uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleRecord {
    /// Rule id.
    pub id: String,
    /// Latest version (1 at creation; each revision and the revocation add one).
    pub version: u64,
    /// Owner.
    pub principal: String,
    /// Active or revoked.
    pub status: RuleStatus,
    /// Canonical JSON definition of the latest version.
    pub definition: String,
    /// Its SHA-256.
    pub definition_sha256: String,
    /// Most uses over the rule's life.
    pub max_uses: u64,
    /// Most uses in any hour.
    pub per_hour: u64,
    /// When it stops approving.
    pub expires_at: OffsetDateTime,
    /// Who created version 1.
    pub created_by: String,
    /// When version 1 was created.
    pub created_at: OffsetDateTime,
    /// Who made the latest version.
    pub changed_by: String,
    /// When the latest version was made.
    pub changed_at: OffsetDateTime,
    /// Why it was revoked (empty otherwise).
    pub reason: String,
    /// Proofs issued under any version of it.
    pub uses: u64,
    /// Of those, issued in the last hour.
    pub uses_last_hour: u64,
}

impl RuleRecord {
    /// Whether it approves anything now: active and not expired at `now`.
    pub fn is_live(&self, now: OffsetDateTime) -> bool {
        self.status == RuleStatus::Active && now < self.expires_at
    }

    /// How many more proofs it may issue now: the least of what its total
    /// and its hourly budget leave (0 when not live).
    pub fn remaining(&self, now: OffsetDateTime) -> u64 {
        if !self.is_live(now) {
            return 0;
        }
        let total = self.max_uses.saturating_sub(self.uses);
        let hour = self.per_hour.saturating_sub(self.uses_last_hour);
        total.min(hour)
    }
}
