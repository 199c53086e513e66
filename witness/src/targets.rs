//! Which witnesses to send to: the witnesses of a c2sp.org/tlog-policy
//! file that name a submission prefix, each with the URL of its
//! `add-checkpoint` call, checked as every outbound URL of this project
//! is (https, or plain http to a loopback IP address only).
//!
//! Plain http is accepted to loopback only: a witness's answer is a
//! cosignature checked against its key from the policy before it is
//! stored, and the request carries nothing secret (a checkpoint that is
//! public by design), so TLS adds no integrity to what is stored; but a
//! 409's size, which decides what is resent and can raise a rollback
//! alarm, is unsigned, and over the network only TLS authenticates it.

use countersign_registry::WebhookUrl;
use countersign_tlog::{Policy, VerifierKey};

/// A witness to send checkpoints to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its name in the policy.
    pub name: String,
    /// Its cosignature key from the policy.
    pub key: VerifierKey,
    /// `<submission prefix>/add-checkpoint`.
    pub url: WebhookUrl,
}

/// Why a policy's witnesses cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// The policy file does not parse.
    #[error("the tlog policy is refused: {0}")]
    Policy(#[from] countersign_tlog::PolicyError),
    /// A witness's URL is not usable.
    #[error("witness {name}: the URL {url:?} {reason}")]
    Url {
        /// The witness's name.
        name: String,
        /// Its URL as written.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// No witness of the policy names a submission URL.
    #[error("no witness in the tlog policy has a submission URL")]
    NoWitness,
}

/// The witnesses of `policy` (the file's bytes) that name a URL; a witness
/// without one is left out (a verifier may still count it, if its
/// cosignatures reach the log another way).
pub fn targets(policy: &[u8]) -> Result<Vec<Target>, TargetError> {
    let policy = Policy::parse(policy)?;
    let mut targets = Vec::new();
    for witness in policy.witnesses() {
        let Some(prefix) = &witness.url else {
            tracing::warn!(witness = %witness.name, "the policy names no URL for this witness: nothing is sent to it");
            continue;
        };
        let refused = |reason: String| TargetError::Url {
            name: witness.name.clone(),
            url: prefix.clone(),
            reason,
        };
        if prefix.contains('?') {
            return Err(refused("has a query: a submission prefix is a path".into()));
        }
        let full = format!("{}/add-checkpoint", prefix.trim_end_matches('/'));
        let url = WebhookUrl::parse(&full).map_err(refused)?;
        if let Some(reason) = url.plain_http_refusal() {
            return Err(refused(reason));
        }
        targets.push(Target {
            name: witness.name.clone(),
            key: witness.key.clone(),
            url,
        });
    }
    if targets.is_empty() {
        return Err(TargetError::NoWitness);
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    use countersign_tlog::{KeyName, SignatureType};

    /// A key of `name` and `signature_type` over the Ed25519 base point.
    fn key(name: &str, signature_type: SignatureType) -> VerifierKey {
        let mut point = [0x66u8; 32];
        point[0] = 0x58;
        let public = ed25519_dalek::VerifyingKey::from_bytes(&point).unwrap();
        VerifierKey::new(KeyName::new(name).unwrap(), signature_type, public)
    }

    fn policy(url: &str) -> String {
        format!(
            "log {}\nwitness w1 {} {url}\nquorum w1\n",
            key("countersign/pr_x", SignatureType::Ed25519),
            key("w1.example", SignatureType::CosignatureV1)
        )
    }

    #[test]
    fn appends_add_checkpoint_to_the_submission_prefix() {
        let targets = targets(policy("https://w1.example/witness/").as_bytes()).unwrap();
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].name, "w1");
        assert_eq!(
            targets[0].key,
            key("w1.example", SignatureType::CosignatureV1)
        );
        assert_eq!(targets[0].url.path_and_query(), "/witness/add-checkpoint");
        let local = targets_of("http://127.0.0.1:7380");
        assert_eq!(local.unwrap()[0].url.path_and_query(), "/add-checkpoint");
    }

    fn targets_of(url: &str) -> Result<Vec<Target>, TargetError> {
        targets(policy(url).as_bytes())
    }

    #[test]
    fn refuses_plain_http_off_loopback_and_a_policy_without_urls() {
        assert!(matches!(
            targets_of("http://w1.example"),
            Err(TargetError::Url { name, .. }) if name == "w1"
        ));
        assert!(matches!(
            targets_of("http://localhost:80"),
            Err(TargetError::Url { .. })
        ));
        assert!(matches!(
            targets_of("https://w1.example/?x=1"),
            Err(TargetError::Url { .. })
        ));
        assert_eq!(
            targets(
                format!(
                    "log {}\nwitness w1 {}\nquorum w1\n",
                    key("countersign/pr_x", SignatureType::Ed25519),
                    key("w1.example", SignatureType::CosignatureV1)
                )
                .as_bytes()
            ),
            Err(TargetError::NoWitness)
        );
    }
}
