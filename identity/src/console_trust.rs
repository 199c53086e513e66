//! Whether a CA certificate is one a person may be asked to trust as the
//! console's: a trusted root vouches for any name it is not constrained
//! from, so only a CA whose X.509 name constraints permit just the
//! console's DNS names and exclude every IP address qualifies
//! (`countersign console trust --import`).
//!
//! Owns: that check, over the certificate as x509-parser reads it.
//! Must not: trust, import or write anything.

use x509_parser::extensions::GeneralName;

use crate::console_pki::with_x509;

/// Why a certificate is not a console CA that may be imported. Nothing
/// was imported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsoleCaRefusal {
    /// Not one PEM X.509 certificate.
    #[error("it is not a PEM X.509 certificate")]
    Unreadable,
    /// Its basic constraints do not make it a CA.
    #[error("it is not a CA certificate")]
    NotACa,
    /// It has no name constraints: it could vouch for every site.
    #[error("it has no X.509 name constraints, so it could vouch for any site")]
    Unconstrained,
    /// Its constraints permit no name at all (so every name of a type they
    /// do not mention is permitted).
    #[error("its name constraints permit no DNS name of the console")]
    PermitsNoConsoleName,
    /// Its constraints permit a name (or a kind of name) that is not one of
    /// the console's: the permitted name, then the console's names.
    #[error("its name constraints permit {0}, which is not one of the console's names ({1})")]
    PermitsAnotherName(String, String),
    /// Its constraints do not exclude every IPv4 and IPv6 address.
    #[error("its name constraints do not exclude every IPv4 and IPv6 address")]
    AddressesNotExcluded,
}

/// Checks that `ca_pem` is a CA whose name constraints permit exactly DNS
/// names among `names` (the console's; compared without case, each
/// permitted name one of them, not a parent domain of one) and nothing
/// else, and exclude every IPv4 (`0.0.0.0/0`) and IPv6 (`::/0`) address.
pub fn check_console_ca(ca_pem: &str, names: &[String]) -> Result<(), ConsoleCaRefusal> {
    let checked = with_x509(ca_pem, |cert| {
        let is_ca = matches!(cert.basic_constraints(), Ok(Some(bc)) if bc.value.ca);
        if !is_ca {
            return Err(ConsoleCaRefusal::NotACa);
        }
        let Ok(Some(constraints)) = cert.name_constraints() else {
            return Err(ConsoleCaRefusal::Unconstrained);
        };
        let listed = names.join(", ");
        let permitted = constraints
            .value
            .permitted_subtrees
            .as_deref()
            .unwrap_or(&[]);
        if permitted.is_empty() {
            return Err(ConsoleCaRefusal::PermitsNoConsoleName);
        }
        for subtree in permitted {
            let GeneralName::DNSName(name) = subtree.base else {
                return Err(ConsoleCaRefusal::PermitsAnotherName(
                    format!("{:?}", subtree.base),
                    listed,
                ));
            };
            if !names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                return Err(ConsoleCaRefusal::PermitsAnotherName(
                    format!("{name:?}"),
                    listed,
                ));
            }
        }
        let excluded = constraints
            .value
            .excluded_subtrees
            .as_deref()
            .unwrap_or(&[]);
        let excludes = |len: usize| {
            excluded.iter().any(|s| {
                matches!(s.base, GeneralName::IPAddress(net)
                    if net.len() == len && net.iter().all(|b| *b == 0))
            })
        };
        // An address and its mask: 4 + 4 bytes for IPv4, 16 + 16 for IPv6;
        // a zero mask covers every address.
        if !(excludes(8) && excludes(32)) {
            return Err(ConsoleCaRefusal::AddressesNotExcluded);
        }
        Ok(())
    });
    checked.map_err(|_| ConsoleCaRefusal::Unreadable)?
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use rcgen::{
        BasicConstraints, CertificateParams, CidrSubnet, GeneralSubtree, IsCa, KeyPair,
        NameConstraints,
    };

    use super::*;
    use crate::console_pki::{CONSOLE_NAME, generate_console_ca};

    fn names() -> Vec<String> {
        vec![CONSOLE_NAME.to_owned()]
    }

    fn ca_with(constraints: Option<NameConstraints>, is_ca: bool) -> String {
        let mut params = CertificateParams::default();
        if is_ca {
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        params.name_constraints = constraints;
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().pem()
    }

    fn no_addresses() -> Vec<GeneralSubtree> {
        vec![
            GeneralSubtree::IpAddress(CidrSubnet::V4([0; 4], [0; 4])),
            GeneralSubtree::IpAddress(CidrSubnet::V6([0; 16], [0; 16])),
        ]
    }

    #[test]
    fn accepts_the_console_ca_this_installation_makes() {
        let ca = generate_console_ca(&names()).unwrap();
        assert_eq!(check_console_ca(ca.cert_pem(), &names()), Ok(()));
    }

    #[test]
    fn refuses_an_unconstrained_a_wider_or_an_address_permitting_ca() {
        let listed = CONSOLE_NAME.to_owned();
        for (pem, refusal) in [
            (ca_with(None, true), ConsoleCaRefusal::Unconstrained),
            (
                ca_with(
                    Some(NameConstraints {
                        permitted_subtrees: vec![GeneralSubtree::DnsName(CONSOLE_NAME.into())],
                        excluded_subtrees: no_addresses(),
                    }),
                    false,
                ),
                ConsoleCaRefusal::NotACa,
            ),
            (
                ca_with(
                    Some(NameConstraints {
                        permitted_subtrees: vec![
                            GeneralSubtree::DnsName(CONSOLE_NAME.into()),
                            GeneralSubtree::DnsName("bank.example".into()),
                        ],
                        excluded_subtrees: no_addresses(),
                    }),
                    true,
                ),
                ConsoleCaRefusal::PermitsAnotherName("\"bank.example\"".into(), listed.clone()),
            ),
            (
                // A parent domain permits every name below it.
                ca_with(
                    Some(NameConstraints {
                        permitted_subtrees: vec![GeneralSubtree::DnsName("localhost".into())],
                        excluded_subtrees: no_addresses(),
                    }),
                    true,
                ),
                ConsoleCaRefusal::PermitsAnotherName("\"localhost\"".into(), listed.clone()),
            ),
            (
                ca_with(
                    Some(NameConstraints {
                        permitted_subtrees: vec![GeneralSubtree::DnsName(CONSOLE_NAME.into())],
                        excluded_subtrees: vec![GeneralSubtree::IpAddress(CidrSubnet::V4(
                            [0; 4], [0; 4],
                        ))],
                    }),
                    true,
                ),
                ConsoleCaRefusal::AddressesNotExcluded,
            ),
            (
                ca_with(
                    Some(NameConstraints {
                        permitted_subtrees: vec![],
                        excluded_subtrees: no_addresses(),
                    }),
                    true,
                ),
                ConsoleCaRefusal::PermitsNoConsoleName,
            ),
            ("not a certificate".to_owned(), ConsoleCaRefusal::Unreadable),
        ] {
            assert_eq!(check_console_ca(&pem, &names()), Err(refusal));
        }
    }
}
