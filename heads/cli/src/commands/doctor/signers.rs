//! The doctor's two-signers check: with `[signer] fallback_addrs`, that
//! every configured signer answers this head and that they serve one key
//! set. Each signer serves the keys every signer of its ledger published
//! there, so two signers that serve different sets do not share a ledger
//! (or one has not published yet); two whose active keys are one key
//! hold a copied key, where each should have its own. Nothing is printed
//! without fallbacks; only `PublicKeys` is called.

use std::collections::BTreeSet;

use countersign_gate::signer_client;
use countersign_identity::{Config, Home, Role};
use countersign_proto::v1::{KeyStatus, PublicKeysRequest};

use super::NETWORK_TIMEOUT;
use super::report::Check;

const NAME: &str = "signers";

/// What one signer serves: every key id, and the one it signs with (a
/// signer serves its own active key first).
struct Served {
    keys: BTreeSet<String>,
    signs_with: Option<String>,
}

async fn served(home: &Home, addr: &str) -> Result<Served, String> {
    let asked = async {
        let mut head = signer_client::connect(home, addr, Role::Head)
            .await
            .map_err(|e| e.to_string())?;
        let keys = head
            .public_keys(PublicKeysRequest {})
            .await
            .map_err(|s| format!("PublicKeys failed: {}", s.message()))?
            .into_inner()
            .keys;
        Ok(Served {
            signs_with: keys
                .first()
                .filter(|k| k.status != KeyStatus::Verifying as i32)
                .map(|k| k.key_id.clone()),
            keys: keys.into_iter().map(|k| k.key_id).collect(),
        })
    };
    tokio::time::timeout(NETWORK_TIMEOUT, asked)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", NETWORK_TIMEOUT.as_secs())))
}

/// One check, or none without `[signer] fallback_addrs`.
pub(super) async fn check_signers(home: &Home, config: &Config) -> Option<Check> {
    if config.signer_fallbacks.is_empty() {
        return None;
    }
    let addrs = config.signer_addrs();
    let answers = ask_all(home, &addrs).await;
    let mut unreachable = Vec::new();
    let mut sets = Vec::new();
    for (addr, answer) in addrs.iter().zip(answers) {
        match answer {
            Ok(served) => sets.push((addr.as_str(), served)),
            Err(e) => unreachable.push(format!("{addr}: {e}")),
        }
    }
    if !unreachable.is_empty() {
        return Some(Check::fail(
            NAME,
            unreachable.join("; "),
            "start that signer, or remove its address from [signer] fallback_addrs",
        ));
    }
    let (first_addr, first) = &sets[0];
    if let Some((addr, other)) = sets.iter().skip(1).find(|(_, s)| s.keys != first.keys) {
        return Some(Check::fail(
            NAME,
            format!(
                "{first_addr} serves keys {} but {addr} serves {}: they do not serve one ledger's key set",
                list(&first.keys),
                list(&other.keys)
            ),
            "point every signer's [ledger] url at the same PostgreSQL database (docs/two-signers.md)",
        ));
    }
    let mut holders = BTreeSet::new();
    for (addr, s) in &sets {
        if let Some(kid) = &s.signs_with
            && !holders.insert(kid.clone())
        {
            return Some(Check::warn(
                    NAME,
                    format!("{addr} signs with {kid}, as another signer does: a copied proof key"),
                    Some("give each signer a key of its own: `countersign-signer keys rotate` on one host (docs/two-signers.md)".into()),
                ));
        }
    }
    Some(Check::ok(
        NAME,
        format!(
            "{} signers answer ({}) and serve one key set: {}",
            sets.len(),
            addrs.join(", "),
            list(&first.keys)
        ),
    ))
}

/// Every signer asked at once (at most eight: one timeout, not eight), in
/// the order of `addrs`.
async fn ask_all(home: &Home, addrs: &[String]) -> Vec<Result<Served, String>> {
    let mut asks = tokio::task::JoinSet::new();
    for (at, addr) in addrs.iter().enumerate() {
        let (home, addr) = (home.clone(), addr.clone());
        asks.spawn(async move { (at, served(&home, &addr).await) });
    }
    let mut answers: Vec<Result<Served, String>> =
        addrs.iter().map(|_| Err("not asked".to_owned())).collect();
    while let Some(joined) = asks.join_next().await {
        match joined {
            Ok((at, answer)) => answers[at] = answer,
            Err(e) => tracing::warn!("a signer check did not finish: {e}"),
        }
    }
    answers
}

fn list(keys: &BTreeSet<String>) -> String {
    keys.iter().cloned().collect::<Vec<_>>().join(", ")
}
