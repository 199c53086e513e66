//! MCP frames as `countersign mcp` reads them from its client: screening
//! never panics, hands the MCP SDK only what the strict parser accepts, and
//! answers every refusal with a JSON-RPC error. The body is
//! `countersign_mcp::fuzz_frame`, which a unit test also runs over the seed
//! corpus in `seeds/mcp_frame/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| countersign_mcp::fuzz_frame(data));
