//! Session identity: each MCP connection gets a fresh random session id,
//! bound into every proposal it makes and checked when it executes. The
//! client never chooses it.

/// A new session id: `mcp-` and 16 random hex digits (within the signer's
/// `[A-Za-z0-9._:-]{1,128}`).
pub fn new_session_id() -> Result<String, String> {
    random_id("mcp")
}

/// `{prefix}-` and 16 random hex digits (a session id, an elicitation id).
pub(crate) fn random_id(prefix: &str) -> Result<String, String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a {prefix} id: {e}"))?;
    Ok(format!("{prefix}-{}", hex::encode(bytes)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn session_ids_are_fresh_and_in_the_signers_charset() {
        let (a, b) = (new_session_id().unwrap(), new_session_id().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 20);
        assert!(a.starts_with("mcp-"));
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-'));
    }
}
