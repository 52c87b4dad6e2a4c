//! The `Set-Cookie` header field as RFC 6265bis §5.6 reads it: the name-value pair and the
//! attributes, each checked and kept or dropped on its own; and the cookie-date (§5.1.1), the
//! lenient date grammar `Expires` is read with. No storage here: [`super::cookie`] decides
//! what is kept.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most bytes of a cookie's name and value together (RFC 6265bis §5.6 step 6: larger
/// cookies are ignored).
pub(super) const MAX_COOKIE_SIZE: usize = 4096;

/// The most bytes of one attribute's value (§5.6 step 8: a longer attribute is ignored).
const MAX_ATTRIBUTE: usize = 1024;

/// The furthest in the future a cookie may expire: 400 days (§5.6.1, §5.6.2).
pub(super) const MAX_LIFETIME: Duration = Duration::from_secs(400 * 24 * 60 * 60);

/// The `SameSite` attribute (§5.6.7). Kept for inspection only: it restricts cross-site
/// requests of a browser, which a client without sites has no use for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    Strict,
    Lax,
    None,
}

/// A `Set-Cookie` field, read.
#[derive(Debug, PartialEq)]
pub(super) struct SetCookie {
    pub(super) name: String,
    pub(super) value: String,
    /// When it stops being sent: `Max-Age` if it has one (winning over `Expires`), else
    /// `Expires`, each at most [`MAX_LIFETIME`] ahead; `None`: when the client ends.
    pub(super) expires: Option<SystemTime>,
    /// `Domain` without its leading dot, in lower case.
    pub(super) domain: Option<String>,
    /// `Path`, if it starts with `/` (else the default path is the jar's to work out).
    pub(super) path: Option<String>,
    pub(super) secure: bool,
    pub(super) http_only: bool,
    pub(super) same_site: Option<SameSite>,
}

impl SetCookie {
    /// Reads one `Set-Cookie` value received at `now`; `None` if the cookie is to be ignored
    /// (§5.6: control characters, no name and no value, name and value over
    /// [`MAX_COOKIE_SIZE`]).
    pub(super) fn parse(line: &[u8], now: SystemTime) -> Option<SetCookie> {
        let line = std::str::from_utf8(line).ok()?;
        // §5.6 step 1: control characters other than HTAB fail the whole field.
        if line.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f) {
            return None;
        }
        let (pair, attributes) = line.split_once(';').unwrap_or((line, ""));
        // No `=`: the name is empty and the whole pair is the value (§5.6 step 3).
        let (name, value) = pair.split_once('=').unwrap_or(("", pair));
        let (name, value) = (trim(name), trim(value));
        if (name.is_empty() && value.is_empty()) || name.len() + value.len() > MAX_COOKIE_SIZE {
            return None;
        }
        let mut cookie = SetCookie {
            name: name.to_owned(),
            value: value.to_owned(),
            expires: None,
            domain: None,
            path: None,
            secure: false,
            http_only: false,
            same_site: None,
        };
        let (mut max_age, mut expires) = (None, None);
        // When an attribute comes twice, the last one counts (§5.7 step 2 and on).
        for attribute in attributes.split(';') {
            let (key, value) = attribute.split_once('=').unwrap_or((attribute, ""));
            let (key, value) = (trim(key), trim(value));
            if value.len() > MAX_ATTRIBUTE {
                continue;
            }
            match key.to_ascii_lowercase().as_str() {
                "expires" => expires = cookie_date(value).or(expires),
                "max-age" => max_age = parse_max_age(value, now).or(max_age),
                // An empty `Domain` is ignored (§5.6.3).
                "domain" if !value.is_empty() => {
                    let domain = value.strip_prefix('.').unwrap_or(value);
                    cookie.domain = Some(domain.to_ascii_lowercase());
                }
                "path" => cookie.path = value.starts_with('/').then(|| value.to_owned()),
                "secure" => cookie.secure = true,
                "httponly" => cookie.http_only = true,
                "samesite" => {
                    cookie.same_site = match value.to_ascii_lowercase().as_str() {
                        "strict" => Some(SameSite::Strict),
                        "lax" => Some(SameSite::Lax),
                        "none" => Some(SameSite::None),
                        _ => None,
                    }
                }
                _ => {}
            }
        }
        let latest = now.checked_add(MAX_LIFETIME);
        cookie.expires = max_age.or(expires).map(|at| match latest {
            Some(latest) if at > latest => latest,
            _ => at,
        });
        Some(cookie)
    }
}

/// Trims the whitespace RFC 6265bis strips around names, values and attributes (SP, HTAB).
fn trim(s: &str) -> &str {
    s.trim_matches([' ', '\t'])
}

/// `Max-Age=delta` (§5.6.2): seconds from `now`; zero or less is the earliest time there is
/// (the cookie is removed). `None` for a value that is not `-`? digits.
fn parse_max_age(value: &str, now: SystemTime) -> Option<SystemTime> {
    let digits = value.strip_prefix('-').unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if value.starts_with('-') || digits.bytes().all(|b| b == b'0') {
        return Some(UNIX_EPOCH);
    }
    // Too many digits for a u64 is far past the 400-day cap anyway.
    let seconds = digits.parse::<u64>().unwrap_or(u64::MAX);
    let latest = MAX_LIFETIME.as_secs();
    Some(now + Duration::from_secs(seconds.min(latest)))
}

/// A cookie-date (RFC 6265bis §5.1.1): tokens in any order, the first time, day of month,
/// month and year found; two-digit years as RFC 6265 says (70–99: 19xx, 0–69: 20xx).
/// `None` if a part is missing or out of range, or the day is not in that month.
pub(super) fn cookie_date(s: &str) -> Option<SystemTime> {
    let delimiter =
        |c: char| c == '\t' || matches!(c, ' '..='/' | ';'..='@' | '['..='`' | '{'..='~');
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for token in s.split(delimiter).filter(|t| !t.is_empty()) {
        if time.is_none() {
            if let Some(t) = hms(token) {
                time = Some(t);
                continue;
            }
        }
        if day.is_none() {
            if let Some(d) = digits(token, 1, 2) {
                day = Some(d);
                continue;
            }
        }
        if month.is_none() {
            let months = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ];
            let prefix = token.get(..3).map(str::to_ascii_lowercase);
            if let Some(m) = months.iter().position(|m| prefix.as_deref() == Some(*m)) {
                month = Some(m as u32 + 1);
                continue;
            }
        }
        if year.is_none() {
            if let Some(y) = digits(token, 2, 4) {
                year = Some(y);
            }
        }
    }
    let ((hour, minute, second), day, month, year) = (time?, day?, month?, year?);
    let year = match year {
        70..=99 => year + 1900,
        0..=69 => year + 2000,
        _ => year,
    };
    let days_in_month = match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=days_in_month).contains(&day) || year < 1601 || hour > 23 || minute > 59 {
        return None;
    }
    if second > 59 {
        return None;
    }
    let days = days_from_civil(i64::from(year), month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    // A date before 1970 is in the past all the same: the epoch stands for it.
    Some(UNIX_EPOCH + Duration::from_secs(u64::try_from(seconds).unwrap_or(0)))
}

/// `min` to `max` digits, then nothing or a non-digit and anything (the cookie-date grammar's
/// `*OCTET` tails).
fn digits(token: &str, min: usize, max: usize) -> Option<u32> {
    let n = token.bytes().take_while(u8::is_ascii_digit).count();
    (min..=max).contains(&n).then(|| token[..n].parse().ok())?
}

/// `hh:mm:ss`, each part one or two digits, then anything that starts with a non-digit.
fn hms(token: &str) -> Option<(u32, u32, u32)> {
    let mut parts = token.splitn(3, ':');
    let (h, m, s) = (parts.next()?, parts.next()?, parts.next()?);
    let whole = |p: &str| (1..=2).contains(&p.len()).then(|| p.parse().ok()).flatten();
    Some((whole(h)?, whole(m)?, digits(s, 1, 2)?))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from((month + 9) % 12);
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(unix: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix)
    }

    #[test]
    fn cookie_dates_in_the_forms_servers_send() {
        // 2015-10-21 07:28:00 UTC
        let want = Some(at(1_445_412_480));
        for s in [
            "Wed, 21 Oct 2015 07:28:00 GMT",
            "Wednesday, 21-Oct-15 07:28:00 GMT",
            "Wed Oct 21 07:28:00 2015",
            "21 October 2015 7:28:0",
            "2015 Oct 21 07:28:00z",
        ] {
            assert_eq!(cookie_date(s), want, "{s}");
        }
        assert_eq!(cookie_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(at(0)));
        assert_eq!(
            cookie_date("Tue, 29 Feb 2000 12:00:00 GMT"),
            Some(at(951_825_600))
        );
        for bad in [
            "Wed, 30 Feb 2015 07:28:00 GMT",
            "Wed, 21 Oct 2015 24:00:00 GMT",
            "Wed, 21 Oct 1600 07:28:00 GMT",
            "Wed, 21 Oct 2015",
            "21 Foo 2015 07:28:00",
            "",
        ] {
            assert_eq!(cookie_date(bad), None, "{bad}");
        }
        // Before 1970: the epoch, as expired as it.
        assert_eq!(cookie_date("Sat, 01 Jan 1955 00:00:00 GMT"), Some(at(0)));
    }

    #[test]
    fn attributes_are_read_case_insensitively_and_the_last_counts() {
        let now = at(1_000_000);
        let line = b"id=a3f; Path=/docs; DOMAIN=.Example.COM; secure; HttpOnly; SameSite=lax; \
                     path=/api; Unknown=1";
        let c = SetCookie::parse(line, now).unwrap();
        assert_eq!((c.name.as_str(), c.value.as_str()), ("id", "a3f"));
        assert_eq!(c.path.as_deref(), Some("/api"));
        assert_eq!(c.domain.as_deref(), Some("example.com"));
        assert!(c.secure && c.http_only);
        assert_eq!(c.same_site, Some(SameSite::Lax));
        assert_eq!(c.expires, None);
        // A relative or empty path is the default path's to fill; an empty Domain is ignored.
        let c = SetCookie::parse(b"a=b; Path=docs; Domain=", now).unwrap();
        assert_eq!((c.path, c.domain), (None, None));
        // No `=`: an empty name; spaces trimmed.
        let c = SetCookie::parse(b"  lone value  ", now).unwrap();
        assert_eq!((c.name.as_str(), c.value.as_str()), ("", "lone value"));
        assert_eq!(SetCookie::parse(b"=", now), None);
        assert_eq!(SetCookie::parse(b"a=b\x01c", now), None);
    }

    #[test]
    fn max_age_wins_over_expires_and_both_are_capped_at_400_days() {
        let now = at(1_445_412_480);
        let parse = |line: &str| SetCookie::parse(line.as_bytes(), now).unwrap().expires;
        let date = "Wed, 21 Oct 2015 08:28:00 GMT";
        assert_eq!(
            parse(&format!("a=b; Expires={date}")),
            Some(at(1_445_416_080))
        );
        assert_eq!(
            parse(&format!("a=b; Max-Age=60; Expires={date}")),
            Some(at(1_445_412_540))
        );
        assert_eq!(
            parse(&format!("a=b; Expires={date}; Max-Age=0")),
            Some(UNIX_EPOCH)
        );
        assert_eq!(parse("a=b; Max-Age=-5"), Some(UNIX_EPOCH));
        // A malformed Max-Age is ignored, and Expires stands.
        assert_eq!(
            parse(&format!("a=b; Max-Age=1x; Expires={date}")),
            Some(at(1_445_416_080))
        );
        let cap = Some(now + MAX_LIFETIME);
        assert_eq!(parse("a=b; Max-Age=999999999999999999999999"), cap);
        assert_eq!(parse("a=b; Expires=Fri, 01 Jan 9999 00:00:00 GMT"), cap);
    }

    #[test]
    fn oversized_cookies_and_attributes_are_dropped() {
        let now = at(0);
        let name = "n".repeat(96);
        let fits = format!("{name}={}", "v".repeat(MAX_COOKIE_SIZE - 96));
        assert!(SetCookie::parse(fits.as_bytes(), now).is_some());
        let over = format!("{fits}v");
        assert_eq!(SetCookie::parse(over.as_bytes(), now), None);
        let long_path = format!("a=b; Path=/{}", "p".repeat(MAX_ATTRIBUTE));
        let c = SetCookie::parse(long_path.as_bytes(), now).unwrap();
        assert_eq!(c.path, None);
    }
}
