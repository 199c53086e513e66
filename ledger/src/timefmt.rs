//! Timestamps as the ledger stores them: exactly the proof claims' form,
//! `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole seconds), so that text order is time
//! order. The format itself is `countersign_verifier::timestamp`'s; this
//! module only truncates to whole seconds and maps errors to the ledger's.

use countersign_verifier::timestamp;
use time::{OffsetDateTime, UtcOffset};

use crate::error::LedgerError;

/// The current time, truncated to whole seconds.
pub(crate) fn now() -> OffsetDateTime {
    stored(OffsetDateTime::now_utc())
}

/// `t` as the ledger stores it and reads it back: in UTC, whole seconds.
pub(crate) fn stored(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    t.replace_nanosecond(0).unwrap_or(t)
}

/// Format in UTC, dropping any fraction of a second.
pub(crate) fn format(t: OffsetDateTime) -> Result<String, LedgerError> {
    timestamp::format_whole_seconds(t)
        .map_err(|e| LedgerError::Corrupt(format!("unformattable timestamp: {e}")))
}

/// Parse the exact stored form; anything else is corrupt data.
pub(crate) fn parse(s: &str) -> Result<OffsetDateTime, LedgerError> {
    timestamp::parse(s).map_err(|_| LedgerError::Corrupt(format!("bad timestamp {s:?}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn round_trips_whole_seconds_in_utc() {
        let t = parse("2030-01-02T03:04:05Z").unwrap();
        assert_eq!(format(t).unwrap(), "2030-01-02T03:04:05Z");
        let with_fraction = t + time::Duration::milliseconds(900);
        assert_eq!(format(with_fraction).unwrap(), "2030-01-02T03:04:05Z");
    }

    #[test]
    fn refuses_other_forms() {
        for bad in [
            "2030-01-02T03:04:05+00:00",
            "2030-01-02T03:04:05.1Z",
            "2030-01-02 03:04:05Z",
            "2030-1-02T03:04:05Z",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
