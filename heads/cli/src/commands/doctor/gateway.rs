//! The doctor's gateway checks: for each upstream MCP server of
//! `gateway.toml`, one line: reachable, its tools listed, and its pinned
//! definitions unchanged. Nothing is printed without a `gateway.toml`.
//! Starts each stdio upstream once (as `countersign mcp` would) and stops it.

use countersign_gateway::Upstreams;
use countersign_registry::Registry;

use super::NETWORK_TIMEOUT;
use super::report::Check;

/// One check per upstream of `registry`'s gateway, or none without one.
pub(super) async fn check_gateway(registry: &Registry) -> Vec<Check> {
    let Some(file) = registry.gateway() else {
        return Vec::new();
    };
    let upstreams = Upstreams::start(file);
    let mut checks = Vec::new();
    for upstream in &file.upstream {
        let name = format!("gateway {}", upstream.name);
        // A stdio server may take a moment to start: twice the bound.
        let listed =
            tokio::time::timeout(2 * NETWORK_TIMEOUT, upstreams.list_tools(&upstream.name)).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => {
                checks.push(Check::fail(
                    name,
                    e.to_string(),
                    "check its [upstream] in gateway.toml and that the server starts or answers",
                ));
                continue;
            }
            Err(_) => {
                checks.push(Check::fail(
                    name,
                    format!("listed no tools within {} s", 2 * NETWORK_TIMEOUT.as_secs()),
                    "check that the server starts or answers",
                ));
                continue;
            }
        };
        let pins = registry.pins();
        let mut changed = Vec::new();
        let mut unpinned = 0usize;
        for tool in &tools {
            match pins.get(&upstream.name, &tool.definition.name) {
                None => unpinned += 1,
                Some(pin)
                    if tool.definition.sha256_hex().as_deref() != Some(pin.sha256.as_str()) =>
                {
                    changed.push(tool.definition.name.clone());
                }
                Some(_) => {}
            }
        }
        let gone: Vec<String> = pins
            .of(&upstream.name)
            .filter(|(tool, _)| !tools.iter().any(|t| &t.definition.name == *tool))
            .map(|(tool, _)| tool.clone())
            .collect();
        let detail = format!(
            "{} tools listed, {} pinned, {unpinned} not pinned",
            tools.len(),
            tools.len() - unpinned - changed.len()
        );
        checks.push(if changed.is_empty() && gone.is_empty() {
            Check::ok(name, detail)
        } else {
            Check::warn(
                name,
                format!("{detail}; changed since pinned: [{}]; pinned and no longer listed: [{}]", changed.join(", "), gone.join(", ")),
                Some("review the changes with `countersign gateway tools`; calls of a changed tool are refused until a person accepts it again (--accept proposes it)".into()),
            )
        });
    }
    upstreams.shutdown().await;
    checks
}
