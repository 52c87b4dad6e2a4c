//! IMF-fixdate (RFC 9110 §5.6.7), the format of the `Date` header.

use std::time::{SystemTime, UNIX_EPOCH};

const DAY_NAMES: [&[u8; 3]; 7] = [b"Sun", b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat"];
const MONTH_NAMES: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z: the range a four-digit year can show.
const MIN_SECS: i64 = -62_167_219_200;
const MAX_SECS: i64 = 253_402_300_799;

/// Formats `t` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT` (always 29 bytes).
///
/// Sub-second precision is dropped (rounding toward the past). Times outside years 0000 to
/// 9999 are clamped to that range.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_secs(784_111_777);
/// assert_eq!(&volt_proto::http_date(t), b"Sun, 06 Nov 1994 08:49:37 GMT");
/// ```
pub fn http_date(t: SystemTime) -> [u8; 29] {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => {
            let d = before.duration();
            let whole = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            // Floor: 0.5 s before the epoch is in second -1, not second 0.
            -whole - i64::from(d.subsec_nanos() > 0)
        }
    }
    .clamp(MIN_SECS, MAX_SECS);

    let days = secs.div_euclid(86_400);
    let second_of_day = secs.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    // 1970-01-01 was a Thursday.
    let weekday = (days + 4).rem_euclid(7) as usize;

    let mut out = *b"Thu, 01 Jan 1970 00:00:00 GMT";
    out[0..3].copy_from_slice(DAY_NAMES[weekday]);
    put2(&mut out[5..7], day);
    out[8..11].copy_from_slice(MONTH_NAMES[month as usize - 1]);
    put2(&mut out[12..14], year / 100);
    put2(&mut out[14..16], year % 100);
    put2(&mut out[17..19], (second_of_day / 3600) as u32);
    put2(&mut out[20..22], (second_of_day / 60 % 60) as u32);
    put2(&mut out[23..25], (second_of_day % 60) as u32);
    out
}

fn put2(dst: &mut [u8], n: u32) {
    dst[0] = b'0' + (n / 10) as u8;
    dst[1] = b'0' + (n % 10) as u8;
}

/// Days since 1970-01-01 to (year, month 1-12, day 1-31) in the proleptic Gregorian calendar.
///
/// Counts in 400-year eras (146 097 days each, the Gregorian cycle) with years starting on
/// 1 March, so the leap day falls at the very end of a year and month lengths repeat in a
/// 153-day pattern (Mar-Jul, Aug-Dec). This is Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (u32, u32, u32) {
    // Shift the epoch to 0000-03-01.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097); // [0, 146096]
                                            // Subtract the leap days so far (every 4 years, except every 100, except every 400).
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365; // [0, 399]
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100); // [0, 365]
    let month_from_march = (5 * day_of_year + 2) / 153; // [0, 11]
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1; // [1, 31]
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year as u32, month as u32, day as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Days from civil, the inverse, written naively by counting: checks every day of
    /// several centuries against it.
    #[test]
    fn civil_from_days_walks_the_calendar() {
        let is_leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let month_len = |y: i64, m: u32| match m {
            2 if is_leap(y) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        let (mut y, mut m, mut d) = (1600i64, 1u32, 1u32);
        // 1600-01-01 is 135 140 days before the epoch.
        for days in -135_140..200_000 {
            assert_eq!(civil_from_days(days), (y as u32, m, d), "day {days}");
            d += 1;
            if d > month_len(y, m) {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }
}
