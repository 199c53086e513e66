//! Every duration that bounds how long a proof, an intent or a shutdown
//! lasts, defined once. The signer, the registry, the verifier, the ledger
//! and every long-running process read them from here.
//!
//! This module owns the numbers only; it must not decide anything with
//! them (the policy, the verifier and the ledger do).

/// A proof's lifetime when neither the operation nor the operator sets
/// one, in seconds.
pub const DEFAULT_LIFETIME_SECS: u64 = 300;

/// The hard cap on any proof lifetime the signer issues and any operation
/// may request, in seconds.
pub const LIFETIME_CAP_SECS: u64 = 1800;

/// Default ceiling on a proof's lifetime (`exp - iat`) for a verifier:
/// [`LIFETIME_CAP_SECS`].
// The cast is exact: 1800 fits in an i64 (a `const` cannot call `try_from`).
pub const DEFAULT_MAX_LIFETIME: time::Duration = time::Duration::seconds(LIFETIME_CAP_SECS as i64);

/// Clock-skew tolerance applied to the verifier's lifetime ceiling only.
pub const LIFETIME_SKEW: time::Duration = time::Duration::seconds(60);

/// How long past an effect's own timeout its intent stays leased to the
/// head that recorded it: time to record the completion after the effect
/// ended or was killed.
pub const INTENT_LEASE_MARGIN: time::Duration = time::Duration::seconds(30);

/// How long a process lets work in flight (requests, executions) finish
/// after it was asked to stop.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lifetimes_keep_their_documented_values() {
        assert_eq!(DEFAULT_LIFETIME_SECS, 300);
        assert_eq!(LIFETIME_CAP_SECS, 1800);
        assert_eq!(DEFAULT_MAX_LIFETIME, time::Duration::seconds(1800));
        assert_eq!(LIFETIME_SKEW, time::Duration::seconds(60));
        assert_eq!(INTENT_LEASE_MARGIN, time::Duration::seconds(30));
        assert_eq!(SHUTDOWN_GRACE, std::time::Duration::from_secs(10));
    }

    #[test]
    fn the_default_lifetime_is_within_the_cap() {
        assert!((1..=LIFETIME_CAP_SECS).contains(&DEFAULT_LIFETIME_SECS));
    }
}
