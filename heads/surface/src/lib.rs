//! The data-operation surface shared by every head. One table names each
//! data operation on the CLI, the HTTP API and MCP, with one parameter
//! schema and one result schema; one set of functions renders the results.
//! A head is a view over this table, never a second definition of it; the
//! parity gate ([`parity::check_parity`]) compares what each head really
//! serves against it, and [`manifest`] generates `docs/operations.*`.
//! [`policy_command`] declares the `policy` command line that the CLI
//! hands to the signer's binary.
//!
//! Must not: decide, sign, or take or return a proof except where the table
//! says so (the API's and CLI's `execute`, never MCP).
#![forbid(unsafe_code)]

pub mod manifest;
pub mod non_data;
pub mod operations;
pub mod parity;
pub mod policy_command;
pub mod results;

pub use non_data::{NON_DATA, NonData};
pub use operations::Head;
pub use operations::{
    DATA_OPERATIONS, DataOperation, Exception, Exposure, MCP_TAKES_NO_PROOF, ParamSchema,
    propose_tool_name,
};
pub use parity::{ParityError, check_parity};
