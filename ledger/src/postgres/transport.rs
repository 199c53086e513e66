//! Where the ledger's PostgreSQL password may go: over the server's Unix
//! socket, or over TCP with `sslmode=verify-full`, and nowhere else.
//!
//! A port is not an identity. PostgreSQL leaves its port free whenever it
//! restarts, and any local user can bind it then; the driver answers a
//! cleartext or MD5 password request from whoever holds the port, and
//! `sslmode=prefer` or `require` encrypts without authenticating the
//! server. So a password (from the URL, `PGPASSWORD` or a password file:
//! the options the driver will use) goes over TCP only when the server's
//! certificate and name are verified. A URL with no password (trust, peer
//! or a client certificate) may use TCP: it gives nothing away.
//!
//! This module owns the parsing of a ledger URL into connection options
//! and that rule; every PostgreSQL connection the ledger opens starts here.

use sqlx::ConnectOptions as _;
use sqlx::postgres::{PgConnectOptions, PgSslMode};

use crate::error::LedgerError;

/// The connection options of `url`, refused if they would send a password
/// over a TCP connection whose server is not verified. Nothing is
/// connected here.
pub(crate) fn connect_options(url: &str) -> Result<PgConnectOptions, LedgerError> {
    let options: PgConnectOptions = url
        .parse()
        .map_err(|_| LedgerError::Database("invalid postgres url".into()))?;
    check_password_transport(&options)?;
    Ok(options.application_name("countersign"))
}

/// [`LedgerError::PasswordWithoutVerifiedTls`] when `options` carry a
/// password and reach the server over TCP without `sslmode=verify-full`.
fn check_password_transport(options: &PgConnectOptions) -> Result<(), LedgerError> {
    let unix_socket = options.get_socket().is_some() || options.get_host().starts_with('/');
    // The URL the driver would connect with: its password is the one it
    // would send, wherever it came from.
    let has_password = options.to_url_lossy().password().is_some();
    if has_password && !unix_socket && !matches!(options.get_ssl_mode(), PgSslMode::VerifyFull) {
        return Err(LedgerError::PasswordWithoutVerifiedTls);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_over_tcp_needs_verify_full() {
        let refused = [
            "postgres://signer:s3cret@127.0.0.1/countersign",
            "postgres://signer:s3cret@127.0.0.1:5432/countersign?sslmode=prefer",
            "postgres://signer:s3cret@localhost/countersign?sslmode=require",
            "postgres://signer:s3cret@db.example/countersign?sslmode=verify-ca",
            "postgresql://signer:s3cret@[::1]/countersign?sslmode=disable",
            "postgres://signer@127.0.0.1/countersign?password=s3cret",
            "postgres:///countersign?host=127.0.0.1&user=signer&password=s3cret",
        ];
        for url in refused {
            assert_eq!(
                connect_options(url).err(),
                Some(LedgerError::PasswordWithoutVerifiedTls),
                "{url}"
            );
        }
    }

    #[test]
    fn no_password_tcp_and_the_unix_socket_and_verify_full_are_allowed() {
        let allowed = [
            "postgres://signer@127.0.0.1/countersign",
            "postgres://signer@db.example/countersign?sslmode=verify-full&sslcert=/c.pem&sslkey=/k.pem",
            "postgres://signer:s3cret@db.example/countersign?sslmode=verify-full",
            "postgres:///countersign?host=/run/postgresql",
            "postgres://signer:s3cret@%2Fvar%2Frun%2Fpostgresql/countersign",
            "postgres:///countersign?host=/var/run/postgresql&user=signer&password=s3cret",
        ];
        for url in allowed {
            assert!(connect_options(url).is_ok(), "{url}");
        }
    }

    #[test]
    fn the_refusal_says_what_is_refused_and_why_without_the_url() {
        let message = LedgerError::PasswordWithoutVerifiedTls.to_string();
        assert!(!message.contains("s3cret"));
        assert!(message.contains("sslmode=verify-full"), "{message}");
        assert!(message.contains("Unix socket"), "{message}");
    }
}
