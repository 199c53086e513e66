//! Chore leases: a chore that must run once per ledger (the checkpoints
//! and the transparency log's signing, the witnessing client's sending)
//! is run by the process holding its lease, and each of its writes checks
//! the lease's fencing token (see `sql/chores.rs`).

use time::OffsetDateTime;

/// The checkpoint chore: the chains' `checkpoint` events and the
/// transparency log's signed checkpoints, written by a serving signer.
pub const CHECKPOINTS_CHORE: &str = "checkpoints";
/// The witnessing chore: sending signed checkpoints to the witnesses and
/// storing their cosignatures (`countersign up`, `countersign witness serve`).
pub const WITNESSING_CHORE: &str = "witnessing";

/// One holder's lease of a chore, as taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The chore.
    pub chore: String,
    /// Who holds it: a random id of one process, with its host name.
    pub holder: String,
    /// The fencing token: raised by one at each takeover by another holder.
    pub token: i64,
    /// Until when no other holder may take it (the taker's clock).
    pub expires_at: OffsetDateTime,
}
