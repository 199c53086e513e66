//! One module per group of commands; `dispatch` routes a parsed command line.

pub(crate) mod api;
pub(crate) mod console;
pub(crate) mod console_trust;
mod credential;
mod data;
pub(crate) mod decide;
mod doctor;
mod evidence;
mod exec;
mod gateway;
mod hook;
mod inspect;
mod mcp;
mod metrics;
mod notify;
mod passkey_audit;
mod policy;
mod propose;
mod rules;
mod rules_suggest;
mod setup;
mod signer_binary;
mod system_setup;
mod tree_audit;
mod verify;
mod witness;

use crate::Io;
use crate::args::ProposalRef;
use crate::args::{
    ApiCommand, AuditArgs, AuditCommand, Cli, Command, ConsoleArgs, ConsoleCommand,
    CredentialCommand, EvidenceCommand, GatewayCommand, InitArgs, KeysCommand, McpArgs,
    NotifyCommand, OpsCommand, RulesCommand, SessionsCommand, TokenCommand, WitnessCommand,
};
use crate::context::Context;
use crate::error::CliError;
use countersign_verifier::ProposalId;

/// Run `cli`.
pub(crate) async fn dispatch(cli: Cli, io: &mut Io<'_>) -> Result<(), CliError> {
    let json = cli.json;
    // Offline: no home, no signer, no ledger.
    let command = match cli.command {
        Command::Verify(args) => return verify::verify(args, json, io),
        // Runs the signer's binary, which reads the home itself (or not,
        // with --registry).
        Command::Policy(args) if !args.reads_the_ledger() => {
            return policy::policy(cli.home, args, json).await;
        }
        Command::Evidence(EvidenceCommand::Verify(args)) => {
            return evidence::verify(args, json, io);
        }
        // Reads its input first, and answers every failure in the agent's
        // shape, even a home that does not load.
        Command::Hook(args) => return hook::hook(cli.home, args, io).await,
        Command::Init(InitArgs {
            agent: Some(agent),
            project,
            user,
        }) => return hook::init(cli.home, agent, project, user, json, io),
        // A console CA handed over by the console's administrator: the
        // person trusting it needs no home of their own.
        Command::Console(ConsoleArgs {
            command: Some(ConsoleCommand::Trust(trust)),
            ..
        }) if trust.ca.is_some() => return console_trust::trust(None, &trust, json, io),
        // The agent's relay to a gateway of another user reads no home.
        Command::Mcp(McpArgs {
            connect: Some(path),
            server_user: Some(user),
            ..
        }) => return mcp::connect(&path.0, &user).await,
        // As root, for other users' homes: no home of its own.
        Command::Setup(args) => return system_setup::setup(args, json, io),
        Command::SetupSchema(args) => return system_setup::schema(&args.url, io).await,
        command => command,
    };
    let home = Context::home(cli.home)?;
    match command {
        Command::Init(_) => setup::init(&home, json, io).await,
        Command::Up(args) => setup::up(&home, args.api, args.console, io).await,
        // Not `Context::load`: the doctor reports a home that does not load.
        Command::Doctor => doctor::doctor(&home, json, io).await,
        // Input files are parsed before anything else is read or contacted:
        // a bad one is exit code 1 whatever the state of the installation.
        Command::Propose(args) => {
            let arguments = propose::read_arguments(&args.args_file, io)?;
            let ctx = Context::load(home)?;
            propose::propose(&ctx, args, arguments, json, io).await
        }
        Command::Exec(args) => {
            let proof = exec::read_proof(args.proof_file.as_deref(), io)?;
            let ctx = Context::load(home)?;
            exec::exec(&ctx, args, proof, json, io).await
        }
        Command::Rules(RulesCommand::Create(args)) => {
            let definition = rules::read_definition(&args, io)?;
            let ctx = Context::load(home)?;
            rules::create(&ctx, definition, json, io).await
        }
        Command::Rules(RulesCommand::Revise(args)) => {
            let definition = rules::read_definition(&args.file, io)?;
            let ctx = Context::load(home)?;
            rules::revise(&ctx, &args.id, args.version, definition, json, io).await
        }
        command => {
            let ctx = Context::load(home)?;
            match command {
                Command::Ops(OpsCommand::List) => inspect::ops_list(&ctx, json, io),
                Command::Policy(args) => policy::diff(&ctx, &args, json, io).await,
                Command::Keys(KeysCommand::List) => inspect::keys_list(&ctx, json, io).await,
                Command::Keys(KeysCommand::Export(args)) => {
                    verify::keys_export(&ctx, args, io).await
                }
                Command::Show(id) => {
                    let id = resolved(&ctx, &id.id).await?;
                    propose::show(&ctx, &id, json, io).await
                }
                Command::List(args) => propose::list(&ctx, args, json, io).await,
                Command::Withdraw(id) => {
                    let id = resolved(&ctx, &id.id).await?;
                    propose::withdraw(&ctx, &id, json, io).await
                }
                Command::Pending => propose::pending(&ctx, json, io).await,
                Command::Approve(args) => decide::approve(&ctx, args, json, io).await,
                Command::Deny(args) => decide::deny(&ctx, args, json, io).await,
                Command::Revoke(args) => decide::revoke(&ctx, args, json, io).await,
                Command::Result(id) => {
                    let id = resolved(&ctx, &id.id).await?;
                    exec::result(&ctx, &id, json, io).await
                }
                Command::Audit(AuditArgs {
                    command: Some(AuditCommand::Export(args)),
                    ..
                }) => inspect::audit_export(&ctx, args, io).await,
                Command::Audit(args) => inspect::audit(&ctx, args, json, io).await,
                Command::Reconcile(args) => exec::reconcile(&ctx, args, json, io).await,
                Command::Evidence(EvidenceCommand::Export(args)) => {
                    let id = resolved(&ctx, &args.id).await?;
                    evidence::export(&ctx, &id, args, io).await
                }
                Command::Mcp(args) => mcp::serve(&ctx, args, io).await,
                Command::Gateway(GatewayCommand::Tools(args)) => {
                    gateway::tools(&ctx, args, json, io).await
                }
                Command::Api(ApiCommand::Serve(args)) => api::serve(&ctx, args, io).await,
                Command::Api(ApiCommand::Token(TokenCommand::Create(args))) => {
                    api::token_create(&ctx, args, json, io)
                }
                Command::Api(ApiCommand::Token(TokenCommand::Revoke(id))) => {
                    api::token_revoke(&ctx, &id.id, json, io)
                }
                Command::Api(ApiCommand::Token(TokenCommand::List)) => {
                    api::token_list(&ctx, json, io)
                }
                Command::Console(args) => match args.command {
                    None => console::serve(&ctx, args.listen, args.as_approver.as_ref(), io).await,
                    Some(ConsoleCommand::Pair(pair)) => console::pair(
                        &ctx,
                        args.listen,
                        args.as_approver.as_ref(),
                        pair.qr,
                        json,
                        io,
                    ),
                    Some(ConsoleCommand::Trust(trust)) => {
                        console_trust::trust(Some(&ctx), &trust, json, io)
                    }
                    Some(ConsoleCommand::Sessions(SessionsCommand::List)) => {
                        console::sessions_list(&ctx, args.as_approver.as_ref(), json, io)
                    }
                    Some(ConsoleCommand::Sessions(SessionsCommand::Revoke(id))) => {
                        console::sessions_revoke(&ctx, args.as_approver.as_ref(), &id.id, json, io)
                            .await
                    }
                },
                Command::Credential(CredentialCommand::Create(args)) => {
                    credential::create(&ctx, args, json, io)
                }
                Command::Notify(NotifyCommand::Serve) => notify::serve(&ctx, io).await,
                Command::Notify(NotifyCommand::Status) => notify::status(&ctx, json, io).await,
                Command::Witness(WitnessCommand::Serve) => witness::serve(&ctx, io).await,
                Command::Witness(WitnessCommand::Status) => witness::status(&ctx, json, io).await,
                Command::Rules(RulesCommand::List) => rules::list(&ctx, json, io).await,
                Command::Rules(RulesCommand::Suggest(args)) => {
                    rules_suggest::suggest(&ctx, args, json, io).await
                }
                Command::Rules(RulesCommand::Revoke(args)) => {
                    rules::revoke(&ctx, args, json, io).await
                }
                Command::Init(_)
                | Command::Up(_)
                | Command::Doctor
                | Command::Propose(_)
                | Command::Hook(_)
                | Command::Setup(_)
                | Command::SetupSchema(_)
                | Command::Exec(_)
                | Command::Rules(RulesCommand::Create(_) | RulesCommand::Revise(_))
                | Command::Verify(_)
                | Command::Evidence(EvidenceCommand::Verify(_)) => {
                    unreachable!("handled above")
                }
            }
        }
    }
}

/// Read a whole input named on the command line: a file, or `-` for stdin.
/// One that cannot be read is an error (exit code 1); one larger than
/// `limit` bytes is refused (exit code 3), like any other refused content.
pub(crate) fn read_input(
    path: &std::path::Path,
    limit: u64,
    io: &mut Io<'_>,
) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let read = if path.as_os_str() == "-" {
        io.stdin.take(limit + 1).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(path)
            .map_err(|e| CliError::Error(format!("cannot read {}: {e}", path.display())))?
            .take(limit + 1)
            .read_to_end(&mut bytes)
    };
    read.map_err(|e| CliError::Error(format!("cannot read {}: {e}", path.display())))?;
    if bytes.len() as u64 > limit {
        return Err(CliError::Refused(format!(
            "{} is larger than {limit} bytes",
            path.display()
        )));
    }
    Ok(bytes)
}

/// How a message names an input: its path, or `stdin` for `-`.
pub(crate) fn input_name(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        path.display().to_string()
    }
}

/// The proposal `named` names, looked up as this principal's head when it
/// is the start of an id.
async fn resolved(ctx: &Context, named: &ProposalRef) -> Result<ProposalId, CliError> {
    match named {
        ProposalRef::Id(id) => Ok(id.clone()),
        ProposalRef::Prefix(_) => named.resolve(&mut ctx.head().await?).await,
    }
}
