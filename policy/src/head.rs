//! The head a proposal came through, as a policy sees it
//! (`context.head`). This module owns the names; it must not guess a head
//! from anything but the caller's word.

use std::fmt;

/// The head that proposed: the interface the request came in through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Head {
    /// The command line (`countersign propose`).
    Cli,
    /// The private HTTP API.
    Api,
    /// The MCP head (`countersign mcp`).
    Mcp,
    /// The approval console.
    Console,
    /// A coding agent's pre-tool-call hook (`countersign hook <agent>`).
    Hook,
    /// The MCP gateway's gated calls.
    Gateway,
}

impl Head {
    /// Every head.
    pub const ALL: [Head; 6] = [
        Head::Cli,
        Head::Api,
        Head::Mcp,
        Head::Console,
        Head::Hook,
        Head::Gateway,
    ];

    /// The name a policy compares `context.head` with.
    pub fn as_str(self) -> &'static str {
        match self {
            Head::Cli => "cli",
            Head::Api => "api",
            Head::Mcp => "mcp",
            Head::Console => "console",
            Head::Hook => "hook",
            Head::Gateway => "gateway",
        }
    }

    /// The head named `name` (as [`Head::as_str`] writes it).
    pub fn parse(name: &str) -> Option<Head> {
        Head::ALL.into_iter().find(|h| h.as_str() == name)
    }
}

impl fmt::Display for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
