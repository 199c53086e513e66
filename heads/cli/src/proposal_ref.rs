//! A proposal as a person names it on the command line: its whole id, or
//! the start of one (`prop_3fa2`, or `3fa2`: at least four hex digits),
//! which stands for the one proposal among the signer's newest whose id
//! starts so. Two or more are named with their operations and statuses,
//! so the person types more of the id; none is said as such. Nothing is
//! read or contacted to parse one.

use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ListProposalsRequest, ProposalStatus, ProposalView};
use countersign_verifier::ProposalId;
use tonic::transport::Channel;

use crate::error::CliError;

/// Every id starts so.
const PREFIX: &str = "prop_";
/// The hex digits of a whole id.
const ID_DIGITS: usize = 32;
/// The fewest hex digits that may stand for an id.
const FEWEST_DIGITS: usize = 4;
/// How many of the newest proposals a prefix is looked for among (the
/// signer's largest list).
const SEARCHED: u32 = 500;

/// A proposal named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposalRef {
    /// Its whole id.
    Id(ProposalId),
    /// The start of its id, `prop_` included.
    Prefix(String),
}

impl ProposalRef {
    /// `text` as a whole id or the start of one; a usage error otherwise.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Ok(id) = ProposalId::parse(text) {
            return Ok(Self::Id(id));
        }
        let digits = text.strip_prefix(PREFIX).unwrap_or(text);
        let hex = digits
            .chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
        if hex && (FEWEST_DIGITS..ID_DIGITS).contains(&digits.len()) {
            return Ok(Self::Prefix(format!("{PREFIX}{digits}")));
        }
        if let Ok(id) = ProposalId::parse(format!("{PREFIX}{digits}")) {
            return Ok(Self::Id(id));
        }
        Err(format!(
            "expected a proposal id (prop_ followed by 32 lowercase hex digits) or its start (at least {FEWEST_DIGITS} of those digits)"
        ))
    }

    /// The proposal this names: a whole id as it is; a prefix as the one
    /// of the signer's newest proposals (visible to `signer`'s caller)
    /// whose id starts so.
    pub async fn resolve(
        &self,
        signer: &mut SignerClient<Channel>,
    ) -> Result<ProposalId, CliError> {
        let prefix = match self {
            Self::Id(id) => return Ok(id.clone()),
            Self::Prefix(prefix) => prefix,
        };
        let listed = signer
            .list_proposals(ListProposalsRequest {
                status: ProposalStatus::Unspecified.into(),
                limit: SEARCHED,
            })
            .await
            .map_err(|status| {
                CliError::Error(format!(
                    "cannot look up the proposal {prefix}…: {}",
                    status.message()
                ))
            })?
            .into_inner()
            .proposals;
        pick(prefix, &listed)
    }
}

/// The one of `listed` whose id starts with `prefix`, or why not.
fn pick(prefix: &str, listed: &[ProposalView]) -> Result<ProposalId, CliError> {
    let found: Vec<_> = listed.iter().filter(|p| p.id.starts_with(prefix)).collect();
    match found.as_slice() {
        [one] => ProposalId::parse(one.id.as_str())
            .map_err(|e| CliError::Error(format!("the signer listed {}: {e}", one.id))),
        [] => Err(CliError::Error(format!(
            "no proposal among the newest {SEARCHED} has an id starting with {prefix}; give its whole id (`countersign list`)"
        ))),
        many => {
            let named: Vec<String> = many
                .iter()
                .map(|p| {
                    let status = ProposalStatus::try_from(p.status).map_or("unknown", |s| s.name());
                    format!("{} ({}, {status})", p.id, p.operation)
                })
                .collect();
            Err(CliError::Error(format!(
                "{prefix} starts {} proposals' ids: {}; give more of the id",
                many.len(),
                named.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_whole_id_a_prefix_with_or_without_prop_and_nothing_shorter() {
        let whole = "prop_0123456789abcdef0123456789abcdef";
        for text in [whole, &whole[PREFIX.len()..]] {
            assert_eq!(
                ProposalRef::parse(text).unwrap(),
                ProposalRef::Id(ProposalId::parse(whole).unwrap())
            );
        }
        for (text, prefix) in [
            ("prop_3fa2", "prop_3fa2"),
            ("3fa2", "prop_3fa2"),
            (
                "0123456789abcdef0123456789abcde",
                "prop_0123456789abcdef0123456789abcde",
            ),
        ] {
            assert_eq!(
                ProposalRef::parse(text).unwrap(),
                ProposalRef::Prefix(prefix.into()),
                "{text}"
            );
        }
        for refused in [
            "",
            "prop_",
            "3fa",
            "prop_3FA2",
            "prop_3fag",
            "x3fa2",
            "prop_3fa2 ",
        ] {
            assert!(ProposalRef::parse(refused).is_err(), "{refused:?}");
        }
    }

    fn view(id: &str, operation: &str, status: ProposalStatus) -> ProposalView {
        ProposalView {
            id: id.into(),
            operation: operation.into(),
            status: status.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_prefix_names_exactly_one_proposal_or_says_which_it_could_be() {
        let a = "prop_3fa20000000000000000000000000001";
        let b = "prop_3fa20000000000000000000000000002";
        let c = "prop_77770000000000000000000000000003";
        let listed = [
            view(a, "schedule.create", ProposalStatus::Pending),
            view(b, "agent.shell", ProposalStatus::Applied),
            view(c, "schedule.delete", ProposalStatus::Denied),
        ];
        assert_eq!(pick("prop_7777", &listed).unwrap().as_str(), c);
        assert_eq!(
            pick("prop_3fa2000000000000000000000000000", &listed)
                .unwrap_err()
                .to_string(),
            format!(
                "prop_3fa2000000000000000000000000000 starts 2 proposals' ids: {a} (schedule.create, pending), {b} (agent.shell, applied); give more of the id"
            )
        );
        assert_eq!(
            pick("prop_3fa20000000000000000000000000002", &listed)
                .unwrap()
                .as_str(),
            b
        );
        assert_eq!(
            pick("prop_0000", &listed).unwrap_err().to_string(),
            "no proposal among the newest 500 has an id starting with prop_0000; give its whole id (`countersign list`)"
        );
    }
}
