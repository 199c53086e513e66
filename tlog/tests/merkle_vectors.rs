//! The transparency-dev/merkle proof probes (`tests/vectors/merkle/`, see its
//! README for the source and the handling of hashes that are not 32 bytes):
//! every probe must verify or be refused exactly as upstream expects.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use countersign_tlog::{Hash, verify_consistency, verify_inclusion};
use serde::Deserialize;
use sha2::{Digest, Sha256};

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InclusionProbe {
    leaf_idx: u64,
    tree_size: u64,
    root: String,
    leaf_hash: String,
    /// `null` upstream for an empty proof (Go's nil slice).
    proof: Option<Vec<String>>,
    desc: String,
    want_err: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConsistencyProbe {
    size1: u64,
    size2: u64,
    root1: String,
    root2: String,
    proof: Option<Vec<String>>,
    desc: String,
    #[serde(rename = "wantErr")]
    want_err: bool,
}

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            json_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

fn probes<T: for<'de> Deserialize<'de>>(kind: &str) -> Vec<(PathBuf, T)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors/merkle")
        .join(kind);
    let mut files = Vec::new();
    json_files(&dir, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let probe = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            (path, probe)
        })
        .collect()
}

fn bytes(b64: &str) -> Vec<u8> {
    STANDARD.decode(b64).unwrap()
}

/// A leaf hash or proof element: `None` when it is not 32 bytes, which the
/// typed API cannot even express.
fn exact_hash(b64: &str) -> Option<Hash> {
    Hash::from_slice(&bytes(b64))
}

/// A root: upstream's "don't care" placeholders of other lengths are stood in
/// for by their SHA-256, so equal placeholders stay equal.
fn root_hash(b64: &str) -> Hash {
    let raw = bytes(b64);
    Hash::from_slice(&raw).unwrap_or_else(|| Hash(Sha256::digest(&raw).into()))
}

#[test]
fn inclusion_probes_verify_or_are_refused_as_upstream_expects() {
    let probes = probes::<InclusionProbe>("inclusion");
    assert_eq!(
        probes.len(),
        98,
        "the probe count changed: update this test"
    );
    let (mut accepted, mut refused) = (0, 0);
    for (path, probe) in probes {
        let leaf = exact_hash(&probe.leaf_hash);
        let proof: Option<Vec<Hash>> = probe
            .proof
            .unwrap_or_default()
            .iter()
            .map(|p| exact_hash(p))
            .collect();
        let result = match (leaf, proof) {
            (Some(leaf), Some(proof)) => verify_inclusion(
                &leaf,
                probe.leaf_idx,
                probe.tree_size,
                &proof,
                &root_hash(&probe.root),
            )
            .map_err(|e| e.to_string()),
            _ => Err("not 32-byte hashes".to_owned()),
        };
        match (probe.want_err, result) {
            (false, Ok(())) => accepted += 1,
            (true, Err(_)) => refused += 1,
            (want_err, got) => panic!(
                "{}: {} (want error: {want_err}, got {got:?})",
                path.display(),
                probe.desc
            ),
        }
    }
    assert_eq!((accepted, refused), (6, 92));
}

#[test]
fn consistency_probes_verify_or_are_refused_as_upstream_expects() {
    let probes = probes::<ConsistencyProbe>("consistency");
    assert_eq!(
        probes.len(),
        98,
        "the probe count changed: update this test"
    );
    let (mut accepted, mut refused) = (0, 0);
    for (path, probe) in probes {
        let proof: Option<Vec<Hash>> = probe
            .proof
            .unwrap_or_default()
            .iter()
            .map(|p| exact_hash(p))
            .collect();
        let result = match proof {
            Some(proof) => verify_consistency(
                probe.size1,
                probe.size2,
                &proof,
                &root_hash(&probe.root1),
                &root_hash(&probe.root2),
            )
            .map_err(|e| e.to_string()),
            None => Err("not 32-byte hashes".to_owned()),
        };
        match (probe.want_err, result) {
            (false, Ok(())) => accepted += 1,
            (true, Err(_)) => refused += 1,
            (want_err, got) => panic!(
                "{}: {} (want error: {want_err}, got {got:?})",
                path.display(),
                probe.desc
            ),
        }
    }
    assert_eq!((accepted, refused), (6, 92));
}
