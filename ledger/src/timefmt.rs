//! Timestamps as the ledger stores them: RFC 3339 UTC, whole seconds, `Z`,
//! exactly `YYYY-MM-DDTHH:MM:SSZ`, so that text order is time order.
//!
//! Owns only formatting and strict parsing; no clock policy beyond `now()`.

use time::format_description::BorrowedFormatItem;
use time::macros::format_description;
use time::{OffsetDateTime, PrimitiveDateTime, UtcOffset};

use crate::error::LedgerError;

const FORMAT: &[BorrowedFormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");

/// The current time, truncated to whole seconds.
pub(crate) fn now() -> OffsetDateTime {
    truncate(OffsetDateTime::now_utc())
}

fn truncate(t: OffsetDateTime) -> OffsetDateTime {
    let t = t.to_offset(UtcOffset::UTC);
    t.replace_nanosecond(0).unwrap_or(t)
}

/// Format in UTC, dropping any fraction of a second.
pub(crate) fn format(t: OffsetDateTime) -> Result<String, LedgerError> {
    truncate(t)
        .format(FORMAT)
        .map_err(|e| LedgerError::Corrupt(format!("unformattable timestamp: {e}")))
}

/// Parse the exact stored form; anything else is corrupt data.
pub(crate) fn parse(s: &str) -> Result<OffsetDateTime, LedgerError> {
    PrimitiveDateTime::parse(s, FORMAT)
        .map(PrimitiveDateTime::assume_utc)
        .map_err(|_| LedgerError::Corrupt(format!("bad timestamp {s:?}")))
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
