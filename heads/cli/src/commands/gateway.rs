//! `countersign gateway tools [--accept UPSTREAM/TOOL ...]`: what each
//! upstream MCP server of `gateway.toml` lists now against what was pinned
//! (`new`, `pinned`, `changed`, `gone`; `unlisted` for a pinned tool of
//! an upstream that could not be asked, beside why), with the operator's
//! policy; with
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
    let (listed, unlisted) = list(&upstreams, file).await;
    upstreams.shutdown().await;
    let mut requests = Vec::new();
    for name in &args.accept {
        let (upstream, tool) = (name.upstream.as_str(), name.tool.as_str());
        if let Some(why) = unlisted.get(upstream) {
            return Err(CliError::error(format!(
                "--accept {upstream}/{tool}: {upstream} could not be listed ({why}); nothing was proposed"
            )));
        }
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
    let rows = rows(file, registry.pins(), &listed, &unlisted);
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
        write_json(io.out, &rows)?;
        return not_all_listed(&unlisted);
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
        if !matches!(r.standing, "pinned" | "unlisted") {
            let description = r.description.as_deref().unwrap_or("(no description)");
            text.push_str(&format!("    {}\n", terminal_safe(description)));
        }
    }
    for (upstream, why) in &unlisted {
        text.push_str(&format!("{upstream}: not listed: {}\n", terminal_safe(why)));
    }
    io.out.write_all(text.as_bytes()).map_err(CliError::error)?;
    not_all_listed(&unlisted)
}

/// The command's end when some upstream could not be listed: the others
/// were shown, and the exit status says the picture is not whole.
fn not_all_listed(unlisted: &BTreeMap<String, String>) -> Result<(), CliError> {
    if unlisted.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = unlisted.keys().map(String::as_str).collect();
    Err(CliError::error(format!(
        "{} could not be listed (shown as `unlisted`, their pinned tools only); run `countersign gateway tools` again once {} started",
        names.join(", "),
        if names.len() == 1 {
            "it has"
        } else {
            "they have"
        }
    )))
}

/// What each upstream lists now, all asked at once, so one that is slow
/// to start delays the listing by its own wait only; and why each upstream
/// that could not be asked was not (nothing is pinned from one of those:
/// `--accept` of its tools is refused).
async fn list(
    upstreams: &Upstreams,
    file: &GatewayFile,
) -> (BTreeMap<String, Vec<ListedTool>>, BTreeMap<String, String>) {
    let mut asking = tokio::task::JoinSet::new();
    for upstream in &file.upstream {
        let (upstreams, name) = (upstreams.clone(), upstream.name.clone());
        asking.spawn(async move {
            let tools = upstreams.list_tools(&name).await;
            (name, tools)
        });
    }
    let mut listed = BTreeMap::new();
    let mut unlisted: BTreeMap<String, String> = file
        .upstream
        .iter()
        .map(|u| (u.name.clone(), "its listing failed".to_owned()))
        .collect();
    while let Some(answer) = asking.join_next().await {
        match answer {
            Ok((name, Ok(tools))) => {
                unlisted.remove(&name);
                listed.insert(name, tools);
            }
            Ok((name, Err(e))) => {
                unlisted.insert(name, e.to_string());
            }
            Err(e) => tracing::error!("listing an upstream's tools failed: {e}"),
        }
    }
    (listed, unlisted)
}

/// Every listed or pinned tool of every configured upstream, by upstream
/// and tool name.
fn rows(
    file: &GatewayFile,
    pins: &Pins,
    listed: &BTreeMap<String, Vec<ListedTool>>,
    unlisted: &BTreeMap<String, String>,
) -> Vec<Row> {
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
                (None, _) if unlisted.contains_key(&upstream.name) => "unlisted",
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
