//! The sealed `requestState` of an `input_required` result (MCP 2026-07-28,
//! SEP-2322): how a call that waits for a person asks a client on that
//! protocol, which cannot receive a server-to-client request, to open the
//! console's page of its proposal, and then retry the same call.
//!
//! The state names the proposal the call made. It is sealed with a key only
//! this process holds (HMAC-SHA256, rmcp's `RequestStateCodec`), bound to
//! the principal, the session, the tool and the SHA-256 of the call's
//! canonical arguments as associated data, and expires after
//! [`crate::console::ELICITATION_WAIT`]. A retry carrying it runs the
//! proposal if a person approved it meanwhile, and otherwise returns it,
//! still waiting; it never proposes again.
//!
//! Must not: trust a state it cannot open with the retry's own binding
//! (another session, tool or arguments, tampered, expired, or sealed by
//! another process): such a retry is refused and nothing runs. Nor treat
//! the client's `inputResponses` as anything: only the signer says whether
//! a person approved.

use countersign_verifier::ProposalId;
use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use serde_json::{Value, json};
use zeroize::Zeroizing;

use crate::console::ELICITATION_WAIT;

/// The sealing key's length in bytes.
const KEY_BYTES: usize = 32;

/// What a state is bound to: the call it was issued for.
pub(crate) struct Binding<'a> {
    /// This head's principal.
    pub(crate) principal: &'a str,
    /// The MCP session (one per connection on stdio, per credential over HTTP).
    pub(crate) session: &'a str,
    /// The tool called, as the client named it.
    pub(crate) tool: &'a str,
    /// The call's arguments.
    pub(crate) arguments: &'a serde_json::Map<String, Value>,
}

impl Binding<'_> {
    /// The associated data: canonical JSON of the principal, session, tool
    /// and the arguments' SHA-256 (`None` if the arguments have no
    /// canonical form; such a call was refused before it proposed).
    fn associated_data(&self) -> Option<Vec<u8>> {
        let arguments = Value::Object(self.arguments.clone());
        let digest = countersign_verifier::canonical::canonical_sha256_hex(&arguments).ok()?;
        let bound = json!({
            "principal": self.principal,
            "session": self.session,
            "tool": self.tool,
            "arguments_sha256": digest,
        });
        countersign_verifier::canonical::to_canonical(&bound)
            .ok()
            .map(String::into_bytes)
    }
}

/// Why a retry's state was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateRefused {
    /// It expired ([`ELICITATION_WAIT`] after it was issued).
    #[error("it expired")]
    Expired,
    /// It was not issued by this process for this very call (another
    /// session, tool or arguments; altered; or this head restarted).
    #[error("it was not issued by this gateway for this session, tool and arguments")]
    NotIssuedForThisCall,
}

/// The sealing key of this process.
pub(crate) struct Sealer {
    codec: RequestStateCodec,
}

impl Sealer {
    /// A sealer with a fresh random key: states issued by another process,
    /// or before a restart, do not open.
    pub(crate) fn new() -> Result<Sealer, String> {
        let mut key = Zeroizing::new([0u8; KEY_BYTES]);
        getrandom::fill(key.as_mut_slice())
            .map_err(|e| format!("no randomness for the request-state key: {e}"))?;
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|e| format!("request-state key: {e}"))?;
        Ok(Sealer { codec })
    }

    /// The sealed state naming proposal `id` for the call `binding`,
    /// valid for [`ELICITATION_WAIT`].
    pub(crate) fn seal(&self, binding: &Binding<'_>, id: &ProposalId) -> Option<String> {
        self.seal_lasting(binding, id, ELICITATION_WAIT)
    }

    fn seal_lasting(
        &self,
        binding: &Binding<'_>,
        id: &ProposalId,
        ttl: std::time::Duration,
    ) -> Option<String> {
        let associated = binding.associated_data()?;
        let options = SealOptions::new().associated_data(&associated).ttl(ttl);
        // The payload: the proposal the call made (or, for
        // `execute_approved`, named).
        Some(self.codec.seal_with(id.to_string().as_bytes(), &options))
    }

    /// The proposal `sealed` names, if it was sealed by this process for
    /// exactly the call `binding` and has not expired.
    pub(crate) fn open(
        &self,
        binding: &Binding<'_>,
        sealed: &str,
    ) -> Result<ProposalId, StateRefused> {
        let associated = binding
            .associated_data()
            .ok_or(StateRefused::NotIssuedForThisCall)?;
        let proposal = self
            .codec
            .open_with(sealed, &associated)
            .map_err(|e| match e {
                RequestStateError::Expired => StateRefused::Expired,
                _ => StateRefused::NotIssuedForThisCall,
            })?;
        let proposal =
            String::from_utf8(proposal).map_err(|_| StateRefused::NotIssuedForThisCall)?;
        ProposalId::parse(&proposal).map_err(|_| StateRefused::NotIssuedForThisCall)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(path: &str) -> serde_json::Map<String, Value> {
        json!({"path": path}).as_object().cloned().unwrap()
    }

    #[test]
    fn a_state_opens_only_for_the_call_it_was_issued_for() {
        let sealer = Sealer::new().unwrap();
        let id = ProposalId::parse("prop_0123456789abcdef0123456789abcdef").unwrap();
        let a = args("/srv/a");
        let call = |session, tool, arguments| Binding {
            principal: "pr_1",
            session,
            tool,
            arguments,
        };
        let sealed = sealer
            .seal(&call("s1", "files__write_file", &a), &id)
            .unwrap();
        assert_eq!(
            sealer.open(&call("s1", "files__write_file", &a), &sealed),
            Ok(id.clone())
        );
        let other = args("/srv/b");
        for binding in [
            call("s2", "files__write_file", &a),
            call("s1", "files__read_text_file", &a),
            call("s1", "files__write_file", &other),
            Binding {
                principal: "pr_2",
                ..call("s1", "files__write_file", &a)
            },
        ] {
            assert_eq!(
                sealer.open(&binding, &sealed),
                Err(StateRefused::NotIssuedForThisCall)
            );
        }
        let mut altered = sealed.clone();
        altered.push('A');
        assert_eq!(
            sealer.open(&call("s1", "files__write_file", &a), &altered),
            Err(StateRefused::NotIssuedForThisCall)
        );
        // Another process (a restart) holds another key.
        let restarted = Sealer::new().unwrap();
        assert_eq!(
            restarted.open(&call("s1", "files__write_file", &a), &sealed),
            Err(StateRefused::NotIssuedForThisCall)
        );
    }

    #[test]
    fn an_expired_state_is_refused_as_expired() {
        let sealer = Sealer::new().unwrap();
        let id = ProposalId::parse("prop_0123456789abcdef0123456789abcdef").unwrap();
        let a = args("/srv/a");
        let binding = Binding {
            principal: "pr_1",
            session: "s1",
            tool: "execute_approved",
            arguments: &a,
        };
        let sealed = sealer
            .seal_lasting(&binding, &id, std::time::Duration::from_millis(1))
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(sealer.open(&binding, &sealed), Err(StateRefused::Expired));
    }
}
