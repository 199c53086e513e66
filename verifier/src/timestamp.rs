//! The one timestamp form used in claims and the ledger: `YYYY-MM-DDTHH:MM:SSZ`.
//!
//! Owns: strict parsing and formatting of that form (UTC, whole seconds).
//! Must not: accept offsets, fractions, lowercase separators, leap seconds
//! or anything else RFC 3339 would otherwise allow.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// Why a timestamp was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// Not exactly `YYYY-MM-DDTHH:MM:SSZ`, or not a real calendar date/time.
    #[error("timestamp is not of the form YYYY-MM-DDTHH:MM:SSZ")]
    Malformed,
    /// Has a fractional second or a year outside 0000..=9999, so cannot be written.
    #[error("timestamp has a fractional second or an out-of-range year")]
    Unrepresentable,
}

/// Parses exactly `YYYY-MM-DDTHH:MM:SSZ`.
pub fn parse(text: &str) -> Result<OffsetDateTime, TimestampError> {
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return Err(TimestampError::Malformed);
    }
    let num = |range: std::ops::Range<usize>| -> Result<u16, TimestampError> {
        b[range].iter().try_fold(0u16, |acc, &d| {
            if d.is_ascii_digit() {
                Ok(acc * 10 + u16::from(d - b'0'))
            } else {
                Err(TimestampError::Malformed)
            }
        })
    };
    let year = i32::from(num(0..4)?);
    let month = Month::try_from(u8::try_from(num(5..7)?).map_err(bad)?).map_err(bad)?;
    let day = u8::try_from(num(8..10)?).map_err(bad)?;
    let hour = u8::try_from(num(11..13)?).map_err(bad)?;
    let minute = u8::try_from(num(14..16)?).map_err(bad)?;
    let second = u8::try_from(num(17..19)?).map_err(bad)?;
    let date = Date::from_calendar_date(year, month, day).map_err(bad)?;
    let time = Time::from_hms(hour, minute, second).map_err(bad)?;
    Ok(PrimitiveDateTime::new(date, time).assume_utc())
}

fn bad<E>(_: E) -> TimestampError {
    TimestampError::Malformed
}

/// Formats as `YYYY-MM-DDTHH:MM:SSZ` (converted to UTC); refuses fractional seconds.
pub fn format(at: OffsetDateTime) -> Result<String, TimestampError> {
    let at = at.to_offset(UtcOffset::UTC);
    if at.nanosecond() != 0 || !(0..=9999).contains(&at.year()) {
        return Err(TimestampError::Unrepresentable);
    }
    Ok(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    ))
}

/// Formats `at` in the same form with any fraction of a second dropped: the
/// one form every head prints and returns for a time that is not a claim
/// (a completion, a credential's expiry).
pub fn format_whole_seconds(at: OffsetDateTime) -> Result<String, TimestampError> {
    format(at.replace_nanosecond(0).map_err(bad)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn whole_seconds_drops_the_fraction_and_converts_to_utc() {
        let t = parse("2026-03-01T12:34:56Z").unwrap() + time::Duration::nanoseconds(123_456_789);
        let t = t.to_offset(time::UtcOffset::from_hms(2, 0, 0).unwrap());
        assert_eq!(format_whole_seconds(t).unwrap(), "2026-03-01T12:34:56Z");
    }

    #[test]
    fn round_trips_the_exact_form() {
        let t = parse("2026-03-01T12:34:56Z").unwrap();
        assert_eq!(t.unix_timestamp(), 1_772_368_496);
        assert_eq!(format(t).unwrap(), "2026-03-01T12:34:56Z");
    }

    #[test]
    fn refuses_every_other_rfc3339_spelling() {
        for bad in [
            "2026-03-01T12:34:56+00:00",
            "2026-03-01T12:34:56.000Z",
            "2026-03-01t12:34:56Z",
            "2026-03-01T12:34:56z",
            "2026-03-01 12:34:56Z",
            "2026-02-30T12:34:56Z",
            "2026-03-01T24:00:00Z",
            "2026-03-01T23:59:60Z",
            "+2026-03-01T12:34:56Z",
            "2026-3-01T12:34:56Z",
            "2026-03-01T12:34:5Z",
            "",
        ] {
            assert_eq!(parse(bad), Err(TimestampError::Malformed), "{bad}");
        }
    }

    #[test]
    fn refuses_to_format_fractional_seconds() {
        let t = parse("2026-03-01T12:34:56Z").unwrap() + time::Duration::milliseconds(1);
        assert_eq!(format(t), Err(TimestampError::Unrepresentable));
    }

    #[test]
    fn formats_other_offsets_in_utc() {
        let t = parse("2026-03-01T12:34:56Z").unwrap();
        let local = t.to_offset(UtcOffset::from_hms(2, 0, 0).unwrap());
        assert_eq!(format(local).unwrap(), "2026-03-01T12:34:56Z");
    }
}
