//! `countersign gateway tools [--accept UPSTREAM/TOOL ...]`: what each
//! upstream MCP server of `gateway.toml` lists now against what was pinned
//! (`new`, `pinned`, `changed`, `gone`), with the operator's policy; with
//! `--accept`, the listed definition of each named tool is pinned in
//! `gateway-pins.json` beside the registry, after its full description and
//! schema digest were printed. Pinning changes the contract revision of the
//! tool's operation, so approvals given under the old definition no longer
//! execute.
//!
//! Must not: pin a tool the upstream does not list now, pin anything not
//! named on the command line, lose another pinning made meanwhile, or leave
//! a half-written pins file (it is replaced under a lock, written beside and
//! renamed over, mode 0600 like the registry).

use std::collections::BTreeMap;
use std::path::Path;

use countersign_gateway::{ListedTool, Upstreams};
use countersign_identity::files::replace_private_locked;
use countersign_registry::gateway::{GatewayFile, PINS_FILE, Pins, ToolDefinition};
use countersign_registry::{Registry, Schemas, Sources, terminal_safe};
use serde_json::json;

use crate::Io;
use crate::args::GatewayToolsArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output::write_json;

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
    let mut accepted = Vec::new();
    for name in &args.accept {
        let (upstream, tool) = (name.upstream.as_str(), name.tool.as_str());
        let found = listed
            .get(upstream)
            .and_then(|tools| tools.iter().find(|t| t.definition.name == tool))
            .ok_or_else(|| {
                CliError::error(format!(
                    "--accept {upstream}/{tool}: {upstream} does not list a tool {tool} now; nothing was pinned"
                ))
            })?;
        accepted.push((upstream, &found.definition));
    }
    let pins = if accepted.is_empty() {
        registry.pins().clone()
    } else {
        pin(&ctx.config.registry, &accepted)?
    };
    for (upstream, definition) in &accepted {
        let _ = writeln!(
            io.err,
            "pinned {upstream}/{} ({}): {}",
            definition.name,
            definition.sha256_hex().unwrap_or_default(),
            terminal_safe(
                definition
                    .description
                    .as_deref()
                    .unwrap_or("(no description)")
            )
        );
    }
    let rows = rows(file, &pins, &listed);
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

/// Pins each of `accepted` in the pins file beside `registry`, under its
/// lock: read as it is now (another pinning meanwhile is kept), changed, and
/// replaced whole (a reader sees the old or the new file, never a part).
/// The pins as written.
fn pin(registry: &Path, accepted: &[(&str, &ToolDefinition)]) -> Result<Pins, CliError> {
    let dir = registry
        .parent()
        .ok_or_else(|| CliError::error("the registry has no directory"))?;
    let path = dir.join(PINS_FILE);
    let mut written = Pins::empty();
    let lock = dir.join(format!(".{PINS_FILE}.lock"));
    replace_private_locked(&path, &lock, |current| -> Result<Vec<u8>, PinError> {
        let mut pins = match current {
            Some(bytes) => {
                let text = std::str::from_utf8(bytes).map_err(|e| PinError(e.to_string()))?;
                Pins::parse(text).map_err(|e| PinError(e.to_string()))?
            }
            None => Pins::empty(),
        };
        for (upstream, definition) in accepted {
            pins.pin(upstream, (*definition).clone())
                .map_err(PinError)?;
        }
        let text = pins.to_text().into_bytes();
        written = pins;
        Ok(text)
    })
    .map_err(|PinError(why)| {
        CliError::error(format!("{}: {why}; nothing was pinned", path.display()))
    })?;
    Ok(written)
}

/// Why the pins file was not replaced.
struct PinError(String);

impl From<countersign_identity::IdentityError> for PinError {
    fn from(e: countersign_identity::IdentityError) -> Self {
        PinError(e.to_string())
    }
}
