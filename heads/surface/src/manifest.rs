//! The generated operation-surface manifest: `docs/operations.json` and
//! `docs/operations.md`, from the table, the registry and [`NON_DATA`].
//! A test in `countersign-api` fails when the committed files are stale.

use countersign_registry::{Class, Registry};
use serde_json::{Value, json};

use crate::non_data::NON_DATA;
use crate::operations::{DataOperation, Entry, Head, propose_tool_name};
use crate::parity::{RESULT_WRAPPINGS, expected};

/// An entry as the manifest shows it: the command, `METHOD route` or tool.
fn entry_text(entry: Option<Entry>) -> Option<String> {
    entry.map(|entry| match entry {
        Entry::Cli(text) | Entry::Mcp(text) => text.to_owned(),
        Entry::Api(method, route) => format!("{method} {route}"),
    })
}

fn class_str(class: Class) -> &'static str {
    class.as_str()
}

/// The operation-surface manifest (`docs/operations.json`), generated from
/// the table, the registry and [`NON_DATA`].
pub fn manifest(table: &[DataOperation], registry: &Registry) -> Value {
    let data: Vec<Value> = table
        .iter()
        .map(|op| {
            let expanded: Vec<Value> = expected(std::slice::from_ref(op), registry)
                .into_iter()
                .map(|e| {
                    let reg = e.registry_operation.clone();
                    json!({
                        "key": e.key,
                        "cli": op.entries.cli().map(|c| match &reg { Some(r) => c.replace("<operation>", r), None => c.to_string() }),
                        "api": op.entries.api().map(|(m, p)| format!("{m} {}", match &reg { Some(r) => p.replace("{operation}", r), None => p.to_string() })),
                        "mcp": op.entries.mcp().map(|t| match &reg { Some(r) => propose_tool_name(r), None => t.to_string() }),
                        "params": e.params,
                    })
                })
                .collect();
            json!({
                "name": op.name,
                "description": op.description,
                "class": class_str(op.class),
                "cli": entry_text(op.entries.on(Head::Cli)),
                "api": entry_text(op.entries.on(Head::Api)),
                "mcp": entry_text(op.entries.on(Head::Mcp)),
                "result": (op.result)(),
                "exceptions": op.exceptions.iter().map(|e| json!({"head": e.head.name(), "reason": e.reason})).collect::<Vec<_>>(),
                "entries": expanded,
            })
        })
        .collect();
    let non_data: Vec<Value> = NON_DATA
        .iter()
        .map(|n| {
            json!({
                "name": n.name,
                "cli": entry_text(n.entries.on(Head::Cli)),
                "api": entry_text(n.entries.on(Head::Api)),
                "mcp": entry_text(n.entries.on(Head::Mcp)),
                "reason": n.reason,
            })
        })
        .collect();
    json!({
        "generated_by": "countersign-surface (the DATA_OPERATIONS table and the default registry); regenerate with COUNTERSIGN_REGENERATE=1",
        "heads": Head::ALL.map(Head::name),
        "data_operations": data,
        "non_data": non_data,
        "result_wrappings": RESULT_WRAPPINGS
            .iter()
            .map(|w| json!({"head": w.head.name(), "reason": w.reason}))
            .collect::<Vec<_>>(),
    })
}

/// The manifest as Markdown (`docs/operations.md`).
pub fn manifest_markdown(table: &[DataOperation], registry: &Registry) -> String {
    let manifest = manifest(table, registry);
    let mut md = String::from(
        "# Operation surface\n\n\
         Generated from the `DATA_OPERATIONS` table (`heads/surface`) and the default\n\
         registry; do not edit by hand. Regenerate with\n\
         `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-api --test docs_are_current`.\n\
         The parity gate (`check_parity`, run by `cargo test -p countersign --test parity`)\n\
         fails when a head lacks a data operation without an exception and a reason,\n\
         when its parameter or result schema differs from this table, or when it\n\
         exposes something not listed here. The full schemas are in `operations.json`\n\
         beside this file.\n\n\
         The session a proposal belongs to is transport context, not a parameter:\n\
         `--session` (or `COUNTERSIGN_SESSION`) on the CLI, `api:<token id>` on the\n\
         HTTP API (from the bearer credential), the MCP server's own session on MCP.\n\n\
         ## Data operations\n\n\
         | operation | class | CLI | HTTP API | MCP tool |\n|---|---|---|---|---|\n",
    );
    let cell = |v: &Value| match v.as_str() {
        Some(s) => format!("`{}`", s.replace('|', "\\|")),
        None => "—".to_string(),
    };
    let ops = manifest["data_operations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for op in &ops {
        let entries = op["entries"].as_array().cloned().unwrap_or_default();
        for e in &entries {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                e["key"].as_str().unwrap_or_default(),
                op["class"].as_str().unwrap_or_default(),
                cell(&e["cli"]),
                cell(&e["api"]),
                cell(&e["mcp"]),
            ));
        }
    }
    md.push_str("\n## Exceptions\n\n| operation | head | reason |\n|---|---|---|\n");
    for op in &ops {
        for ex in op["exceptions"].as_array().cloned().unwrap_or_default() {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                op["name"].as_str().unwrap_or_default(),
                ex["head"].as_str().unwrap_or_default(),
                ex["reason"].as_str().unwrap_or_default()
            ));
        }
    }
    md.push_str("\n## Transport differences in results\n\n| head | reason |\n|---|---|\n");
    for w in manifest["result_wrappings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        md.push_str(&format!(
            "| {} | {} |\n",
            w["head"].as_str().unwrap_or_default(),
            w["reason"].as_str().unwrap_or_default()
        ));
    }
    md.push_str(
        "\n## Not data operations\n\n| name | CLI | HTTP API | MCP | reason |\n|---|---|---|---|---|\n",
    );
    for n in manifest["non_data"].as_array().cloned().unwrap_or_default() {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            n["name"].as_str().unwrap_or_default(),
            cell(&n["cli"]),
            cell(&n["api"]),
            cell(&n["mcp"]),
            n["reason"].as_str().unwrap_or_default()
        ));
    }
    md
}
