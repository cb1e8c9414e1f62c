//! Wall-clock timestamps in the formats the state files use (RFC 3339 UTC with
//! milliseconds, and the compact archive stamp). No time-zone database needed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before 1970).
pub(crate) fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_ms(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, ms) = civil(epoch_ms(t));
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// `YYYYMMDDTHHMMSSmmmZ` (archive directory names).
pub(crate) fn compact_stamp(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s, ms) = civil(epoch_ms(t));
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}{ms:03}Z")
}

/// Parses the RFC 3339 forms the engine and the Node tools write
/// (`…Z` with optional fraction). Returns `None` for anything else.
pub(crate) fn parse_rfc3339(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b't') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let rest = &s[19..];
    let (frac, tz) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            (&r[..digits], &r[digits..])
        }
        None => ("", rest),
    };
    if tz != "Z" && tz != "z" && tz != "+00:00" {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let ms = if frac.is_empty() {
        0
    } else {
        let f: String = frac.chars().chain("000".chars()).take(3).collect();
        f.parse::<u64>().ok()?
    };
    let days = days_from_civil(y as i64, mo as i64, d as i64);
    if days < 0 {
        return None;
    }
    let secs = days as u64 * 86_400 + h * 3600 + mi * 60 + sec;
    Some(UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms))
}

fn civil(ms: u64) -> (i64, u32, u32, u32, u32, u32, u32) {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
        (ms % 1000) as u32,
    )
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let t = UNIX_EPOCH + Duration::from_millis(1_764_573_296_123);
        let s = rfc3339_ms(t);
        assert_eq!(s, "2025-12-01T07:14:56.123Z");
        assert_eq!(parse_rfc3339(&s), Some(t));
        assert_eq!(compact_stamp(t), "20251201T071456123Z");
        assert_eq!(
            parse_rfc3339("2025-12-01T07:14:56Z"),
            Some(t - Duration::from_millis(123))
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }
}
