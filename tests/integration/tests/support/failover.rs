//! Two signers of one PostgreSQL ledger, and a home whose configuration
//! names both (`[signer] addr`, then `fallback_addrs`), for the tests of a
//! client's failover.

use countersign_identity::Home;
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;

use super::{Backend, Harness};

/// `home`'s `config.toml` with `[signer] addr = addr` and `fallback_addrs`,
/// every other line kept (the `[signer]` section's other keys in it).
pub fn configure_fallbacks(home: &Home, addr: &str, fallbacks: &[String]) {
    let path = home.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut in_signer, mut signer, mut rest) = (false, Vec::new(), Vec::new());
    for line in text.lines() {
        let key = line.trim();
        if key.starts_with('[') {
            in_signer = key == "[signer]";
            if in_signer {
                continue;
            }
        } else if in_signer {
            let replaced = ["addr", "fallback_addrs"]
                .iter()
                .any(|k| key.split('=').next().map(str::trim) == Some(*k));
            if !replaced {
                signer.push(line);
            }
            continue;
        }
        rest.push(line);
    }
    let list: Vec<String> = fallbacks.iter().map(|a| format!("{a:?}")).collect();
    let text = format!(
        "[signer]\naddr = {addr:?}\nfallback_addrs = [{}]\n{}\n{}\n",
        list.join(", "),
        signer.join("\n"),
        rest.join("\n")
    );
    std::fs::write(&path, text).unwrap();
}

/// A harness on PostgreSQL (signer A) and a second signer of its ledger
/// (B), as on another host: a copy of the home with a proof key of its own.
pub async fn pair() -> (Harness, TestSigner) {
    let h = Harness::start_on(Backend::Postgres, Registry::default_toml()).await;
    let b = h.signer.on_another_host().await.unwrap();
    (h, b)
}

/// `h`'s home configured with A first and `b` as its fallback, as every
/// process of the installation would be.
pub fn name_both(h: &Harness, b: &TestSigner) {
    configure_fallbacks(
        h.signer.home(),
        &h.signer.addr().to_string(),
        &[b.addr().to_string()],
    );
}
