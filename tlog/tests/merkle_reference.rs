//! The RFC 6962 reference tree of eight leaves, with its roots, node hashes
//! and proofs, copied from github.com/transparency-dev/merkle:
//! - leaves, node hashes and roots: `testonly/constants.go` at commit
//!   417fb0c314750d94e53942e9f92e79b6d35915db;
//! - inclusion and consistency proofs: `proof/verify_test.go` at commit
//!   9ca563d3ac2bab915317cf153ed4f952f6e74c07 (the tables `inclusionProofs`,
//!   whose leaf numbers are 1-based, and `consistencyProofs`; later commits
//!   moved them to the JSON probes in `tests/vectors/merkle`).
//!
//! The data originates in the Certificate Transparency reference code.
#![allow(clippy::unwrap_used)]

use countersign_tlog::{
    CompactTree, Hash, consistency_proof, inclusion_proof, leaf_hash, node_hash, root,
    verify_consistency, verify_inclusion,
};

const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

/// `RootHashes()`: the root of the tree of the first `i` leaves, from i = 0.
const ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// `NodeHashes()`: level by level, the complete subtrees of the 8-leaf tree.
const NODES: [&[&str]; 4] = [
    &[
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
        "0298d122906dcfc10892cb53a73992fc5b9f493ea4c9badb27b791b4127a7fe7",
        "07506a85fd9dd2f120eb694f86011e5bb4662e5c415a62917033d4a9624487e7",
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        "4271a26be0d8a84f0bd54c8c302e7cb3a3b5d1fa6780a40bcce2873477dab658",
        "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
        "46f6ffadd3d06a09ff3c5860d2755c8b9819db7df44251788c7d8e3180de8eb1",
    ],
    &[
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
        "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
    ],
    &[
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ],
    &["5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"],
];

/// `inclusionProofs`: (1-based leaf, tree size, proof).
const INCLUSION: [(u64, u64, &[&str]); 4] = [
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        3,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        2,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// `consistencyProofs`: (old size, new size, proof).
const CONSISTENCY: [(u64, u64, &[&str]); 5] = [
    (1, 1, &[]),
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

fn h(hex_str: &str) -> Hash {
    Hash(hex::decode(hex_str).unwrap().try_into().unwrap())
}

fn hashes(list: &[&str]) -> Vec<Hash> {
    list.iter().map(|s| h(s)).collect()
}

fn leaf_hashes() -> Vec<Hash> {
    LEAVES
        .iter()
        .map(|l| leaf_hash(&hex::decode(l).unwrap()))
        .collect()
}

#[test]
fn leaf_and_node_hashes_match_the_reference_tree() {
    let mut level = leaf_hashes();
    for expected in NODES {
        assert_eq!(level, hashes(expected));
        level = level
            .chunks_exact(2)
            .map(|pair| node_hash(&pair[0], &pair[1]))
            .collect();
    }
}

#[test]
fn roots_of_every_prefix_match_the_reference() {
    let leaves = leaf_hashes();
    let mut compact = CompactTree::new();
    assert_eq!(compact.root(), h(ROOTS[0]));
    for (size, expected) in ROOTS.iter().enumerate() {
        assert_eq!(root(&leaves[..size]), h(expected), "size {size}");
        if size > 0 {
            compact.push(leaves[size - 1]);
            assert_eq!(compact.root(), h(expected), "compact size {size}");
        }
    }
}

#[test]
fn inclusion_proofs_are_built_and_verified_as_the_reference() {
    let leaves = leaf_hashes();
    for (leaf, size, proof) in INCLUSION {
        let index = leaf - 1;
        let expected = hashes(proof);
        let tree = &leaves[..size as usize];
        assert_eq!(inclusion_proof(tree, index), Ok(expected.clone()));
        let root = h(ROOTS[size as usize]);
        assert_eq!(
            verify_inclusion(&leaves[index as usize], index, size, &expected, &root),
            Ok(())
        );
    }
}

#[test]
fn consistency_proofs_are_built_and_verified_as_the_reference() {
    let leaves = leaf_hashes();
    for (old, new, proof) in CONSISTENCY {
        let expected = hashes(proof);
        assert_eq!(
            consistency_proof(&leaves[..new as usize], old),
            Ok(expected.clone())
        );
        assert_eq!(
            verify_consistency(
                old,
                new,
                &expected,
                &h(ROOTS[old as usize]),
                &h(ROOTS[new as usize])
            ),
            Ok(())
        );
    }
}
