//! What the service acts with: the head's signer connection, the gate, the
//! ledger and the registry, either ready (a long-running head builds them
//! once at start) or built on first use (a CLI process runs one operation,
//! and a read that needs only the signer must not pay for the signer's keys,
//! a ledger connection and the registry file).
//!
//! Must not: decide anything; a failure to build is a fault of the call
//! that needed it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use countersign_gate::Gate;
use countersign_ledger::Ledger;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use tonic::transport::Channel;

/// A resource being built; its error is the message a head shows for the
/// fault (never a secret).
pub type Building<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// How the service gets what an operation needs, when it first needs it.
pub trait Resources: Send + Sync {
    /// A signer client authenticated as this installation's head; an
    /// error means the signer cannot be reached.
    fn head(&self) -> Building<'_, SignerClient<Channel>>;
    /// The registry the head lists operations from.
    fn registry(&self) -> Result<Arc<Registry>, String>;
    /// The ledger, for reading a recorded disposition.
    fn ledger(&self) -> Building<'_, Ledger>;
    /// The gate, for executing.
    fn gate(&self) -> Building<'_, Gate>;
}

/// Resources built before the service: a gate, and the registry the head
/// serves (`None`: the registry as the gate last loaded it).
pub(crate) struct Ready {
    pub(crate) head: SignerClient<Channel>,
    pub(crate) gate: Gate,
    pub(crate) registry: Option<Arc<Registry>>,
}

impl Resources for Ready {
    fn head(&self) -> Building<'_, SignerClient<Channel>> {
        let head = self.head.clone();
        Box::pin(async move { Ok(head) })
    }

    fn registry(&self) -> Result<Arc<Registry>, String> {
        Ok(self
            .registry
            .clone()
            .unwrap_or_else(|| self.gate.registry()))
    }

    fn ledger(&self) -> Building<'_, Ledger> {
        let ledger = self.gate.ledger().clone();
        Box::pin(async move { Ok(ledger) })
    }

    fn gate(&self) -> Building<'_, Gate> {
        let gate = self.gate.clone();
        Box::pin(async move { Ok(gate) })
    }
}
