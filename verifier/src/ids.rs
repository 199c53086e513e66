//! The identifiers every crate passes around, parsed once: a proposal id
//! (`prop_` + 32 lowercase hex), a session (1..=128 of `[A-Za-z0-9._:-]`),
//! a principal (`pr_` + 32 lowercase hex) and an approver name
//! (`[a-z0-9][a-z0-9-]{0,31}`) and an auto-approval rule id (`rule_` + 32
//! lowercase hex). A value of these types is
//! well-formed; the parsing rules exist only here.
//!
//! This module checks shapes only; it must not decide who owns a proposal
//! or whether a session may execute it (the ledger and the gate do).

use std::fmt;
use std::str::FromStr;

/// A text that is not the identifier it was parsed as; each variant says
/// the expected form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Not `prop_` followed by 32 lowercase hex characters.
    #[error("expected prop_ followed by 32 lowercase hex characters")]
    ProposalId,
    /// Not 1 to 128 characters of `[A-Za-z0-9._:-]`.
    #[error("expected 1 to 128 characters of [A-Za-z0-9._:-]")]
    Session,
    /// Not `pr_` followed by 32 lowercase hex characters.
    #[error("expected pr_ followed by 32 lowercase hex characters")]
    Principal,
    /// Not 1 to 32 characters of `[a-z0-9-]` starting with a letter or digit.
    #[error("expected 1 to 32 characters of [a-z0-9-], the first a letter or digit")]
    ApproverName,
    /// Not `rule_` followed by 32 lowercase hex characters.
    #[error("expected rule_ followed by 32 lowercase hex characters")]
    RuleId,
}

/// Whether `text` is `prefix` followed by exactly 32 lowercase hex digits.
fn is_prefixed_hex128(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix).is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident, $valid:expr, $error:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Parses `text`, refusing anything but the exact form.
            pub fn parse(text: impl Into<String>) -> Result<Self, IdError> {
                let text = text.into();
                let valid: fn(&str) -> bool = $valid;
                if valid(&text) { Ok($name(text)) } else { Err($error) }
            }

            /// The identifier's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The identifier's text, owned.
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(text: &str) -> Result<Self, IdError> {
                $name::parse(text)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(text: String) -> Result<Self, IdError> {
                $name::parse(text)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        /// Read as its text wherever a `&str` is wanted (a query's bind, a
        /// wire field); only its `parse` makes one.
        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

text_id!(
    /// A proposal id: `prop_` + 32 lowercase hex characters.
    ProposalId,
    |t| is_prefixed_hex128(t, "prop_"),
    IdError::ProposalId
);

text_id!(
    /// A session: 1 to 128 characters of `[A-Za-z0-9._:-]`.
    Session,
    |t| {
        (1..=128).contains(&t.len())
            && t
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
    },
    IdError::Session
);

text_id!(
    /// A principal: `pr_` + 32 lowercase hex characters.
    Principal,
    |t| is_prefixed_hex128(t, "pr_"),
    IdError::Principal
);

text_id!(
    /// The name of an approver credential, which says which trusted
    /// interface (for example `console`) decided: 1 to 32 characters of
    /// `[a-z0-9-]`, the first a letter or digit. Certificates carry it as
    /// `countersign://approver/<principal>/<name>`, proofs as
    /// `human:cert:<principal>/<name>`.
    ApproverName,
    |t| {
        (1..=32).contains(&t.len())
            && t.bytes().enumerate().all(|(i, b)| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || (i > 0 && b == b'-')
            })
    },
    IdError::ApproverName
);

text_id!(
    /// An auto-approval rule id: `rule_` + 32 lowercase hex characters.
    /// Proofs issued under a rule carry it in `grant` and in
    /// `prov` (`rule:<id>@<version>`).
    RuleId,
    |t| is_prefixed_hex128(t, "rule_"),
    IdError::RuleId
);

impl RuleId {
    /// The rule id of 16 random bytes (the caller draws them).
    pub fn from_random(bytes: [u8; 16]) -> RuleId {
        RuleId(format!("rule_{}", hex::encode(bytes)))
    }
}

impl ProposalId {
    /// The proposal id of 16 random bytes (the caller draws them).
    pub fn from_random(bytes: [u8; 16]) -> ProposalId {
        ProposalId(format!("prop_{}", hex::encode(bytes)))
    }
}

impl Principal {
    /// The principal of 16 random bytes (the caller draws them).
    pub fn from_random(bytes: [u8; 16]) -> Principal {
        Principal(format!("pr_{}", hex::encode(bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_exactly_prop_and_32_lowercase_hex() {
        let good = format!("prop_{}", "0a".repeat(16));
        assert_eq!(
            ProposalId::parse(good.clone()).map(|id| id.into_string()),
            Ok(good)
        );
        assert_eq!(
            ProposalId::from_random([0xab; 16]).as_str(),
            format!("prop_{}", "ab".repeat(16))
        );
        for bad in [
            String::new(),
            "prop_".into(),
            format!("prop_{}", "A".repeat(32)),
            format!("prop_{}", "0".repeat(31)),
            format!("prop_{}", "0".repeat(33)),
            format!("prop_{}g", "0".repeat(31)),
            format!("PROP_{}", "0".repeat(32)),
            format!(" prop_{}", "0".repeat(32)),
            format!("pr_{}", "0".repeat(32)),
        ] {
            assert_eq!(
                bad.parse::<ProposalId>(),
                Err(IdError::ProposalId),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn accepts_sessions_of_1_to_128_allowed_characters() {
        for good in ["a", "mcp:conn-1", "A.b_c:d-9", &"s".repeat(128)] {
            assert_eq!(
                Session::parse(good).map(|s| s.to_string()),
                Ok(good.to_owned())
            );
        }
        for bad in ["", &"s".repeat(129), "a b", "a/b", "é", "a\n"] {
            assert_eq!(bad.parse::<Session>(), Err(IdError::Session), "{bad:?}");
        }
    }

    #[test]
    fn accepts_exactly_pr_and_32_lowercase_hex() {
        let good = format!("pr_{}", "9f".repeat(16));
        assert_eq!(
            Principal::parse(good.clone()).map(|p| p.into_string()),
            Ok(good)
        );
        assert!(Principal::parse(Principal::from_random([7; 16]).into_string()).is_ok());
        for bad in [
            String::new(),
            format!("pr_{}", "F".repeat(32)),
            format!("pr_{}", "0".repeat(31)),
            format!("pr_{}\n", "0".repeat(32)),
            format!("prop_{}", "0".repeat(32)),
        ] {
            assert_eq!(bad.parse::<Principal>(), Err(IdError::Principal), "{bad:?}");
        }
    }

    #[test]
    fn accepts_approver_names_of_1_to_32_lowercase_alphanumerics_and_hyphens() {
        for good in ["a", "7", "console", "web-ui-2", "a-", &"z".repeat(32)] {
            assert_eq!(
                ApproverName::parse(good).map(|n| n.to_string()),
                Ok(good.to_owned())
            );
        }
        let too_long = "z".repeat(33);
        for bad in [
            "", "-a", "Console", "a_b", "a.b", "a/b", "a b", "é", "a\n", &too_long,
        ] {
            assert_eq!(
                bad.parse::<ApproverName>(),
                Err(IdError::ApproverName),
                "{bad:?}"
            );
        }
    }
}
