//! The offline verification of a bundle: the nineteen checks of
//! docs/evidence.md, in their order, stopping at the first that fails with
//! its code. Public keys only: the trust policy's log and witness keys, the
//! key set (pinned or the bundle's own), the credentials' keys the log
//! fixed. No clock: a bundle's proof expired long ago by design.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_tlog::{
    Checkpoint, Note, Policy, PolicyCheckError, ProofError, TlogProof, verify_checkpoint,
    verify_inclusion,
};
use countersign_verifier::verify::authenticate;
use countersign_verifier::{KeyRing, KeySet, KeyStatus, Proof, timestamp};
use countersign_webauthn::challenge::{DecisionChallenge, ProposalDigest, ProposalFields};
use countersign_webauthn::{
    Assertion, CosePublicKey, Credential, RelyingParty, client_data_challenge, verify_assertion,
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::bundle::{AssertionPart, Bundle, EventPart, FORMAT};
use crate::commitment::Opening;
use crate::event::{EventBody, event_hash, event_leaf_hash};

/// Each claim a bundle makes, in the order they are checked; the code is
/// what both verifiers print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Check {
    /// Version 1, every member present and typed.
    Format,
    /// One checkpoint, of a log of the policy.
    Checkpoint,
    /// Signed by that log's key.
    CheckpointSignature,
    /// Cosigned by the policy's quorum.
    WitnessQuorum,
    /// Each event's content hashes to its hash.
    EventHash,
    /// Each event's leaf is in the checkpoint's tree.
    NotInCheckpoint,
    /// Each inclusion proof leads to the checkpoint's root.
    Inclusion,
    /// The proposal's events are all there.
    MissingEvent,
    /// The proposal is the one the `proposed` event recorded.
    Proposal,
    /// The arguments are the ones recorded.
    Arguments,
    /// The contract is the revision recorded.
    Contract,
    /// The decision and its assertions are the ones the events name.
    AssertionEvent,
    /// Each credential's key is the one its enrolment fixed.
    Credential,
    /// Each assertion answers the challenge of this action.
    AssertionChallenge,
    /// Each assertion's signature verifies.
    AssertionSignature,
    /// The proof is the one issued.
    ProofHash,
    /// The proof's signature verifies.
    ProofSignature,
    /// The proof's claims bind this action.
    ProofClaims,
    /// The consumption and result are the ones recorded.
    Consumption,
}

impl Check {
    /// The refusal code.
    pub fn code(self) -> &'static str {
        match self {
            Check::Format => "format",
            Check::Checkpoint => "checkpoint",
            Check::CheckpointSignature => "checkpoint_signature",
            Check::WitnessQuorum => "witness_quorum",
            Check::EventHash => "event_hash",
            Check::NotInCheckpoint => "not_in_checkpoint",
            Check::Inclusion => "inclusion",
            Check::MissingEvent => "missing_event",
            Check::Proposal => "proposal",
            Check::Arguments => "arguments",
            Check::Contract => "contract",
            Check::AssertionEvent => "assertion_event",
            Check::Credential => "credential",
            Check::AssertionChallenge => "assertion_challenge",
            Check::AssertionSignature => "assertion_signature",
            Check::ProofHash => "proof_hash",
            Check::ProofSignature => "proof_signature",
            Check::ProofClaims => "proof_claims",
            Check::Consumption => "consumption",
        }
    }
}

/// Why a bundle was refused: the first claim that failed, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {message}", check.code())]
pub struct Refused {
    /// The claim.
    pub check: Check,
    /// What failed.
    pub message: String,
}

/// What a verified bundle established: one line per claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// `(claim, what was found)`, in order.
    pub claims: Vec<(Check, String)>,
}

/// What the verifier trusts, from outside the bundle.
#[derive(Debug, Clone, Copy)]
pub struct Trust<'a> {
    /// The tlog-policy: the log's keys, the witnesses and the quorum.
    pub policy: &'a Policy,
    /// The pinned proof key set, if the auditor has one.
    pub keys: Option<&'a KeySet>,
}

fn refuse<T>(check: Check, message: impl Into<String>) -> Result<T, Refused> {
    Err(Refused {
        check,
        message: message.into(),
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Verifies `bytes`, a bundle, against `trust`, opening its commitment to
/// the arguments with `opening` when given.
pub fn verify(
    bytes: &[u8],
    trust: &Trust<'_>,
    opening: Option<&Opening>,
) -> Result<Verified, Refused> {
    let (bundle, bundled_keys) = read(bytes)?;
    let mut out = Verified { claims: Vec::new() };
    let mut ok = |check: Check, line: String| out.claims.push((check, line));
    ok(
        Check::Format,
        format!("{FORMAT}, proposal {}", bundle.proposal.id),
    );

    let proofs = checkpoint(&bundle, trust.policy, &mut ok)?;
    events(&bundle, &proofs, &mut ok)?;
    let found = Found::of(&bundle)?;
    ok(
        Check::MissingEvent,
        format!(
            "proposed, approved, intent and {} events of {}",
            found.completed.kind, bundle.proposal.id
        ),
    );
    proposal(&bundle, &found, opening, &mut ok)?;
    decision(&bundle, &found, &mut ok)?;
    proof(&bundle, &found, trust.keys, &bundled_keys, &mut ok)?;
    consumption(&bundle, &found, &mut ok)?;
    Ok(out)
}

/// Step 1: the bundle as version 1, and its key set.
fn read(bytes: &[u8]) -> Result<(Bundle, KeySet), Refused> {
    let bundle: Bundle = match serde_json::from_slice(bytes) {
        Ok(bundle) => bundle,
        Err(e) => return refuse(Check::Format, format!("not a version 1 bundle: {e}")),
    };
    if bundle.format != FORMAT {
        return refuse(
            Check::Format,
            format!("format {:?} is not {FORMAT:?}", bundle.format),
        );
    }
    let p = &bundle.proposal;
    match (&p.arguments, &p.arguments_commitment, &bundle.proof) {
        (Some(_), None, Some(_)) | (None, Some(_), None) => {}
        _ => {
            return refuse(
                Check::Format,
                "a bundle holds the arguments and the proof, or a commitment and neither",
            );
        }
    }
    if bundle.events.is_empty() {
        return refuse(Check::Format, "no events");
    }
    let keys = serde_json::to_vec(&bundle.keys).unwrap_or_default();
    let keys = match KeySet::parse(&keys) {
        Ok(keys) => keys,
        Err(e) => return refuse(Check::Format, format!("keys: {e}")),
    };
    Ok((bundle, keys))
}

/// Steps 2 to 4: one checkpoint, signed by a log of the policy and
/// cosigned by its quorum. Returns each event's parsed tlog-proof.
fn checkpoint(
    bundle: &Bundle,
    policy: &Policy,
    ok: &mut impl FnMut(Check, String),
) -> Result<Vec<TlogProof>, Refused> {
    let mut proofs = Vec::with_capacity(bundle.events.len());
    for e in &bundle.events {
        match TlogProof::parse(e.tlog_proof.as_bytes()) {
            Ok(proof) => proofs.push(proof),
            Err(err) => {
                return refuse(
                    Check::Checkpoint,
                    format!("the tlog_proof of the {} is refused: {err}", label(e)),
                );
            }
        }
    }
    let note: &Note = proofs[0].checkpoint();
    if proofs.iter().any(|p| p.checkpoint() != note) {
        return refuse(Check::Checkpoint, "the events carry different checkpoints");
    }
    let parsed: Checkpoint = match note.text().parse() {
        Ok(parsed) => parsed,
        Err(e) => return refuse(Check::Checkpoint, format!("the checkpoint is refused: {e}")),
    };
    let origin = parsed.origin();
    if policy.logs_of(origin).next().is_none() {
        return refuse(
            Check::Checkpoint,
            format!("the checkpoint's origin {origin:?} is no log of the policy"),
        );
    }
    ok(
        Check::Checkpoint,
        format!("one checkpoint, of log {origin}, size {}", parsed.size()),
    );
    // The log's signature alone first, so that a cosignature that does
    // not verify counts against the quorum, not against the log.
    let signed = policy
        .logs_of(origin)
        .any(|log| verify_checkpoint(note, origin, &log.key, &[]).is_ok());
    if !signed {
        return refuse(
            Check::CheckpointSignature,
            format!("the checkpoint is not signed by the policy's log {origin}"),
        );
    }
    let verified = match policy.verify_checkpoint(note) {
        Ok(verified) => verified,
        Err(PolicyCheckError::QuorumNotMet { quorum, cosigned }) => {
            return refuse(
                Check::WitnessQuorum,
                format!("the policy's quorum {quorum:?} is not met: cosigned by {cosigned:?}"),
            );
        }
        Err(e) => {
            return refuse(
                Check::WitnessQuorum,
                format!("a cosignature of a policy witness does not verify: {e}"),
            );
        }
    };
    ok(
        Check::CheckpointSignature,
        format!("signed by the log key of {origin}"),
    );
    let witnesses: Vec<String> = policy
        .witnesses()
        .iter()
        .filter(|w| verified.cosigned_by(&w.key).is_some())
        .map(|w| w.name.clone())
        .collect();
    ok(
        Check::WitnessQuorum,
        if policy.needs_no_cosignature() {
            "the policy's quorum is none: no cosignature needed".to_owned()
        } else {
            format!(
                "the policy's quorum is met, cosigned by {}",
                witnesses.join(", ")
            )
        },
    );
    Ok(proofs)
}

/// Steps 5 to 7: each event hashes to its hash and is in the checkpoint.
fn events(
    bundle: &Bundle,
    proofs: &[TlogProof],
    ok: &mut impl FnMut(Check, String),
) -> Result<(), Refused> {
    for e in &bundle.events {
        let body = EventBody {
            chain: &e.chain,
            seq: e.seq,
            at: &e.at,
            kind: &e.kind,
            proposal_id: e.proposal_id.as_deref(),
            actor: &e.actor,
            details: &e.details,
        };
        match event_hash(&e.prev_hash, &body) {
            Ok(hash) if hash == e.hash => {}
            _ => {
                return refuse(
                    Check::EventHash,
                    format!("the {} does not hash to its hash (it was edited)", label(e)),
                );
            }
        }
    }
    ok(
        Check::EventHash,
        format!("{} events hash to their hashes", bundle.events.len()),
    );
    let Ok(checkpoint) = proofs[0].checkpoint().text().parse::<Checkpoint>() else {
        return refuse(Check::Checkpoint, "the checkpoint is refused");
    };
    let (size, root) = (checkpoint.size(), checkpoint.root());
    for (e, proof) in bundle.events.iter().zip(proofs) {
        if proof.index() >= size {
            return refuse(
                Check::NotInCheckpoint,
                format!(
                    "the {} is leaf {}, beyond the checkpoint's size {size} (an older tree)",
                    label(e),
                    proof.index()
                ),
            );
        }
    }
    ok(
        Check::NotInCheckpoint,
        format!("every leaf is below the checkpoint's size {size}"),
    );
    for (e, proof) in bundle.events.iter().zip(proofs) {
        let leaf = event_leaf_hash(&e.chain, e.seq, &e.hash);
        match verify_inclusion(&leaf, proof.index(), size, proof.inclusion_proof(), root) {
            Ok(()) => {}
            Err(ProofError::RootMismatch) => {
                return refuse(
                    Check::Inclusion,
                    format!(
                        "the inclusion proof of the {} (leaf {}) does not lead to the checkpoint's root",
                        label(e),
                        proof.index()
                    ),
                );
            }
            Err(err) => {
                return refuse(
                    Check::Inclusion,
                    format!("the inclusion proof of the {}: {err}", label(e)),
                );
            }
        }
    }
    ok(
        Check::Inclusion,
        "every event is included in the checkpoint's tree".to_owned(),
    );
    Ok(())
}

fn label(e: &EventPart) -> String {
    format!("{} event at {}:{}", e.kind, e.chain, e.seq)
}

/// The proposal's events the later steps read.
struct Found<'a> {
    proposed: &'a EventPart,
    approved: &'a EventPart,
    intent: &'a EventPart,
    completed: &'a EventPart,
}

impl<'a> Found<'a> {
    /// Step 8.
    fn of(bundle: &'a Bundle) -> Result<Found<'a>, Refused> {
        let p = &bundle.proposal;
        let one = |kinds: &[&str]| -> Result<&'a EventPart, Refused> {
            let mut found = bundle.events.iter().filter(|e| {
                kinds.contains(&e.kind.as_str())
                    && e.proposal_id.as_deref() == Some(p.id.as_str())
                    && e.chain == p.principal
            });
            match (found.next(), found.next()) {
                (Some(e), None) => Ok(e),
                (None, _) => refuse(
                    Check::MissingEvent,
                    format!(
                        "no {} event of {} on the chain of {}",
                        kinds.join(" or "),
                        p.id,
                        p.principal
                    ),
                ),
                (Some(_), Some(_)) => refuse(
                    Check::MissingEvent,
                    format!("more than one {} event of {}", kinds.join(" or "), p.id),
                ),
            }
        };
        Ok(Found {
            proposed: one(&["proposed"])?,
            approved: one(&["approved"])?,
            intent: one(&["intent"])?,
            completed: one(&["completed", "resolved"])?,
        })
    }
}

/// Steps 9 to 11: the action is the one proposed.
fn proposal(
    bundle: &Bundle,
    found: &Found<'_>,
    opening: Option<&Opening>,
    ok: &mut impl FnMut(Check, String),
) -> Result<(), Refused> {
    let p = &bundle.proposal;
    let e = found.proposed;
    for (field, value) in [
        ("session", &p.session),
        ("operation", &p.operation),
        ("arguments_sha256", &p.arguments_sha256),
        ("contract_revision", &p.contract_revision),
        ("policy_revision", &p.policy_revision),
    ] {
        if e.detail(field) != Some(value.as_str()) {
            return refuse(
                Check::Proposal,
                format!(
                    "the proposal's {field} {value:?} is not the proposed event's {:?}",
                    e.detail(field).unwrap_or("")
                ),
            );
        }
    }
    if e.at != p.created_at {
        return refuse(
            Check::Proposal,
            format!(
                "created_at {} is not the proposed event's time {}",
                p.created_at, e.at
            ),
        );
    }
    ok(
        Check::Proposal,
        format!(
            "{} proposed {} in session {} at {}",
            p.principal, p.operation, p.session, p.created_at
        ),
    );
    match (&p.arguments, &p.arguments_commitment, opening) {
        (Some(arguments), _, _) => {
            if sha256_hex(arguments.as_bytes()) != p.arguments_sha256 {
                return refuse(
                    Check::Arguments,
                    "the arguments do not hash to the recorded arguments_sha256",
                );
            }
            ok(Check::Arguments, format!("arguments {arguments}"));
        }
        (None, Some(commitment), Some(opening)) => {
            if opening.commitment().as_deref() != Some(commitment.as_str()) {
                return refuse(
                    Check::Arguments,
                    "the opening does not match the bundle's commitment",
                );
            }
            if sha256_hex(opening.arguments.as_bytes()) != p.arguments_sha256 {
                return refuse(
                    Check::Arguments,
                    "the revealed arguments do not hash to the recorded arguments_sha256",
                );
            }
            ok(
                Check::Arguments,
                format!("arguments (revealed) {}", opening.arguments),
            );
        }
        (None, _, None) => ok(
            Check::Arguments,
            "committed, not revealed: not checked".to_owned(),
        ),
        (None, None, Some(_)) => return refuse(Check::Format, "no arguments and no commitment"),
    }
    match &bundle.contract {
        Some(contract) if sha256_hex(contract.as_bytes()) != p.contract_revision => {
            return refuse(
                Check::Contract,
                "the contract does not hash to the contract revision",
            );
        }
        Some(_) => ok(
            Check::Contract,
            format!("the contract of revision {}", p.contract_revision),
        ),
        None => ok(
            Check::Contract,
            "not in the bundle (the exporter's registry no longer holds this revision)".to_owned(),
        ),
    }
    Ok(())
}

/// Steps 12 to 15: who decided, and each passkey assertion.
fn decision(
    bundle: &Bundle,
    found: &Found<'_>,
    ok: &mut impl FnMut(Check, String),
) -> Result<(), Refused> {
    let d = &bundle.decision;
    let approved = found.approved;
    if approved.detail("provenance") != Some(d.provenance.as_str()) {
        return refuse(
            Check::AssertionEvent,
            format!(
                "the decision's provenance {:?} is not the approved event's {:?}",
                d.provenance,
                approved.detail("provenance").unwrap_or("")
            ),
        );
    }
    let quorum_events: Vec<&EventPart> = bundle
        .events
        .iter()
        .filter(|e| {
            e.kind == "quorum_approved"
                && e.proposal_id.as_deref() == Some(bundle.proposal.id.as_str())
                && e.chain == bundle.proposal.principal
        })
        .collect();
    // Every credential an event names has its assertion, and every
    // assertion is named by its event.
    let mut named: Vec<(Option<&str>, &str)> = Vec::new();
    if let Some(credential) = approved.detail("passkey") {
        named.push((None, credential));
    }
    for e in &quorum_events {
        if let (Some(approver), Some(credential)) = (e.detail("approver"), e.detail("passkey")) {
            named.push((Some(approver), credential));
        }
    }
    let given: Vec<(Option<&str>, &str)> = d
        .assertions
        .iter()
        .map(|a| (a.approver.as_deref(), a.credential_id.as_str()))
        .collect();
    if let Some(a) = given.iter().find(|a| !named.contains(a)) {
        return refuse(
            Check::AssertionEvent,
            format!(
                "no event records an assertion of credential {} by {}",
                a.1,
                who(a.0)
            ),
        );
    }
    if let Some(n) = named.iter().find(|n| !given.contains(n)) {
        return refuse(
            Check::AssertionEvent,
            format!(
                "the assertion of credential {} by {} is missing",
                n.1,
                who(n.0)
            ),
        );
    }
    ok(
        Check::AssertionEvent,
        if d.assertions.is_empty() {
            format!(
                "approved ({}) without a passkey: the log's word only",
                d.provenance
            )
        } else {
            format!(
                "approved ({}) with {} passkey assertion(s)",
                d.provenance,
                d.assertions.len()
            )
        },
    );
    for a in &d.assertions {
        credential(bundle, a)?;
    }
    let none = d.assertions.is_empty();
    let checked = |line: &str| {
        if none {
            "no passkey assertion to check".to_owned()
        } else {
            line.to_owned()
        }
    };
    ok(
        Check::Credential,
        checked("each credential's key is the one its enrolment event fixed"),
    );
    let mut challenges = Vec::with_capacity(d.assertions.len());
    for a in &d.assertions {
        challenges.push(challenge(bundle, a)?);
    }
    ok(
        Check::AssertionChallenge,
        checked("each assertion answers the challenge of this action"),
    );
    for (a, expected) in d.assertions.iter().zip(&challenges) {
        signature(bundle, a, expected)?;
    }
    ok(
        Check::AssertionSignature,
        match &d.relying_party {
            Some(rp) if !d.assertions.is_empty() => format!(
                "each assertion verifies, for relying party {}, user verified",
                rp.id
            ),
            _ => "no passkey assertion to check".to_owned(),
        },
    );
    Ok(())
}

fn who(approver: Option<&str>) -> String {
    approver.map_or_else(|| "the proposal's person".to_owned(), str::to_owned)
}

/// Step 13 for one assertion.
fn credential(bundle: &Bundle, a: &AssertionPart) -> Result<(), Refused> {
    let enrolled = bundle.events.iter().find(|e| {
        e.kind == "passkey_enrolled" && e.detail("credential_id") == Some(a.credential_id.as_str())
    });
    let Some(enrolled) = enrolled else {
        return refuse(
            Check::Credential,
            format!(
                "no passkey_enrolled event of credential {}",
                a.credential_id
            ),
        );
    };
    if enrolled.detail("principal") != Some(bundle.proposal.principal.as_str()) {
        return refuse(
            Check::Credential,
            format!(
                "credential {} was enrolled for another principal",
                a.credential_id
            ),
        );
    }
    if enrolled.detail("public_key_sha256") != Some(sha256_hex(a.public_key.as_bytes()).as_str()) {
        return refuse(
            Check::Credential,
            format!(
                "the public key of credential {} is not the one its enrolment fixed",
                a.credential_id
            ),
        );
    }
    Ok(())
}

fn decode(check: Check, what: &str, text: &str) -> Result<Vec<u8>, Refused> {
    URL_SAFE_NO_PAD
        .decode(text)
        .or_else(|_| refuse(check, format!("{what} is not base64url")))
}

/// Step 14 for one assertion: the challenge it must answer.
fn challenge(bundle: &Bundle, a: &AssertionPart) -> Result<[u8; 32], Refused> {
    let check = Check::AssertionChallenge;
    let random: [u8; 32] = decode(check, "challenge_random", &a.challenge_random)?
        .try_into()
        .or_else(|_| refuse(check, "challenge_random is not 32 bytes"))?;
    let p = &bundle.proposal;
    let digest = ProposalDigest::of(&ProposalFields {
        operation: &p.operation,
        arguments_sha256: &p.arguments_sha256,
        contract_revision: &p.contract_revision,
        policy_revision: &p.policy_revision,
        session: &p.session,
        delivery: &a.delivery,
    });
    let expected = DecisionChallenge::derive(random, &digest);
    let client_data = decode(check, "client_data_json", &a.client_data_json)?;
    match client_data_challenge(&client_data) {
        Ok(signed) if signed == expected => Ok(expected),
        Ok(_) => refuse(
            check,
            format!(
                "the assertion of credential {} answers another challenge (another action or delivery)",
                a.credential_id
            ),
        ),
        Err(e) => refuse(check, format!("client data: {e}")),
    }
}

/// Step 15 for one assertion.
fn signature(bundle: &Bundle, a: &AssertionPart, expected: &[u8; 32]) -> Result<(), Refused> {
    let check = Check::AssertionSignature;
    let Some(rp) = &bundle.decision.relying_party else {
        return refuse(check, "the bundle names no relying party");
    };
    let rp = RelyingParty {
        rp_id: rp.id.clone(),
        origins: rp.origins.clone(),
    };
    let public_key = CosePublicKey::from_cose(&decode(check, "public_key", &a.public_key)?)
        .or_else(|e| refuse(check, format!("the credential's public key: {e}")))?;
    let id = decode(check, "credential_id", &a.credential_id)?;
    let credential = Credential {
        id: id.clone(),
        public_key,
        sign_count: 0,
    };
    let assertion = Assertion {
        credential_id: id,
        authenticator_data: decode(check, "authenticator_data", &a.authenticator_data)?,
        client_data_json: decode(check, "client_data_json", &a.client_data_json)?,
        signature: decode(check, "signature", &a.signature)?,
    };
    verify_assertion(&credential, &assertion, &rp, expected)
        .map(|_| ())
        .or_else(|e| {
            refuse(
                check,
                format!("the assertion of credential {}: {e}", a.credential_id),
            )
        })
}

/// Steps 16 to 18: the proof.
fn proof(
    bundle: &Bundle,
    found: &Found<'_>,
    pinned: Option<&KeySet>,
    bundled: &KeySet,
    ok: &mut impl FnMut(Check, String),
) -> Result<(), Refused> {
    let Some(text) = &bundle.proof else {
        for check in [Check::ProofHash, Check::ProofSignature, Check::ProofClaims] {
            ok(
                check,
                "no proof in the bundle (arguments committed): not checked".to_owned(),
            );
        }
        return Ok(());
    };
    let hash = sha256_hex(text.as_bytes());
    if found.intent.detail("proof_sha256") != Some(hash.as_str()) {
        return refuse(
            Check::ProofHash,
            "the proof is not the one the intent event records".to_owned(),
        );
    }
    let issued = found.approved.detail("proof_sha256");
    if issued == Some(hash.as_str()) {
        ok(
            Check::ProofHash,
            format!("the proof issued and consumed, SHA-256 {hash}"),
        );
    } else {
        // Signed again by the signer a head claimed the handoff through,
        // which did not issue it: its event, in the log, names both.
        let p = &bundle.proposal;
        let resigned = bundle.events.iter().find(|e| {
            e.kind == "proof_resigned"
                && e.proposal_id.as_deref() == Some(p.id.as_str())
                && e.chain == p.principal
                && e.detail("proof_sha256") == Some(hash.as_str())
                && issued.is_some()
                && e.detail("replaces_proof_sha256") == issued
        });
        let Some(resigned) = resigned else {
            return refuse(
                Check::ProofHash,
                "the proof is not the one the approved event records".to_owned(),
            );
        };
        ok(
            Check::ProofHash,
            format!(
                "the proof consumed, SHA-256 {hash}, signed again by key {} for the one issued",
                resigned.detail("key_id").unwrap_or("?")
            ),
        );
    }
    let (keys, whose) = match pinned {
        Some(keys) => (keys, "the pinned key set"),
        None => (bundled, "the bundle's key set (not pinned: pass --keys)"),
    };
    // A retired key's proofs are refused, as everywhere.
    let ring = KeyRing::from_keys(
        keys.keys()
            .iter()
            .filter(|k| k.status != KeyStatus::Retired)
            .map(|k| k.key),
    );
    let proof = Proof::from_text(text.clone())
        .or_else(|e| refuse(Check::ProofSignature, format!("the proof: {e}")))?;
    let (claims, kid) = authenticate(&proof, &ring)
        .or_else(|e| refuse(Check::ProofSignature, format!("under {whose}: {e}")))?;
    ok(
        Check::ProofSignature,
        format!("signed by {kid}, from {whose}"),
    );
    let p = &bundle.proposal;
    let approved = found.approved;
    let exp = timestamp::format(claims.exp).unwrap_or_default();
    let checks: [(&str, &str, Option<&str>); 11] = [
        ("pid", &claims.pid, Some(p.id.as_str())),
        ("sub", &claims.sub, Some(p.principal.as_str())),
        ("sid", &claims.sid, Some(p.session.as_str())),
        ("op", &claims.op, Some(p.operation.as_str())),
        (
            "args_sha256",
            &claims.args_sha256,
            Some(p.arguments_sha256.as_str()),
        ),
        ("crev", &claims.crev, Some(p.contract_revision.as_str())),
        ("prev", &claims.prev, Some(p.policy_revision.as_str())),
        ("prov", &claims.prov, approved.detail("provenance")),
        ("aud", &claims.aud, approved.detail("audience")),
        ("exp", &exp, approved.detail("expires_at")),
        ("jti", &claims.jti, found.intent.detail("nonce")),
    ];
    for (claim, actual, expected) in checks {
        if expected != Some(actual) {
            return refuse(
                Check::ProofClaims,
                format!("its {claim} {actual:?} is not {:?}", expected.unwrap_or("")),
            );
        }
    }
    ok(
        Check::ProofClaims,
        format!(
            "it binds this action for {}, nonce {}",
            claims.aud, claims.jti
        ),
    );
    Ok(())
}

/// Step 19: the consumption and the effect's result.
fn consumption(
    bundle: &Bundle,
    found: &Found<'_>,
    ok: &mut impl FnMut(Check, String),
) -> Result<(), Refused> {
    let c = &bundle.consumption;
    let (intent, completed) = (found.intent, found.completed);
    if intent.detail("nonce") != Some(c.nonce.as_str()) {
        return refuse(
            Check::Consumption,
            "the consumed nonce is not the intent event's",
        );
    }
    if completed.detail("nonce") != Some(c.nonce.as_str())
        || completed.detail("status") != Some(c.status.as_str())
        || completed.details.get("error").unwrap_or(&Value::Null)
            != &c.error.clone().map_or(Value::Null, Value::String)
    {
        return refuse(
            Check::Consumption,
            format!(
                "the outcome is not the {} event's (nonce, status, error)",
                completed.kind
            ),
        );
    }
    let pinned = match completed.detail("result_sha256") {
        Some(recorded) if recorded != sha256_hex(c.result.as_bytes()) => {
            return refuse(
                Check::Consumption,
                format!(
                    "the result is not the one the {} event records",
                    completed.kind
                ),
            );
        }
        Some(_) => "pinned by the log",
        None => "recorded before the log pinned results: the ledger's word only",
    };
    ok(
        Check::Consumption,
        format!(
            "consumed once (nonce {}), {}: result {} ({pinned})",
            c.nonce, c.status, c.result
        ),
    );
    Ok(())
}
