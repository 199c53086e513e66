//! C2SP transparency log policies (c2sp.org/tlog-policy): which logs and
//! witnesses a verifier knows, and the quorum of cosignatures a checkpoint
//! needs to count as witnessed.
//!
//! ```text
//! log <vkey> [<url>]
//! witness <name> <vkey> [<url>]
//! group <name> all|any|<k> <name>...
//! quorum <name>|none
//! ```
//!
//! Parsed strictly: every refusal names its line. One deliberate narrowing
//! of the format: a policy is read as UTF-8 text (the format allows opaque
//! octets above 0x7F in names, URLs and comments; here they must be UTF-8).

use std::collections::BTreeMap;

use thiserror::Error;

use crate::checkpoint::{Checkpoint, CheckpointError, VerifiedCheckpoint, verify_checkpoint};
use crate::keys::{KeyError, SignatureType, VerifierKey};
use crate::note::Note;

/// The most logs, witnesses or groups one policy may define: the format
/// recommends supporting at least 32 of each.
pub const MAX_ENTRIES: usize = 256;

/// Why a policy file was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyError {
    /// A byte the format forbids (a control character other than tab and
    /// newline).
    #[error("line {line}: a control character other than tab")]
    ControlCharacter {
        /// The 1-based line number.
        line: usize,
    },
    /// A line starting with a keyword the format does not define.
    #[error("line {line}: unknown keyword {keyword:?}")]
    UnknownKeyword {
        /// The 1-based line number.
        line: usize,
        /// The keyword.
        keyword: String,
    },
    /// A line with too few or too many items.
    #[error("line {line}: {keyword} takes {expected}")]
    WrongArity {
        /// The 1-based line number.
        line: usize,
        /// The line's keyword.
        keyword: &'static str,
        /// What the keyword takes.
        expected: &'static str,
    },
    /// A vkey that does not parse.
    #[error("line {line}: the verifier key is refused: {error}")]
    Key {
        /// The 1-based line number.
        line: usize,
        /// Why the key was refused.
        error: KeyError,
    },
    /// A log key that is not an Ed25519 (0x01) key, or a witness key that is
    /// not a cosignature (0x04) key.
    #[error("line {line}: a {role} key must have signature type {expected}")]
    WrongKeyType {
        /// The 1-based line number.
        line: usize,
        /// `log` or `witness`.
        role: &'static str,
        /// The type it must have.
        expected: &'static str,
    },
    /// Two logs, or two witnesses, with the same public key.
    #[error("line {line}: this {role}'s public key is already listed")]
    DuplicateKey {
        /// The 1-based line number.
        line: usize,
        /// `log` or `witness`.
        role: &'static str,
    },
    /// A witness or group name defined twice, or the reserved `none`.
    #[error("line {line}: the name {name:?} is already defined")]
    DuplicateName {
        /// The 1-based line number.
        line: usize,
        /// The name.
        name: String,
    },
    /// A name used before (or without) its definition.
    #[error("line {line}: {name:?} is not defined on an earlier line")]
    UndefinedName {
        /// The 1-based line number.
        line: usize,
        /// The name.
        name: String,
    },
    /// `none` listed as a group member.
    #[error("line {line}: none cannot be a group member")]
    NoneAsMember {
        /// The 1-based line number.
        line: usize,
    },
    /// A member listed twice in one group.
    #[error("line {line}: {name:?} is listed twice in this group")]
    RepeatedMember {
        /// The 1-based line number.
        line: usize,
        /// The member.
        name: String,
    },
    /// A threshold that is not `all`, `any` or a decimal k with 1 <= k <= n.
    #[error("line {line}: the threshold must be all, any or a number from 1 to {members}")]
    BadThreshold {
        /// The 1-based line number.
        line: usize,
        /// The group's member count.
        members: usize,
    },
    /// A second quorum line.
    #[error("line {line}: a policy has exactly one quorum line")]
    SecondQuorum {
        /// The 1-based line number.
        line: usize,
    },
    /// No quorum line at all.
    #[error("the policy has no quorum line")]
    NoQuorum,
    /// More than [`MAX_ENTRIES`] logs, witnesses or groups.
    #[error("line {line}: more than {MAX_ENTRIES} {role}s")]
    TooMany {
        /// The 1-based line number.
        line: usize,
        /// `log`, `witness` or `group`.
        role: &'static str,
    },
    /// The policy is not UTF-8 text.
    #[error("the policy is not UTF-8 text")]
    NotUtf8,
}

/// Why a checkpoint does not satisfy a policy.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PolicyCheckError {
    /// The checkpoint body does not parse.
    #[error("the checkpoint is refused: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// No log of the policy has the checkpoint's origin as its key name.
    #[error("no log in the policy has origin {0:?}")]
    UnknownLog(String),
    /// The checkpoint is signed by the log but not cosigned by the quorum.
    #[error("the quorum {quorum:?} is not met: cosigned by {cosigned:?}")]
    QuorumNotMet {
        /// The quorum's name.
        quorum: String,
        /// The policy's witnesses that did cosign.
        cosigned: Vec<String>,
    },
}

/// A log the policy accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLog {
    /// The log's key; its name is the log's origin.
    pub key: VerifierKey,
    /// Where to reach the log, if given.
    pub url: Option<String>,
}

/// A witness the policy knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyWitness {
    /// The witness's name within this policy.
    pub name: String,
    /// Its cosignature key.
    pub key: VerifierKey,
    /// Its tlog-witness submission prefix, if given.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Group {
    name: String,
    threshold: usize,
    members: Vec<Member>,
}

/// A parsed tlog-policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    logs: Vec<PolicyLog>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    quorum: Option<Member>,
}

impl Policy {
    /// Parses a policy file.
    pub fn parse(bytes: &[u8]) -> Result<Policy, PolicyError> {
        let text = std::str::from_utf8(bytes).map_err(|_| PolicyError::NotUtf8)?;
        let mut parser = Parser::default();
        for (index, line) in text.split('\n').enumerate() {
            parser.line(index + 1, line)?;
        }
        let quorum = parser.quorum.ok_or(PolicyError::NoQuorum)?;
        Ok(Policy {
            logs: parser.logs,
            witnesses: parser.witnesses,
            groups: parser.groups,
            quorum,
        })
    }

    /// The logs the policy accepts.
    pub fn logs(&self) -> &[PolicyLog] {
        &self.logs
    }

    /// The witnesses the policy names.
    pub fn witnesses(&self) -> &[PolicyWitness] {
        &self.witnesses
    }

    /// Whether the quorum is `none` (no cosignature needed).
    pub fn needs_no_cosignature(&self) -> bool {
        self.quorum.is_none()
    }

    /// The first log whose key name is `origin`.
    pub fn log(&self, origin: &str) -> Option<&PolicyLog> {
        self.logs
            .iter()
            .find(|log| log.key.name().as_str() == origin)
    }

    /// Every log whose key name is `origin`: more than one once a log
    /// rotated its key (each key a `log` line of its own).
    pub fn logs_of<'a>(&'a self, origin: &'a str) -> impl Iterator<Item = &'a PolicyLog> {
        self.logs
            .iter()
            .filter(move |log| log.key.name().as_str() == origin)
    }

    /// Verifies a signed checkpoint against the policy: signed by a log
    /// whose key name is its origin (any of them, after a key rotation),
    /// every signature by a policy key valid, and cosigned by the quorum.
    pub fn verify_checkpoint(&self, note: &Note) -> Result<VerifiedCheckpoint, PolicyCheckError> {
        let checkpoint: Checkpoint = note.text().parse()?;
        let origin = checkpoint.origin();
        let witness_keys: Vec<VerifierKey> = self.witnesses.iter().map(|w| w.key.clone()).collect();
        let mut refused = None;
        let mut verified = None;
        for log in self.logs_of(origin) {
            match verify_checkpoint(note, origin, &log.key, &witness_keys) {
                Ok(checked) => {
                    verified = Some(checked);
                    break;
                }
                Err(e) => {
                    refused.get_or_insert(e);
                }
            }
        }
        let verified = match (verified, refused) {
            (Some(verified), _) => verified,
            (None, Some(refused)) => return Err(refused.into()),
            (None, None) => return Err(PolicyCheckError::UnknownLog(origin.to_owned())),
        };
        let cosigned: Vec<bool> = self
            .witnesses
            .iter()
            .map(|w| verified.cosigned_by(&w.key).is_some())
            .collect();
        if !self.quorum_met(&cosigned) {
            return Err(PolicyCheckError::QuorumNotMet {
                quorum: self.quorum_name().to_owned(),
                cosigned: self
                    .witnesses
                    .iter()
                    .zip(&cosigned)
                    .filter(|(_, c)| **c)
                    .map(|(w, _)| w.name.clone())
                    .collect(),
            });
        }
        Ok(verified)
    }

    /// Whether the quorum holds, given which witnesses (in policy order)
    /// cosigned.
    pub fn quorum_met(&self, cosigned: &[bool]) -> bool {
        let mut groups = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let witnessed = group
                .members
                .iter()
                .filter(|m| member_witnessed(**m, cosigned, &groups))
                .count();
            groups.push(witnessed >= group.threshold);
        }
        match self.quorum {
            None => true,
            Some(member) => member_witnessed(member, cosigned, &groups),
        }
    }

    fn quorum_name(&self) -> &str {
        match self.quorum {
            None => "none",
            Some(Member::Witness(i)) => &self.witnesses[i].name,
            Some(Member::Group(i)) => &self.groups[i].name,
        }
    }
}

fn member_witnessed(member: Member, cosigned: &[bool], groups: &[bool]) -> bool {
    match member {
        Member::Witness(i) => cosigned.get(i).copied().unwrap_or(false),
        Member::Group(i) => groups.get(i).copied().unwrap_or(false),
    }
}

#[derive(Default)]
struct Parser {
    logs: Vec<PolicyLog>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    names: BTreeMap<String, Member>,
    quorum: Option<Option<Member>>,
}

impl Parser {
    fn line(&mut self, line: usize, text: &str) -> Result<(), PolicyError> {
        if text
            .chars()
            .any(|c| (c < ' ' && c != '\t') || c == '\u{7f}')
        {
            return Err(PolicyError::ControlCharacter { line });
        }
        let items: Vec<&str> = text.split([' ', '\t']).filter(|s| !s.is_empty()).collect();
        let Some((&keyword, rest)) = items.split_first() else {
            return Ok(());
        };
        if keyword.starts_with('#') {
            return Ok(());
        }
        match keyword {
            "log" => self.log(line, rest),
            "witness" => self.witness(line, rest),
            "group" => self.group(line, rest),
            "quorum" => self.quorum(line, rest),
            other => Err(PolicyError::UnknownKeyword {
                line,
                keyword: other.to_owned(),
            }),
        }
    }

    fn log(&mut self, line: usize, rest: &[&str]) -> Result<(), PolicyError> {
        let (key, url) = match rest {
            [key] => (key, None),
            [key, url] => (key, Some((*url).to_owned())),
            _ => return Err(arity(line, "log", "a vkey and an optional URL")),
        };
        let key = parse_key(line, key, "log", SignatureType::Ed25519, "0x01 (Ed25519)")?;
        if self.logs.iter().any(|l| same_key(&l.key, &key)) {
            return Err(PolicyError::DuplicateKey { line, role: "log" });
        }
        if self.logs.len() == MAX_ENTRIES {
            return Err(PolicyError::TooMany { line, role: "log" });
        }
        self.logs.push(PolicyLog { key, url });
        Ok(())
    }

    fn witness(&mut self, line: usize, rest: &[&str]) -> Result<(), PolicyError> {
        let (name, key, url) = match rest {
            [name, key] => (name, key, None),
            [name, key, url] => (name, key, Some((*url).to_owned())),
            _ => {
                return Err(arity(line, "witness", "a name, a vkey and an optional URL"));
            }
        };
        let key = parse_key(
            line,
            key,
            "witness",
            SignatureType::CosignatureV1,
            "0x04 (cosignature/v1)",
        )?;
        if self.witnesses.iter().any(|w| same_key(&w.key, &key)) {
            return Err(PolicyError::DuplicateKey {
                line,
                role: "witness",
            });
        }
        if self.witnesses.len() == MAX_ENTRIES {
            return Err(PolicyError::TooMany {
                line,
                role: "witness",
            });
        }
        self.define(line, name, Member::Witness(self.witnesses.len()))?;
        self.witnesses.push(PolicyWitness {
            name: (*name).to_owned(),
            key,
            url,
        });
        Ok(())
    }

    fn group(&mut self, line: usize, rest: &[&str]) -> Result<(), PolicyError> {
        let [name, threshold, members @ ..] = rest else {
            return Err(arity(line, "group", "a name, a threshold and members"));
        };
        if members.is_empty() {
            return Err(arity(line, "group", "a name, a threshold and members"));
        }
        let mut resolved = Vec::with_capacity(members.len());
        for member in members {
            if *member == "none" {
                return Err(PolicyError::NoneAsMember { line });
            }
            let found = self.lookup(line, member)?;
            if resolved.contains(&found) {
                return Err(PolicyError::RepeatedMember {
                    line,
                    name: (*member).to_owned(),
                });
            }
            resolved.push(found);
        }
        let n = resolved.len();
        let threshold = match *threshold {
            "all" => n,
            "any" => 1,
            k => parse_threshold(k)
                .filter(|k| (1..=n).contains(k))
                .ok_or(PolicyError::BadThreshold { line, members: n })?,
        };
        if self.groups.len() == MAX_ENTRIES {
            return Err(PolicyError::TooMany {
                line,
                role: "group",
            });
        }
        self.define(line, name, Member::Group(self.groups.len()))?;
        self.groups.push(Group {
            name: (*name).to_owned(),
            threshold,
            members: resolved,
        });
        Ok(())
    }

    fn quorum(&mut self, line: usize, rest: &[&str]) -> Result<(), PolicyError> {
        let [name] = rest else {
            return Err(arity(line, "quorum", "one name"));
        };
        if self.quorum.is_some() {
            return Err(PolicyError::SecondQuorum { line });
        }
        let member = if *name == "none" {
            None
        } else {
            Some(self.lookup(line, name)?)
        };
        self.quorum = Some(member);
        Ok(())
    }

    fn define(&mut self, line: usize, name: &str, member: Member) -> Result<(), PolicyError> {
        if name == "none" || self.names.contains_key(name) {
            return Err(PolicyError::DuplicateName {
                line,
                name: name.to_owned(),
            });
        }
        self.names.insert(name.to_owned(), member);
        Ok(())
    }

    fn lookup(&self, line: usize, name: &str) -> Result<Member, PolicyError> {
        self.names
            .get(name)
            .copied()
            .ok_or_else(|| PolicyError::UndefinedName {
                line,
                name: name.to_owned(),
            })
    }
}

fn arity(line: usize, keyword: &'static str, expected: &'static str) -> PolicyError {
    PolicyError::WrongArity {
        line,
        keyword,
        expected,
    }
}

fn parse_key(
    line: usize,
    text: &str,
    role: &'static str,
    wanted: SignatureType,
    expected: &'static str,
) -> Result<VerifierKey, PolicyError> {
    let key: VerifierKey = text
        .parse()
        .map_err(|error| PolicyError::Key { line, error })?;
    if key.signature_type() != wanted {
        return Err(PolicyError::WrongKeyType {
            line,
            role,
            expected,
        });
    }
    Ok(key)
}

/// Duplicate keys wrap the same public key, whatever their names.
fn same_key(a: &VerifierKey, b: &VerifierKey) -> bool {
    a.public_key() == b.public_key()
}

/// A decimal threshold without sign or leading zeros.
fn parse_threshold(text: &str) -> Option<usize> {
    let canonical = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}
