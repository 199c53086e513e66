//! countersign's MCP head: a Model Context Protocol server on stdio, on a
//! Unix socket for one other OS user ([`serve_unix`]), or on streamable
//! HTTP behind the API's bearer credentials ([`serve_http`]),
//! built on the official Rust SDK (`rmcp`). An agent lists operations, proposes an
//! exact action, reads its status, withdraws its own pending proposal, and
//! executes a proposal once a person has approved it, through the signer's
//! one-time handoff to this principal and session.
//!
//! Trust: the server embeds the gate (public keys and the ledger) and talks
//! to the signer with the head certificate, so it can verify and consume a
//! proof but never sign one. No tool takes, returns or echoes a proof, a
//! challenge answer or a decision; no tool approves, denies or creates a
//! rule. It uses elicitation only to ask a client to open the web console's
//! page of a proposal (URL mode); no elicitation answer, tool argument or
//! client claim is ever an approval (see SECURITY.md, boundary 2a).
#![forbid(unsafe_code)]

mod console;
mod frame;
mod gateway;
mod http;
mod reply;
mod request_state;
mod server;
mod session;
mod tools;
mod transport;
mod unix;

#[cfg(any(test, feature = "fuzzing"))]
pub use frame::fuzz_frame;
pub use frame::{MAX_FRAME_BYTES, Screened, screen_frame};
pub use gateway::Gateway;
pub use http::{HttpAuth, MAX_BODY_BYTES, MCP_PATH, METADATA_PATH, serve_http};
pub use server::{McpHead, ServeError};
pub use session::new_session_id;
pub use tools::{exposures, output_schema, structured};
pub use transport::StrictTransport;
pub use unix::serve_unix;
