//! When a failed attempt is tried again: exponential backoff with jitter,
//! capped, and a last attempt after which the delivery is failed.

use countersign_identity::RetryConfig;

/// The delay before attempt `attempts + 1`, given `attempts` made so far
/// (at least one), in milliseconds: `initial * 2^(attempts-1)`, at most
/// `max`, scaled by `jitter` (0.0..1.0) into its upper half, so retries of
/// many deliveries spread out and none comes sooner than half the step.
/// `None` once `attempts` reached the configured maximum.
pub(crate) fn next_delay_ms(retry: &RetryConfig, attempts: u32, jitter: f64) -> Option<u64> {
    if attempts >= retry.max_attempts {
        return None;
    }
    let doublings = attempts.saturating_sub(1).min(40);
    let step = retry
        .initial_ms
        .saturating_mul(1u64 << doublings)
        .min(retry.max_ms);
    let jitter = jitter.clamp(0.0, 1.0);
    // step/2 + step/2 * jitter, in integers.
    let half = step / 2;
    let extra = (half as f64 * jitter) as u64;
    Some(step - half + extra)
}

/// A jitter in 0.0..1.0 from the system's randomness (0.5 if none).
pub(crate) fn jitter() -> f64 {
    let mut byte = [0u8; 2];
    match getrandom::fill(&mut byte) {
        Ok(()) => f64::from(u16::from_le_bytes(byte)) / f64::from(u16::MAX),
        Err(_) => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: RetryConfig = RetryConfig {
        initial_ms: 1000,
        max_ms: 10_000,
        max_attempts: 6,
    };

    #[test]
    fn delays_double_within_their_jitter_up_to_the_cap() {
        let low: Vec<_> = (1..6).map(|n| next_delay_ms(&RETRY, n, 0.0)).collect();
        let high: Vec<_> = (1..6).map(|n| next_delay_ms(&RETRY, n, 1.0)).collect();
        assert_eq!(
            low,
            [Some(500), Some(1000), Some(2000), Some(4000), Some(5000)]
        );
        assert_eq!(
            high,
            [Some(1000), Some(2000), Some(4000), Some(8000), Some(10_000)]
        );
    }

    #[test]
    fn no_attempt_follows_the_last() {
        assert_eq!(next_delay_ms(&RETRY, 6, 0.5), None);
        assert_eq!(next_delay_ms(&RETRY, 60, 0.5), None);
    }
}
