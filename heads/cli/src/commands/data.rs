//! The CLI's adapter to the data-operation service: each data command's
//! parsed arguments become an [`Operation`], and the service's [`Answer`]
//! is printed as text or as the one `--json` document. No data operation is
//! implemented here; the service connects to the signer and builds the gate
//! or the ledger only when the operation needs them, so a read pays for
//! nothing else.

use std::sync::{Arc, Mutex, PoisonError};

use countersign_gate::{Gate, signer_client};
use countersign_ledger::Ledger;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use countersign_service::{Answer, Building, Done, Fault, Operation, Resources, Service};
use tokio::sync::OnceCell;
use tokio::task::JoinHandle;
use tonic::transport::Channel;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::refused;

/// This installation, as the service's resources: each built on first use,
/// except what an execution needs besides the signer, which is started
/// before it (see [`Context::open_for_execution`]).
struct Installation {
    ctx: Context,
    head: OnceCell<SignerClient<Channel>>,
    /// The ledger's opening, started before the signer connection.
    opening: Mutex<Option<JoinHandle<Result<Ledger, CliError>>>>,
}

impl Drop for Installation {
    /// A command that ends without the gate (the signer could not be
    /// reached) does not go on opening the ledger.
    fn drop(&mut self) {
        if let Some(opening) = self.opening.get_mut().ok().and_then(Option::take) {
            opening.abort();
        }
    }
}

impl Installation {
    /// The ledger: the opening started for an execution, else a new one.
    async fn ledger(&self) -> Result<Ledger, String> {
        let started = self
            .opening
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let opened = match started {
            Some(opening) => opening
                .await
                .map_err(|e| CliError::Error(format!("cannot open the ledger: {e}")))
                .and_then(|opened| opened),
            None => self.ctx.ledger_for_one_command().await,
        };
        opened.map_err(|e| e.to_string())
    }

    async fn head(&self) -> Result<SignerClient<Channel>, String> {
        self.head
            .get_or_try_init(|| self.ctx.head())
            .await
            .cloned()
            .map_err(|e| e.to_string())
    }
}

impl Resources for Installation {
    fn head(&self) -> Building<'_, SignerClient<Channel>> {
        Box::pin(Installation::head(self))
    }

    fn registry(&self) -> Result<Arc<Registry>, String> {
        self.ctx.registry().map_err(|e| e.to_string())
    }

    fn ledger(&self) -> Building<'_, Ledger> {
        Box::pin(Installation::ledger(self))
    }

    fn gate(&self) -> Building<'_, Gate> {
        Box::pin(async move {
            // Connecting to the signer (mTLS) and fetching its keys, and
            // opening the ledger, at once: neither needs the other.
            let keys = async {
                let mut head = Installation::head(self).await?;
                let keys = signer_client::public_keys(&mut head).await;
                Ok::<_, String>((head, keys.map_err(|e| e.to_string())?))
            };
            let (connected, ledger) = tokio::join!(keys, Installation::ledger(self));
            let (head, keys) = connected?;
            let ledger = ledger?;
            self.ctx
                .gate_from(&head, keys, ledger)
                .map_err(|e| e.to_string())
        })
    }
}

/// Run `operation` for `session` of `ctx`'s principal.
pub(crate) async fn call(ctx: &Context, operation: Operation, session: &str) -> Answer {
    // An execution consumes through the gate, which needs the ledger and
    // the registry: both are started now, so that they overlap the
    // signer's TLS handshake instead of following it.
    let executes = matches!(
        operation,
        Operation::ExecuteWithProof { .. } | Operation::ExecuteHandoff { .. }
    );
    service(ctx, executes).call(operation, session).await
}

/// The service over this installation, building what an operation needs
/// on first use; one that `executes` starts opening the ledger now.
pub(crate) fn service(ctx: &Context, executes: bool) -> Service {
    let installation = Installation {
        ctx: ctx.clone(),
        head: OnceCell::new(),
        opening: Mutex::new(executes.then(|| ctx.open_for_execution())),
    };
    Service::lazy(ctx.principal.clone(), Arc::new(installation))
        .through(countersign_service::Through::Cli)
}

/// The result of an answer, for the command to print; a refusal or a
/// fault ends the command. With `--json`, a refusal prints the service's
/// own refusal document (its reason code and message, as the API and MCP
/// return them) before the command ends.
pub(crate) fn done(answer: Answer, json: bool, io: &mut Io<'_>) -> Result<Done, CliError> {
    match answer {
        Answer::Done(done) => Ok(*done),
        Answer::Refused { reason, message } => {
            Err(refused(io.out, json, reason.as_str(), &message))
        }
        Answer::Fault(Fault::Unavailable(detail) | Fault::Internal(detail)) => {
            Err(CliError::Error(detail))
        }
    }
}

/// A result of a kind the operation does not return (a fault of the
/// service, not of the input).
pub(crate) fn unexpected(done: &Done) -> CliError {
    CliError::Error(format!("unexpected answer: {}", done.to_value()))
}
