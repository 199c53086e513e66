//! Waiting for a person's decision on one proposal without polling, for
//! every head that waits (a coding agent's hook, a CLI command): the
//! signer's `WatchProposal` stream, opened again after a break, until a
//! deadline.
//!
//! Owns: [`wait_for_decision`] and what it answers ([`Waited`]).
//!
//! Must not: treat anything but the signer's view as a decision, wait
//! past the caller's deadline, or hide a refusal that waiting longer
//! cannot change (another principal's proposal, an unknown one).

use std::time::Duration;

use countersign_gate::signer_client::SignerCallError;
use countersign_proto::reason::{METADATA_KEY, Status as ReasonStatus};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    GetProposalRequest, ProposalStatus, ProposalView, WatchProposalRequest,
};
use countersign_verifier::ProposalId;
use tokio::time::Instant;
use tonic::transport::Channel;

/// The pause before the first reopening of a broken watch; it doubles up
/// to [`LONGEST_PAUSE`] while the signer stays out of reach, and starts
/// again from here once a watch delivered a view.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between two attempts to watch.
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// What waiting for a decision came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Waited {
    /// The proposal's first view whose status is not pending: approved,
    /// denied, withdrawn (or any later status, if it was decided before).
    Decided(ProposalView),
    /// The deadline passed before a decision; `last` is the last view the
    /// signer sent (still pending), if any came.
    TimedOut {
        /// The last pending view received.
        last: Option<ProposalView>,
    },
}

/// Waits until a person (or a rule) decides proposal `id`, or until
/// `deadline`, over the head's own signer connection `client`.
///
/// It opens the signer's `WatchProposal` stream, which sends the
/// proposal's view at once and again when it changes, and answers with
/// the first view that is not pending (a proposal already decided answers
/// at once). Nothing polls: while nobody decides, the call is parked on
/// the stream (an idle HTTP/2 stream: no CPU), and a decision reaches it
/// as soon as the signer has committed it.
///
/// A broken stream (the connection lost, the signer restarting, a stream
/// that ended without a decision) and the signer's `Unavailable` refusals
/// (`too_many_watchers`, `signer_stopping`) are met by opening the watch
/// again after a short pause (0.1 s, doubling to 2 s), until `deadline`:
/// a decision made meanwhile is in the first view of the new stream. A
/// watch that could not be opened is replaced by one `GetProposal` read
/// before each pause, so that while the principal's heads hold every
/// watch place the signer allows them, a decision still reaches this wait
/// at most one pause (2 s) after it is made.
///
/// # Errors
///
/// A refusal that waiting cannot change, as the signer decided it
/// ([`SignerCallError::Refused`]: `unknown_proposal`, `not_your_proposal`,
/// `role_not_allowed`, `invalid_field`), and a fault of the signer when it
/// opens the watch ([`SignerCallError::Failed`]). Reaching the deadline is
/// no error: [`Waited::TimedOut`].
pub async fn wait_for_decision(
    client: &mut SignerClient<Channel>,
    id: &ProposalId,
    deadline: Instant,
) -> Result<Waited, SignerCallError> {
    let mut last = None;
    let outcome = tokio::time::timeout_at(deadline, follow(client, id, &mut last)).await;
    match outcome {
        Ok(decided) => decided.map(Waited::Decided),
        Err(_) => Ok(Waited::TimedOut { last }),
    }
}

/// Watches `id` until a decision, opening the watch again after each
/// break; `last` keeps the last pending view seen.
async fn follow(
    client: &mut SignerClient<Channel>,
    id: &ProposalId,
    last: &mut Option<ProposalView>,
) -> Result<ProposalView, SignerCallError> {
    let mut pause = FIRST_PAUSE;
    loop {
        let request = WatchProposalRequest {
            proposal_id: id.to_string(),
        };
        match client.watch_proposal(request).await {
            Err(status) => {
                worth_reopening(&status)?;
                // Refused for now (`too_many_watchers`: this principal's
                // heads hold every place) or out of reach: read the
                // proposal once instead, so that a decision is heard at
                // the latest one pause after it is made, watch or not.
                if let Some(decided) = read_once(client, id, last).await? {
                    return Ok(decided);
                }
            }
            Ok(response) => {
                let mut views = response.into_inner();
                loop {
                    match views.message().await {
                        Ok(Some(view)) if view.status() == ProposalStatus::Pending => {
                            pause = FIRST_PAUSE;
                            *last = Some(view);
                        }
                        Ok(Some(decided)) => return Ok(decided),
                        // Ended before a decision (only a misbehaving
                        // signer does that): watch again.
                        Ok(None) => break,
                        Err(status) => break cut_off(&status)?,
                    }
                }
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// The proposal's view read once (`GetProposal`), if it is no longer
/// pending; a pending one is kept in `last`. A read that fails the way a
/// watch may (out of reach, refused for now) is `None`: the next attempt
/// comes after the pause.
async fn read_once(
    client: &mut SignerClient<Channel>,
    id: &ProposalId,
    last: &mut Option<ProposalView>,
) -> Result<Option<ProposalView>, SignerCallError> {
    let request = GetProposalRequest {
        proposal_id: id.to_string(),
    };
    match client.get_proposal(request).await {
        Err(status) => worth_reopening(&status).map(|()| None),
        Ok(response) => {
            let view = response.into_inner();
            if view.status() == ProposalStatus::Pending {
                *last = Some(view);
                Ok(None)
            } else {
                Ok(Some(view))
            }
        }
    }
}

/// `Ok` if a watch that could not be opened may still end in a decision
/// when opened again (the signer out of reach, or refusing for now with
/// an `Unavailable` reason); else the error that ends the wait.
fn worth_reopening(status: &tonic::Status) -> Result<(), SignerCallError> {
    match SignerCallError::from_status(status) {
        SignerCallError::Unavailable(_) => Ok(()),
        SignerCallError::Refused(refusal)
            if refusal
                .code
                .reason()
                .is_some_and(|r| r.status() == ReasonStatus::Unavailable) =>
        {
            Ok(())
        }
        other => Err(other),
    }
}

/// `Ok` if an open watch that broke is worth opening again: a status the
/// signer did not send (it sends a reason code with each, so this one is
/// the connection's, whatever its code), or one it sent that
/// [`worth_reopening`] accepts.
fn cut_off(status: &tonic::Status) -> Result<(), SignerCallError> {
    if status.metadata().get(METADATA_KEY).is_none() {
        return Ok(());
    }
    worth_reopening(status)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn with_reason(mut status: tonic::Status, code: &'static str) -> tonic::Status {
        status
            .metadata_mut()
            .insert(METADATA_KEY, code.parse().unwrap());
        status
    }

    #[test]
    fn the_signers_unavailable_refusals_and_a_lost_connection_are_waited_out() {
        let busy = with_reason(tonic::Status::unavailable("full"), "too_many_watchers");
        assert_eq!(worth_reopening(&busy), Ok(()));
        let stopping = with_reason(tonic::Status::unavailable("bye"), "signer_stopping");
        assert_eq!(cut_off(&stopping), Ok(()));
        assert_eq!(
            worth_reopening(&tonic::Status::unavailable("connection refused")),
            Ok(())
        );
        // A stream cut by the connection carries no reason, whatever its code.
        assert_eq!(
            cut_off(&tonic::Status::internal("h2 protocol error")),
            Ok(())
        );
    }

    #[test]
    fn a_refusal_waiting_cannot_change_and_a_signer_fault_end_the_wait() {
        let theirs = with_reason(
            tonic::Status::permission_denied("proposal belongs to another principal"),
            "not_your_proposal",
        );
        assert_eq!(
            worth_reopening(&theirs),
            Err(SignerCallError::from_status(&theirs))
        );
        assert_eq!(cut_off(&theirs), Err(SignerCallError::from_status(&theirs)));
        let fault = with_reason(tonic::Status::internal("internal error"), "internal");
        assert!(matches!(cut_off(&fault), Err(SignerCallError::Failed(_))));
        assert!(matches!(
            worth_reopening(&tonic::Status::internal("no reason")),
            Err(SignerCallError::Failed(_))
        ));
    }
}
