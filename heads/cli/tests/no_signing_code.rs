//! The `countersign` binary (CLI, MCP and API heads) must not be able to
//! sign a proof. Three checks: the normal (non-dev) dependency graph of
//! every crate outside `signer/` never reaches `countersign-signer`; no
//! crate but the load tool and the end-to-end tests names it even as a
//! dev-dependency; and no source file outside `signer/` names the Ed25519
//! signing key type. And one of size: the binary does not link the Cedar
//! engine (`countersign policy` runs `countersign-signer`, which does).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The platform whose dependency graph is checked: the one this test runs on.
fn host() -> String {
    let output = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let text = String::from_utf8(output.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc names its host")
        .to_string()
}

fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .parent()
        .unwrap()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            &host(),
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Package name → names of its normal (non-dev, non-build) dependencies.
fn normal_dependency_graph(meta: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let names: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let from = names[node["id"].as_str().unwrap()].to_string();
        let deps = graph.entry(from).or_insert_with(BTreeSet::new);
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                deps.insert(names[dep["pkg"].as_str().unwrap()].to_string());
            }
        }
    }
    graph
}

fn reaches(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    target: &str,
) -> Option<Vec<String>> {
    let mut stack = vec![vec![from.to_string()]];
    let mut seen = BTreeSet::new();
    while let Some(path) = stack.pop() {
        let last = path.last().unwrap().clone();
        if last == target {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for next in graph.get(&last).into_iter().flatten() {
            let mut longer = path.clone();
            longer.push(next.clone());
            stack.push(longer);
        }
    }
    None
}

#[test]
fn no_crate_outside_the_signer_depends_on_signing_code() {
    let meta = metadata();
    let graph = normal_dependency_graph(&meta);
    let members: Vec<String> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| {
            let id = id.as_str().unwrap();
            meta["packages"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["id"] == id)
                .unwrap()["name"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(members.contains(&"countersign".to_string()), "{members:?}");
    // The binary really links the MCP head, so the check covers it.
    assert!(
        graph["countersign"].contains("countersign-mcp"),
        "{:?}",
        graph["countersign"]
    );
    for member in members.iter().filter(|m| *m != "countersign-signer") {
        assert_eq!(
            reaches(&graph, member, "countersign-signer"),
            None,
            "{member} must not depend on countersign-signer"
        );
    }
}

/// The crates that may name `countersign-signer` at all, as a
/// dev-dependency: the load tool (it mints proofs with the signer's own
/// code) and the crate of the end-to-end tests, which start a real signer.
const MAY_NAME_THE_SIGNER: &[&str] = &[
    "countersign-signer",
    "countersign-bench",
    "countersign-integration-tests",
];

#[test]
fn no_other_crate_names_the_signer_even_as_a_dev_dependency() {
    let meta = metadata();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut checked = 0;
    for package in meta["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        let name = package["name"].as_str().unwrap();
        checked += 1;
        if MAY_NAME_THE_SIGNER.contains(&name) {
            continue;
        }
        for dep in package["dependencies"].as_array().unwrap() {
            assert_ne!(
                dep["name"], "countersign-signer",
                "{name} names countersign-signer as a {} dependency",
                dep["kind"]
            );
        }
    }
    assert!(
        checked >= 10,
        "too few workspace members checked: {checked}"
    );
}

/// Cedar adds about 6 MB to a binary, and the release `countersign` must
/// stay under 40 MiB (BENCHMARKS.md): only the signer's binary links it.
#[test]
fn the_cli_does_not_link_the_cedar_engine() {
    let graph = normal_dependency_graph(&metadata());
    for engine in ["cedar-policy", "countersign-policy"] {
        assert_eq!(
            reaches(&graph, "countersign", engine),
            None,
            "countersign must not depend on {engine}: `countersign policy` runs countersign-signer"
        );
    }
    // The check can see Cedar where it is linked.
    assert!(reaches(&graph, "countersign-signer", "cedar-policy").is_some());
}

#[test]
fn the_gate_detects_a_dependency_path_to_the_signer() {
    // The check above must be able to fail: a graph with a path is caught.
    let mut graph = BTreeMap::new();
    graph.insert(
        "countersign".to_string(),
        BTreeSet::from(["middle".to_string()]),
    );
    graph.insert(
        "middle".to_string(),
        BTreeSet::from(["countersign-signer".to_string()]),
    );
    assert_eq!(
        reaches(&graph, "countersign", "countersign-signer"),
        Some(vec![
            "countersign".into(),
            "middle".into(),
            "countersign-signer".into()
        ])
    );
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !["target", "signer", "fuzz", "tests", ".git"].contains(&name.as_str()) {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_source_outside_the_signer_names_the_signing_key() {
    let mut files = Vec::new();
    rust_files(workspace_root(), &mut files);
    assert!(files.len() > 10, "the scan found too few files: {files:?}");
    let offenders: Vec<_> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .filter(|line| !line.trim_start().starts_with("//"))
                .any(|line| line.contains(concat!("Signing", "Key")))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "signing key type named outside signer/: {offenders:?}"
    );
}
