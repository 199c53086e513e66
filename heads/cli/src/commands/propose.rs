//! Proposing and reading proposals: `propose`, `show`, `list`, `withdraw`
//! (data operations of the service, [`super::data`]) and `pending` (as an
//! approver). The signer validates, canonicalizes and renders; this head
//! only parses, calls and prints.

use countersign_proto::v1::{ListPendingRequest, ProposalStatus, ProposalView};
use countersign_service::{Done, Operation};
use countersign_verifier::ProposalId;

use std::path::Path;

use countersign_verifier::canonical;

use super::data::{self, unexpected};
use super::{input_name, read_input};
use crate::Io;
use crate::args::{ListArgs, ProposeArgs};
use crate::context::Context;
use crate::error::{CliError, exit};
use countersign_surface::results;

use crate::output::{action_summary, proposal_text, write_json, write_text};

/// The largest arguments file accepted (the signer enforces its own bound too).
const MAX_ARGS_FILE: u64 = 64 * 1024;

/// Read `--args-file FILE|-` and parse it with the project's strict parser:
/// anything that is not one JSON object (empty, not UTF-8, oversize,
/// duplicate keys, ...) is refused (exit code 3) before anything is
/// contacted.
pub(crate) fn read_arguments(path: &Path, io: &mut Io<'_>) -> Result<String, CliError> {
    let bytes = read_input(path, MAX_ARGS_FILE, io)?;
    let bad = |why: String| CliError::Refused(format!("{}: {why}", input_name(path)));
    let limit = usize::try_from(MAX_ARGS_FILE).unwrap_or(usize::MAX);
    let value = canonical::parse(&bytes, limit)
        .map_err(|e| bad(format!("the arguments are not strict JSON: {e}")))?;
    if !value.is_object() {
        return Err(bad("the arguments must be a JSON object".to_string()));
    }
    // The bytes are UTF-8: the strict parser checked them.
    String::from_utf8(bytes).map_err(|_| bad("the arguments are not UTF-8 text".to_string()))
}

/// `countersign propose OP --args-file FILE|-`, with the arguments already
/// read by [`read_arguments`]. A proposal the operator's policy denied as
/// it was recorded is printed as any other, and ends with exit code 3
/// (refused): nobody can approve it, so a script must not wait for it.
pub(crate) async fn propose(
    ctx: &Context,
    args: ProposeArgs,
    arguments_json: String,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::Propose {
        operation: args.operation,
        arguments: arguments_json,
        note: args.note,
    };
    let view = proposal(ctx, operation, &args.session, json, io).await?;
    if json {
        write_json(io.out, &results::proposal(&view))?;
    } else {
        write_text(
            io.out,
            &format!(
                "{}\n{}\n",
                proposal_text(&view).trim_end(),
                next_step(&view)
            ),
        )?;
    }
    match view.status() {
        ProposalStatus::Denied => Err(CliError::Answered(exit::REFUSED)),
        _ => Ok(()),
    }
}

/// What comes after a proposal, by its status as recorded: only a
/// pending one waits for a person (a policy's denial or a rule's
/// approval decided it in the same call).
fn next_step(view: &ProposalView) -> String {
    let id = &view.id;
    match view.status() {
        ProposalStatus::Pending => {
            format!("proposed {id}; a person approves it with: countersign approve {id}")
        }
        ProposalStatus::Denied => {
            format!(
                "proposed {id}: denied at once ({}); nobody can approve it",
                view.reason
            )
        }
        ProposalStatus::Approved => format!(
            "proposed {id}: approved at once ({}); run it with: countersign exec {id} --handoff",
            view.provenance
        ),
        status => format!("proposed {id}: {}", status.name()),
    }
}

/// `countersign show ID`
pub(crate) async fn show(
    ctx: &Context,
    id: &ProposalId,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::GetProposal { id: id.clone() };
    let view = proposal(ctx, operation, "", json, io).await?;
    if json {
        write_json(io.out, &results::proposal(&view))
    } else {
        write_text(io.out, &proposal_text(&view))
    }
}

/// `countersign list [--status S] [--limit N]`
pub(crate) async fn list(
    ctx: &Context,
    args: ListArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::ListProposals {
        status: args.status,
        limit: args.limit,
    };
    match data::done(data::call(ctx, operation, "").await, json, io)? {
        Done::Proposals(list) => print_list(&list, "no proposals", json, io),
        other => Err(unexpected(&other)),
    }
}

/// `countersign withdraw ID`
pub(crate) async fn withdraw(
    ctx: &Context,
    id: &ProposalId,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::Withdraw { id: id.clone() };
    let view = proposal(ctx, operation, "", json, io).await?;
    if json {
        write_json(io.out, &results::proposal(&view))
    } else {
        write_text(
            io.out,
            &format!("withdrew {}; it can no longer be approved\n", view.id),
        )
    }
}

/// Run an operation whose result is one proposal.
pub(crate) async fn proposal(
    ctx: &Context,
    operation: Operation,
    session: &str,
    json: bool,
    io: &mut Io<'_>,
) -> Result<ProposalView, CliError> {
    match data::done(data::call(ctx, operation, session).await, json, io)? {
        Done::Proposal(view) => Ok(*view),
        other => Err(unexpected(&other)),
    }
}

/// `countersign pending`
pub(crate) async fn pending(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let mut approver = ctx.approver().await?;
    let list = approver
        .list_pending(ListPendingRequest {})
        .await?
        .into_inner();
    print_list(&list.proposals, "no proposals are pending", json, io)
}

/// One line per proposal, or a JSON array.
fn print_list(
    proposals: &[ProposalView],
    empty: &str,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    if json {
        let items: Vec<_> = proposals.iter().map(results::proposal).collect();
        return write_json(io.out, &items);
    }
    if proposals.is_empty() {
        return write_text(io.out, &format!("{empty}\n"));
    }
    let mut text = String::new();
    for view in proposals {
        text.push_str(&format!(
            "{}  {:<9} {}  {}  session {}  {}\n",
            view.id,
            view.status().name(),
            view.operation,
            action_summary(view, 100),
            view.session,
            view.created_at
        ));
    }
    write_text(io.out, &text)
}
