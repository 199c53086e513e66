//! `countersign gateway tools [--accept UPSTREAM/TOOL ...]`: what each
//! upstream MCP server of `gateway.toml` lists now against what was pinned
//! (`new`, `pinned`, `changed`, `gone`), with the operator's policy; with
//! `--accept`, a proposal of `gateway.pin` carrying the definition each
//! named tool has now and the digest it replaces. Accepting is a person's
//! act: nothing is pinned until a person approves that proposal at an
//! approver interface and a head executes it (the gate's `pin` effect
//! writes `gateway-pins.json`). Pinning changes the contract revision of
//! the tool's operation, so approvals given under the old definition no
//! longer execute.
//!
//! Must not: write the pins file, propose a tool the upstream does not
//! list now, or propose anything not named on the command line.

use std::collections::BTreeMap;

use countersign_gateway::{ListedTool, Upstreams};
use countersign_registry::gateway::{GatewayFile, PIN_OPERATION, PinRequest, Pins, pin_arguments};
use countersign_registry::{Registry, Schemas, Sources, terminal_safe};
use countersign_service::Operation;
use countersign_surface::results;
use serde_json::json;

use crate::Io;
use crate::args::GatewayToolsArgs;
use crate::commands::propose::proposal;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{proposal_text, write_json, write_text};

/// One upstream tool against its pin.
struct Row {
    upstream: String,
    tool: String,
    policy: &'static str,
    standing: &'static str,
    listed_sha256: Option<String>,
    pinned_sha256: Option<String>,
    description: Option<String>,
}

/// `countersign gateway tools`
pub(crate) async fn tools(
    ctx: &Context,
    args: GatewayToolsArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    // No argument is validated here: nothing to compile.
    let registry = Sources::read(&ctx.config.registry)
        .and_then(|sources| Registry::from_sources(&sources, Schemas::OnFirstUse))
        .map_err(CliError::error)?;
    let Some(file) = registry.gateway() else {
        return Err(CliError::error(format!(
            "no gateway.toml beside the registry ({}): there is no upstream MCP server to list",
            ctx.config.registry.display()
        )));
    };
    let upstreams = Upstreams::start(file);
    let listed = list(&upstreams, file).await;
    upstreams.shutdown().await;
    let listed = listed?;
    let mut requests = Vec::new();
    for name in &args.accept {
        let (upstream, tool) = (name.upstream.as_str(), name.tool.as_str());
        let found = listed
            .get(upstream)
            .and_then(|tools| tools.iter().find(|t| t.definition.name == tool))
            .ok_or_else(|| {
                CliError::error(format!(
                    "--accept {upstream}/{tool}: {upstream} does not list a tool {tool} now; nothing was proposed"
                ))
            })?;
        let replaces = registry
            .pins()
            .get(upstream, tool)
            .map(|p| p.sha256.clone());
        if replaces.is_some() && replaces == found.definition.sha256_hex() {
            let _ = writeln!(
                io.err,
                "{upstream}/{tool} is pinned as listed now; not proposed"
            );
            continue;
        }
        requests.push(PinRequest {
            upstream: upstream.to_owned(),
            tool: tool.to_owned(),
            description: found.definition.description.clone(),
            input_schema: found.definition.input_schema.clone(),
            shown: found.definition.shown.clone(),
            replaces,
        });
    }
    if !requests.is_empty() {
        return propose_pins(ctx, &args.session, &requests, json, io).await;
    }
    let rows = rows(file, registry.pins(), &listed);
    if json {
        let rows: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "upstream": r.upstream, "tool": r.tool, "policy": r.policy,
                    "standing": r.standing, "listed_sha256": r.listed_sha256,
                    "pinned_sha256": r.pinned_sha256, "description": r.description,
                })
            })
            .collect();
        return write_json(io.out, &rows);
    }
    let mut text = String::new();
    for r in &rows {
        let sha = r
            .listed_sha256
            .as_deref()
            .or(r.pinned_sha256.as_deref())
            .and_then(|s| s.get(..12))
            .unwrap_or("-");
        text.push_str(&format!(
            "{}/{}  {}  {}  {sha}\n",
            r.upstream, r.tool, r.policy, r.standing
        ));
        if r.standing != "pinned" {
            let description = r.description.as_deref().unwrap_or("(no description)");
            text.push_str(&format!("    {}\n", terminal_safe(description)));
        }
    }
    io.out.write_all(text.as_bytes()).map_err(CliError::error)
}

/// What each upstream lists now; an upstream that cannot be asked fails
/// the command (nothing is pinned from a partial picture).
async fn list(
    upstreams: &Upstreams,
    file: &GatewayFile,
) -> Result<BTreeMap<String, Vec<ListedTool>>, CliError> {
    let mut listed = BTreeMap::new();
    for upstream in &file.upstream {
        let tools = upstreams
            .list_tools(&upstream.name)
            .await
            .map_err(|e| CliError::error(format!("{}: {e}", upstream.name)))?;
        listed.insert(upstream.name.clone(), tools);
    }
    Ok(listed)
}

/// Every listed or pinned tool of every configured upstream, by upstream
/// and tool name.
fn rows(file: &GatewayFile, pins: &Pins, listed: &BTreeMap<String, Vec<ListedTool>>) -> Vec<Row> {
    let mut rows = Vec::new();
    for upstream in &file.upstream {
        let mut tools: BTreeMap<&str, (Option<&ListedTool>, Option<&str>)> = BTreeMap::new();
        for tool in listed.get(&upstream.name).into_iter().flatten() {
            tools.entry(&tool.definition.name).or_default().0 = Some(tool);
        }
        for (name, pin) in pins.of(&upstream.name) {
            tools.entry(name).or_default().1 = Some(&pin.sha256);
        }
        for (name, (tool, pinned)) in tools {
            let listed_sha256 = tool.and_then(|t| t.definition.sha256_hex());
            let standing = match (&listed_sha256, pinned) {
                (None, _) if tool.is_none() => "gone",
                (_, None) => "new",
                (Some(now), Some(pin)) if now == pin => "pinned",
                _ => "changed",
            };
            rows.push(Row {
                upstream: upstream.name.clone(),
                tool: name.to_owned(),
                policy: upstream.policy(name).as_str(),
                standing,
                listed_sha256,
                pinned_sha256: pinned.map(str::to_owned),
                description: tool.and_then(|t| t.definition.description.clone()),
            });
        }
    }
    rows
}

/// Proposes `gateway.pin` for `requests` (one proposal: a person accepts
/// them together) and prints it with what to do next.
async fn propose_pins(
    ctx: &Context,
    session: &str,
    requests: &[PinRequest],
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::Propose {
        operation: PIN_OPERATION.to_owned(),
        arguments: pin_arguments(requests).to_string(),
        note: String::new(),
    };
    let view = proposal(ctx, operation, session, json, io).await?;
    if json {
        return write_json(io.out, &results::proposal(&view));
    }
    write_text(
        io.out,
        &format!(
            "{}\nproposed {id}: nothing is pinned until a person approves it (in the console, or `countersign approve {id} --hand-off`); then pin it with `countersign exec {id} --handoff`\n",
            proposal_text(&view).trim_end(),
            id = view.id,
        ),
    )
}
