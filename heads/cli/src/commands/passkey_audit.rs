//! `audit --verify`, passkey part: every assertion the ledger stores is
//! checked again with public data only, the enrolled credential's public
//! key: that it answers the challenge derived from what it authorized (the
//! approval's operation, arguments hash, contract and policy revisions,
//! bound session and delivery; the enrolment's registration; the removed
//! credential), that the authenticator claimed user verification, and that
//! the signature verifies. A quorum approver's assertion likewise (the
//! proposal's digest with its proposing session), and that the approver
//! enrolled the credential it used. A stored assertion that fails any of these was
//! not made by the person's authenticator for that action.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_ledger::{
    AssertionPurpose, Ledger, PasskeyAssertionRecord, StoredPasskeyAssertion,
};
use countersign_webauthn::challenge::{
    DecisionChallenge, EnrolmentChallenge, ProposalDigest, ProposalFields, RemovalChallenge,
};
use countersign_webauthn::{
    Assertion, CosePublicKey, Credential, RelyingParty, client_data_challenge, verify_assertion,
};

use crate::error::CliError;

/// What the passkey part of `audit --verify` found.
#[derive(Debug, Default)]
pub(crate) struct PasskeyAudit {
    /// Assertions that verified.
    pub(crate) verified: usize,
    /// One line per assertion that did not.
    pub(crate) problems: Vec<String>,
}

/// Checks every stored assertion against `rp` (the installation's
/// `[passkeys]`; without one, stored assertions cannot be checked and each
/// is a problem).
pub(crate) async fn verify_passkeys(
    ledger: &Ledger,
    rp: Option<&RelyingParty>,
) -> Result<PasskeyAudit, CliError> {
    let mut audit = PasskeyAudit::default();
    for stored in ledger.passkey_assertions().await.map_err(CliError::error)? {
        let expected = expected_challenge(ledger, &stored).await?;
        audit.count(
            check(ledger, rp, &stored, expected, None).await?,
            format!(
                "passkey assertion {} ({} {})",
                stored.id,
                stored.assertion.purpose.as_str(),
                stored.assertion.subject
            ),
        );
    }
    for quorum in ledger
        .quorum_passkey_assertions()
        .await
        .map_err(CliError::error)?
    {
        let expected = quorum_challenge(ledger, &quorum.stored).await?;
        let stored = &quorum.stored;
        audit.count(
            check(ledger, rp, stored, expected, Some(&quorum.approver)).await?,
            format!(
                "quorum passkey assertion of {} (decision {})",
                quorum.approver, stored.assertion.subject
            ),
        );
    }
    Ok(audit)
}

impl PasskeyAudit {
    fn count(&mut self, checked: Result<(), String>, what: String) {
        match checked {
            Ok(()) => self.verified += 1,
            Err(problem) => self.problems.push(format!("{what}: {problem}")),
        }
    }
}

/// Checks `stored` against the challenge its subject derives
/// (`expected`) and, with `approver` (a quorum approver's assertion), that
/// this approver enrolled the credential.
async fn check(
    ledger: &Ledger,
    rp: Option<&RelyingParty>,
    stored: &StoredPasskeyAssertion,
    expected: Result<[u8; 32], String>,
    approver: Option<&str>,
) -> Result<Result<(), String>, CliError> {
    let a = &stored.assertion;
    let Some(rp) = rp else {
        return Ok(Err(
            "no [passkeys] section in config.toml names the relying party".into(),
        ));
    };
    let decode = |what: &str, text: &str| {
        URL_SAFE_NO_PAD
            .decode(text)
            .map_err(|_| format!("its {what} is not base64url"))
    };
    let Some(credential) = ledger
        .passkey(&a.credential_id)
        .await
        .map_err(CliError::error)?
    else {
        return Ok(Err(format!(
            "credential {} was never enrolled",
            a.credential_id
        )));
    };
    if let Some(approver) = approver
        && credential.enrolled_by != approver
    {
        return Ok(Err(format!(
            "credential {} was enrolled by {}, not by {approver}",
            a.credential_id, credential.enrolled_by
        )));
    }
    let expected = match expected {
        Ok(challenge) => challenge,
        Err(problem) => return Ok(Err(problem)),
    };
    let checked = (|| {
        let challenge_matches = decode("challenge", &a.challenge)? == expected;
        if !challenge_matches {
            return Err("its stored challenge is not the one its subject derives".into());
        }
        let public_key = CosePublicKey::from_cose(&decode("public key", &credential.public_key)?)
            .map_err(|e| format!("credential public key: {e}"))?;
        let credential = Credential {
            id: decode("credential id", &credential.credential_id)?,
            public_key,
            // The counter was checked when the signer accepted it.
            sign_count: 0,
        };
        let assertion = Assertion {
            credential_id: decode("credential id", &a.credential_id)?,
            authenticator_data: decode("authenticator data", &a.authenticator_data)?,
            client_data_json: decode("client data", &a.client_data_json)?,
            signature: decode("signature", &a.signature)?,
        };
        verify_assertion(&credential, &assertion, rp, &expected)
            .map(|_| ())
            .map_err(|e| e.to_string())
    })();
    Ok(checked)
}

/// The challenge the signer derived for a quorum approver's assertion:
/// from the proposal's digest with its proposing session (a quorum
/// approval always binds it) and the assertion's delivery.
async fn quorum_challenge(
    ledger: &Ledger,
    stored: &StoredPasskeyAssertion,
) -> Result<Result<[u8; 32], String>, CliError> {
    let a = &stored.assertion;
    let Some(random) = random_of(a) else {
        return Ok(Err("its random bytes are not 32 base64url bytes".into()));
    };
    let Some(record) = ledger.proposal(&a.subject).await.map_err(CliError::error)? else {
        return Ok(Err("it approved no recorded proposal".into()));
    };
    let p = &record.proposal;
    let digest = ProposalDigest::of(&ProposalFields {
        operation: &p.operation,
        arguments_sha256: &p.arguments_sha256,
        contract_revision: &p.contract_revision,
        policy_revision: &p.policy_revision,
        session: &p.session,
        delivery: &a.delivery,
    });
    Ok(Ok(DecisionChallenge::derive(random, &digest)))
}

/// The signer's 32 random bytes behind an assertion's challenge.
fn random_of(a: &PasskeyAssertionRecord) -> Option<[u8; 32]> {
    URL_SAFE_NO_PAD
        .decode(&a.challenge_random)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
}

/// The challenge the signer derived for what `stored` authorized,
/// recomputed from the ledger's facts and the stored random bytes.
async fn expected_challenge(
    ledger: &Ledger,
    stored: &StoredPasskeyAssertion,
) -> Result<Result<[u8; 32], String>, CliError> {
    let a = &stored.assertion;
    let Some(random) = random_of(a) else {
        return Ok(Err("its random bytes are not 32 base64url bytes".into()));
    };
    Ok(match a.purpose {
        AssertionPurpose::Decision => {
            let record = ledger.proposal(&a.subject).await.map_err(CliError::error)?;
            let Some((proposal, issuance)) =
                record.and_then(|r| r.issuance.clone().map(|i| (r.proposal, i)))
            else {
                return Ok(Err("it approved no recorded issuance".into()));
            };
            let digest = ProposalDigest::of(&ProposalFields {
                operation: &issuance.operation,
                arguments_sha256: &issuance.arguments_sha256,
                contract_revision: &issuance.contract_revision,
                policy_revision: &issuance.policy_revision,
                session: &issuance.session,
                delivery: &a.delivery,
            });
            if proposal.arguments_sha256 != issuance.arguments_sha256 {
                return Ok(Err("the issuance's arguments are not the proposal's".into()));
            }
            Ok(DecisionChallenge::derive(random, &digest))
        }
        AssertionPurpose::Enrol => {
            let enrolled = ledger.passkey(&a.subject).await.map_err(CliError::error)?;
            let creation = enrolled
                .and_then(|p| {
                    URL_SAFE_NO_PAD
                        .decode(&p.registration_client_data_json)
                        .ok()
                })
                .and_then(|json| client_data_challenge(&json).ok())
                .and_then(|c| <[u8; 32]>::try_from(c).ok());
            match creation {
                Some(creation) => Ok(EnrolmentChallenge::derive(random, &creation)),
                None => Err("the passkey it enrolled has no readable registration".into()),
            }
        }
        AssertionPurpose::Remove => match URL_SAFE_NO_PAD.decode(&a.subject) {
            Ok(id) => Ok(RemovalChallenge::derive(random, &id)),
            Err(_) => Err("the removed credential id is not base64url".into()),
        },
    })
}
