//! The notification outbox's row: what the signer records when a person
//! should be told something (a proposal waits, a passkey changed), for the
//! notify process to take. The ledger stores the body as the signer wrote
//! it and never interprets it; nothing in a row authorizes anything.

use time::OffsetDateTime;

/// One notification not yet taken by the notify process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxNotification {
    /// `ntf_` + 32 lowercase hex, drawn by the signer.
    pub id: String,
    /// The principal whose person is told.
    pub principal: String,
    /// When it was recorded (whole seconds, UTC).
    pub created_at: OffsetDateTime,
    /// The signer's JSON body (kind, proposal id, operation, digest, link,
    /// or the passkey change).
    pub body: String,
    /// Not given to the notify process before this (whole seconds, UTC);
    /// `None`: at once.
    pub not_before: Option<OffsetDateTime>,
    /// The proposal this row escalates: given only while that proposal is
    /// undecided and its window open, deleted unread once it is not.
    pub escalates: Option<String>,
}
