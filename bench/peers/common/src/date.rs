//! The `Date` header value, an IMF-fixdate (RFC 9110 §5.6.7), cached per thread and re-rendered
//! when the second changes, as TechEmpower allows.

use std::cell::RefCell;
use std::time::{SystemTime, UNIX_EPOCH};

/// Length of an IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub const LEN: usize = 29;

const DAYS: [&[u8; 3]; 7] = [b"Thu", b"Fri", b"Sat", b"Sun", b"Mon", b"Tue", b"Wed"];
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Renders `secs` since the Unix epoch as an IMF-fixdate.
pub fn render(secs: u64) -> [u8; LEN] {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (hour, min, sec) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let weekday = DAYS[(days % 7) as usize]; // 1970-01-01 was a Thursday.
    let (year, month, day) = civil_from_days(days as i64);

    let mut out = [0u8; LEN];
    out[0..3].copy_from_slice(weekday);
    out[3..5].copy_from_slice(b", ");
    two_digits(&mut out[5..7], day as u64);
    out[7] = b' ';
    out[8..11].copy_from_slice(MONTHS[(month - 1) as usize]);
    out[11] = b' ';
    let y = year as u64;
    two_digits(&mut out[12..14], y / 100);
    two_digits(&mut out[14..16], y % 100);
    out[16] = b' ';
    two_digits(&mut out[17..19], hour);
    out[19] = b':';
    two_digits(&mut out[20..22], min);
    out[22] = b':';
    two_digits(&mut out[23..25], sec);
    out[25..29].copy_from_slice(b" GMT");
    out
}

fn two_digits(dst: &mut [u8], n: u64) {
    dst[0] = b'0' + (n / 10 % 10) as u8;
    dst[1] = b'0' + (n % 10) as u8;
}

/// Days since 1970-01-01 to (year, month 1..=12, day 1..=31) in the proleptic Gregorian calendar.
/// The calendar repeats every 400 years (146,097 days); counting eras from 0000-03-01 puts the leap
/// day at the end of each year, so the month lengths within a year follow a simple linear formula.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468; // shift the epoch to 0000-03-01
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

struct Cached {
    secs: u64,
    text: [u8; LEN],
}

thread_local! {
    static CACHE: RefCell<Cached> = const { RefCell::new(Cached { secs: u64::MAX, text: [0; LEN] }) };
}

/// Calls `f` with the current date, rendered at most once per second on this thread.
pub fn with_now<R>(f: impl FnOnce(&[u8; LEN]) -> R) -> R {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.secs != secs {
            cache.secs = secs;
            cache.text = render(secs);
        }
        f(&cache.text)
    })
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn renders_known_instants() {
        assert_eq!(&render(0), b"Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(&render(784_111_777), b"Sun, 06 Nov 1994 08:49:37 GMT");
        // Leap day, and the last second of a century year that is a leap year.
        assert_eq!(&render(951_782_400), b"Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(&render(978_307_199), b"Sun, 31 Dec 2000 23:59:59 GMT");
        assert_eq!(&render(1_763_769_600), b"Sat, 22 Nov 2025 00:00:00 GMT");
    }
}
