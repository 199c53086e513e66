//! The claims a proof carries, and their canonical JSON form.
//!
//! Owns: the `Claims`/`Grant` types, their one canonical serialization, and
//! the strict reading of a signed payload (byte-identical to its canonical
//! re-encoding, exactly the known fields, typed, self-consistent).
//! Must not: compare claims with what a verifier expects (that is
//! `verify.rs`) or read payload bytes that are not yet authenticated.
//!
//! # Proof v1 claims
//!
//! Every proof carries the sixteen claims of [`Claims`] (`iss`, `aud`,
//! `sub`, `sid`, `pid`, `op`, `args`, `args_sha256`, `crev`, `prev`,
//! `grant`, `prov`, `jti`, `iat`, `nbf`, `exp`). Two more are optional and
//! come together or not at all ([`PasskeyAssurance`]):
//!
//! | claim | value |
//! |---|---|
//! | `amr` | array of the authentication methods the signer checked: non-empty, no duplicates, each known ([`AuthMethod`]; today only `"passkey-uv"`, a passkey assertion with the user-verified flag) |
//! | `pkh` | lowercase hex SHA-256 of the passkey's credential id bytes (64 digits) |
//!
//! A payload with any other field set (one of the pair without the other,
//! an unknown method, a duplicate, an empty array, a malformed hash) is
//! refused as `malformed`. Proofs without the pair are written exactly as
//! before, byte for byte. A proof with a `grant` (issued under an
//! auto-approval rule) never carries the pair: a rule is not a person's
//! passkey, and that combination is refused as `malformed` too.
//!
//! One more is optional on its own ([`Premise`]): `prem`, the fact about
//! current state the signer read, showed the person and bound into the
//! proof, which the consume transaction establishes again: a state read
//! (`{"key", "ns", "value", "version"}`) or a premise command's output
//! (`{"argv", "out"}`), strictly typed.

use serde_json::{Map, Value};
use time::OffsetDateTime;

use crate::canonical::{self, CanonicalError, MAX_SAFE_INTEGER};
use crate::ids::ApproverName;
use crate::refusal::Refusal;
use crate::timestamp;

mod passkey;
mod premise;

pub use passkey::{AuthMethod, InvalidPasskeyAssurance, PasskeyAssurance};
pub use premise::{
    CommandPremise, MAX_PREMISE_ARGV, MAX_PREMISE_NAME_BYTES, MAX_PREMISE_OUTPUT_BYTES, Premise,
    StatePremise,
};

/// The issuer every countersign proof names.
pub const ISSUER: &str = "countersign-signer";
/// Largest signed payload the verifier reads, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 128 * 1024;
/// Deepest arguments a proof can carry: the claims object nests them one
/// level below its own, and a payload is read with [`canonical::MAX_DEPTH`].
pub const MAX_ARGS_DEPTH: usize = canonical::MAX_DEPTH - 1;
/// Largest canonical arguments a proof carries, in bytes (the stored text is
/// re-read with this limit when a person decides); with the other claims it
/// stays well under [`MAX_PAYLOAD_BYTES`].
pub const MAX_ARGS_CANONICAL_BYTES: usize = canonical::MAX_ARGS_BYTES;

/// Most approvers a quorum names, and so the most a quorum provenance
/// (`human:quorum:...`) lists.
pub const MAX_QUORUM_APPROVERS: usize = 16;

/// The provenance of a proof issued when a quorum was reached:
/// `human:quorum:<sub>/<name>,<sub>/<name>,...`, naming every approver who
/// approved, in the order they approved.
pub fn quorum_provenance<'a>(
    sub: &str,
    approvers: impl IntoIterator<Item = &'a ApproverName>,
) -> String {
    let names: Vec<String> = approvers
        .into_iter()
        .map(|name| format!("{sub}/{name}"))
        .collect();
    format!("human:quorum:{}", names.join(","))
}

/// Why arguments that parsed can still never be carried by a proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsignableArgs {
    /// Their canonical form is larger than a proof carries (the canonical
    /// form can be larger than the input: `1e15` is written out in full).
    #[error(
        "their canonical form is {bytes} bytes, more than the {MAX_ARGS_CANONICAL_BYTES} a proof can carry"
    )]
    TooLarge {
        /// Size of the canonical form, in bytes.
        bytes: usize,
    },
    /// They nest deeper than a proof's claims can hold them.
    #[error(
        "they nest {depth} levels deep, more than the {MAX_ARGS_DEPTH} a proof can carry (its claims hold them one level deeper)"
    )]
    TooDeep {
        /// Nesting depth of the arguments (the top-level object is 1).
        depth: usize,
    },
}

/// Checks that arguments `value`, whose canonical form is `canonical_text`,
/// fit in a proof's claims, so that what is accepted at proposal can be
/// signed and verified.
pub fn check_signable_args(value: &Value, canonical_text: &str) -> Result<(), UnsignableArgs> {
    if canonical_text.len() > MAX_ARGS_CANONICAL_BYTES {
        return Err(UnsignableArgs::TooLarge {
            bytes: canonical_text.len(),
        });
    }
    let depth = nesting_depth(value);
    if depth > MAX_ARGS_DEPTH {
        return Err(UnsignableArgs::TooDeep { depth });
    }
    Ok(())
}

/// Nesting depth as the canonical parser counts it: a scalar is 0, an array
/// or object one more than its deepest member.
fn nesting_depth(value: &Value) -> usize {
    // Iterative: `value` may come from a caller that did not bound its depth.
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        match value {
            Value::Array(items) => {
                deepest = deepest.max(depth);
                stack.extend(items.iter().map(|v| (v, depth + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(depth);
                stack.extend(map.values().map(|v| (v, depth + 1)));
            }
            _ => {}
        }
    }
    deepest
}

/// Every claim a payload may carry: the sixteen of every proof, the
/// passkey pair (`amr`, `pkh`) and the premise (`prem`), in byte order,
/// the order of the map a payload is read into. Reading walks the map and
/// this list together, once; a key found nowhere ahead in the list (one
/// that is no claim, or out of order) is malformed.
const CLAIMS: [&str; 19] = [
    "amr",
    "args",
    "args_sha256",
    "aud",
    "crev",
    "exp",
    "grant",
    "iat",
    "iss",
    "jti",
    "nbf",
    "op",
    "pid",
    "pkh",
    "prem",
    "prev",
    "prov",
    "sid",
    "sub",
];

/// A standing rule that approved an action without a fresh human decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Rule id.
    pub rule: String,
    /// Rule version.
    pub version: u64,
}

impl Grant {
    /// The provenance a proof issued under this grant carries:
    /// `rule:<id>@<version>`.
    pub fn provenance(&self) -> String {
        format!("rule:{}@{}", self.rule, self.version)
    }

    /// The grant a provenance `rule:<id>@<version>` names, or `None` for any
    /// other provenance (a person's decision) or a malformed one.
    pub fn from_provenance(prov: &str) -> Option<Grant> {
        let (rule, version) = prov.strip_prefix("rule:")?.rsplit_once('@')?;
        let version: u64 = version.parse().ok()?;
        let grant = Grant {
            rule: rule.to_owned(),
            version,
        };
        // Only the exact text: no leading zeros, signs or other spellings.
        (is_rule_id(rule) && grant.provenance() == prov).then_some(grant)
    }
}

/// Everything a proof asserts. See the contract for the meaning of each field.
#[derive(Debug, Clone, PartialEq)]
pub struct Claims {
    /// Issuer, always [`ISSUER`].
    pub iss: String,
    /// Audience (the installation/deployment the proof is for).
    pub aud: String,
    /// Principal id.
    pub sub: String,
    /// Session.
    pub sid: String,
    /// Proposal id.
    pub pid: String,
    /// Operation name.
    pub op: String,
    /// Canonical arguments (a JSON object).
    pub args: Value,
    /// SHA-256 hex of the canonical arguments text.
    pub args_sha256: String,
    /// Contract revision of the operation.
    pub crev: String,
    /// Policy revision.
    pub prev: String,
    /// The rule that approved, or `None` for a human decision.
    pub grant: Option<Grant>,
    /// Provenance: `human:cert:<sub>` (an approver certificate of the
    /// principal decided), `human:cert:<sub>/<name>` (the named approver
    /// credential `<name>` of the principal, e.g. a web console, decided),
    /// `human:quorum:<sub>/<name>,...` (the quorum's approvers who
    /// approved, in order), `rule:<id>@<version>`, or, from older signers,
    /// `human:cli`/`human:web`.
    pub prov: String,
    /// Nonce: base64url-no-pad of 32 random bytes.
    pub jti: String,
    /// Issued at.
    pub iat: OffsetDateTime,
    /// Not before.
    pub nbf: OffsetDateTime,
    /// Expires at (exclusive).
    pub exp: OffsetDateTime,
    /// What the signer checked with a passkey (`amr` and `pkh`), or `None`
    /// when the proof carries neither claim.
    pub passkey: Option<PasskeyAssurance>,
    /// The fact about current state the signer read and bound (`prem`),
    /// rechecked inside the consume transaction; `None` for operations
    /// without a premise.
    pub premise: Option<Premise>,
}

impl Claims {
    /// True when the signer checked a passkey assertion with user
    /// verification before it signed (`amr` contains `passkey-uv`).
    pub fn passkey_verified(&self) -> bool {
        self.passkey
            .as_ref()
            .is_some_and(|p| p.includes(AuthMethod::PasskeyUv))
    }

    /// The canonical JSON payload of these claims (what the signer signs).
    pub fn to_canonical_json(&self) -> Result<String, CanonicalError> {
        let ts = |t: OffsetDateTime| timestamp::format(t).map_err(|_| CanonicalError::Timestamp);
        let grant = match &self.grant {
            None => Value::Null,
            Some(g) => {
                let mut m = Map::new();
                m.insert("rule".into(), Value::String(g.rule.clone()));
                m.insert("version".into(), Value::from(g.version));
                Value::Object(m)
            }
        };
        let mut m = Map::new();
        let s = |v: &String| Value::String(v.clone());
        m.insert("iss".into(), s(&self.iss));
        m.insert("aud".into(), s(&self.aud));
        m.insert("sub".into(), s(&self.sub));
        m.insert("sid".into(), s(&self.sid));
        m.insert("pid".into(), s(&self.pid));
        m.insert("op".into(), s(&self.op));
        m.insert("args".into(), self.args.clone());
        m.insert("args_sha256".into(), s(&self.args_sha256));
        m.insert("crev".into(), s(&self.crev));
        m.insert("prev".into(), s(&self.prev));
        m.insert("grant".into(), grant);
        m.insert("prov".into(), s(&self.prov));
        m.insert("jti".into(), s(&self.jti));
        m.insert("iat".into(), Value::String(ts(self.iat)?));
        m.insert("nbf".into(), Value::String(ts(self.nbf)?));
        m.insert("exp".into(), Value::String(ts(self.exp)?));
        if let Some(passkey) = &self.passkey {
            m.insert("amr".into(), passkey.amr_value());
            m.insert(
                "pkh".into(),
                Value::String(passkey.credential_id_sha256().to_owned()),
            );
        }
        if let Some(premise) = &self.premise {
            m.insert("prem".into(), premise.claim_value());
        }
        canonical::to_canonical(&Value::Object(m))
    }

    /// Reads an (authenticated) payload strictly.
    ///
    /// `NonCanonicalClaims` if the bytes are not exactly the canonical JSON
    /// of some value (this includes duplicate keys, unrepresentable numbers,
    /// lone surrogates, whitespace, key order); `Malformed` if that value is
    /// not a complete, well-typed, self-consistent claims object (exactly
    /// the sixteen claims, or those and both of `amr` and `pkh`);
    /// `ArgumentsMismatch` if `args_sha256` is not the hash of `args`.
    pub fn from_canonical_json(payload: &[u8]) -> Result<Claims, Refusal> {
        let (value, args_text) =
            canonical::parse_canonical_member(payload, MAX_PAYLOAD_BYTES, "args")
                .map_err(|_| Refusal::NonCanonicalClaims)?;
        // No `args` member: malformed (its text is found wherever it is).
        let args_text = args_text.ok_or(Refusal::Malformed)?;
        let Value::Object(m) = value else {
            return Err(Refusal::Malformed);
        };
        let mut slots: [Option<Value>; CLAIMS.len()] = Default::default();
        let mut ahead = 0;
        for (key, value) in m {
            let at = CLAIMS[ahead..]
                .iter()
                .position(|claim| *claim == key)
                .ok_or(Refusal::Malformed)?;
            slots[ahead + at] = Some(value);
            ahead += at + 1;
        }
        let [
            amr,
            args,
            args_sha256,
            aud,
            crev,
            exp,
            grant,
            iat,
            iss,
            jti,
            nbf,
            op,
            pid,
            pkh,
            prem,
            prev,
            prov,
            sid,
            sub,
        ] = slots;
        let passkey = match (amr, pkh) {
            (None, None) => None,
            (Some(amr), Some(pkh)) => Some(PasskeyAssurance::from_claim_values(amr, pkh)?),
            _ => return Err(Refusal::Malformed),
        };
        let premise = prem.map(Premise::from_claim_value).transpose()?;
        let take = |claim: Option<Value>| claim.ok_or(Refusal::Malformed);
        let claims = Claims {
            iss: string(take(iss)?)?,
            aud: string(take(aud)?)?,
            sub: string(take(sub)?)?,
            sid: string(take(sid)?)?,
            pid: string(take(pid)?)?,
            op: string(take(op)?)?,
            args_sha256: string(take(args_sha256)?)?,
            crev: string(take(crev)?)?,
            prev: string(take(prev)?)?,
            prov: string(take(prov)?)?,
            jti: string(take(jti)?)?,
            iat: time(take(iat)?)?,
            nbf: time(take(nbf)?)?,
            exp: time(take(exp)?)?,
            grant: read_grant(take(grant)?)?,
            args: take(args)?,
            passkey,
            premise,
        };
        claims.check_consistency(args_text)?;
        Ok(claims)
    }

    /// `args_text`: the arguments' canonical text as the payload holds it,
    /// hashed as it stands (the payload is canonical, so these are the
    /// bytes the writer would write for `args`).
    fn check_consistency(&self, args_text: &[u8]) -> Result<(), Refusal> {
        // A rule is not a person's passkey: a proof issued under a grant
        // never claims passkey assurance.
        let well_formed = self.iss == ISSUER
            && !(self.grant.is_some() && self.passkey.is_some())
            && self.args.is_object()
            && is_sha256_hex(&self.args_sha256)
            && is_sha256_hex(&self.crev)
            && is_sha256_hex(&self.prev)
            && is_nonce(&self.jti)
            && provenance_matches(&self.prov, self.grant.as_ref(), &self.sub)
            && self.nbf >= self.iat
            && self.exp > self.nbf;
        if !well_formed {
            return Err(Refusal::Malformed);
        }
        if canonical::sha256_hex(args_text) != self.args_sha256 {
            return Err(Refusal::ArgumentsMismatch);
        }
        Ok(())
    }
}

fn string(v: Value) -> Result<String, Refusal> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err(Refusal::Malformed),
    }
}

fn time(v: Value) -> Result<OffsetDateTime, Refusal> {
    timestamp::parse(&string(v)?).map_err(|_| Refusal::Malformed)
}

fn read_grant(v: Value) -> Result<Option<Grant>, Refusal> {
    let mut m = match v {
        Value::Null => return Ok(None),
        Value::Object(m) => m,
        _ => return Err(Refusal::Malformed),
    };
    if m.len() != 2 {
        return Err(Refusal::Malformed);
    }
    let rule = string(m.remove("rule").ok_or(Refusal::Malformed)?)?;
    let version = m
        .remove("version")
        .and_then(|v| v.as_u64())
        .filter(|v| *v <= MAX_SAFE_INTEGER)
        .ok_or(Refusal::Malformed)?;
    Ok(Some(Grant { rule, version }))
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// base64url-no-pad of exactly 32 bytes (256 bits), canonical trailing bits.
fn is_nonce(s: &str) -> bool {
    s.len() == 43 && crate::paseto::b64url_decode(s).is_some_and(|b| b.len() == 32)
}

/// Without a grant, `human:cert:<sub>` or `human:cert:<sub>/<name>` (a
/// decision made with an approver certificate of the proof's own principal,
/// unnamed or named `<name>`, a valid [`ApproverName`];
/// `human:cli`/`human:web` are still accepted from signers that issued
/// them), or `human:quorum:<sub>/<name>,...` (a quorum: 1 to
/// [`MAX_QUORUM_APPROVERS`] distinct named approvers of the principal);
/// with one, `rule:<id>@<version>` naming exactly the grant.
fn provenance_matches(prov: &str, grant: Option<&Grant>, sub: &str) -> bool {
    match (prov, grant) {
        ("human:cli" | "human:web", None) => true,
        (_, None) if prov.starts_with("human:quorum:") => quorum_matches(prov, sub),
        (_, None) => prov
            .strip_prefix("human:cert:")
            .and_then(|rest| rest.strip_prefix(sub))
            .is_some_and(|name| match name.strip_prefix('/') {
                None => name.is_empty(),
                Some(name) => ApproverName::parse(name).is_ok(),
            }),
        (_, Some(g)) => prov == format!("rule:{}@{}", g.rule, g.version) && is_rule_id(&g.rule),
    }
}

/// `human:quorum:<sub>/<name>(,<sub>/<name>)*`: each name a valid
/// [`ApproverName`] of the proof's own principal, none twice, at most
/// [`MAX_QUORUM_APPROVERS`].
fn quorum_matches(prov: &str, sub: &str) -> bool {
    let Some(list) = prov.strip_prefix("human:quorum:") else {
        return false;
    };
    let mut seen = std::collections::BTreeSet::new();
    for entry in list.split(',') {
        let name = entry
            .strip_prefix(sub)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|name| ApproverName::parse(name).ok());
        let Some(name) = name else { return false };
        if seen.len() == MAX_QUORUM_APPROVERS || !seen.insert(name) {
            return false;
        }
    }
    true
}

fn is_rule_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
}

#[cfg(test)]
mod tests;
