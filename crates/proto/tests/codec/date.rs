//! IMF-fixdate against known timestamps.

use std::time::{Duration, UNIX_EPOCH};

use volt_proto::http_date;

fn at(secs: i64) -> String {
    let t = if secs >= 0 {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    } else {
        UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
    };
    String::from_utf8(http_date(t).to_vec()).unwrap()
}

#[test]
fn known_dates() {
    let cases = [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (951_868_799, "Tue, 29 Feb 2000 23:59:59 GMT"),
        (4_107_542_399, "Sun, 28 Feb 2100 23:59:59 GMT"),
        (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"),
        (1_709_208_000, "Thu, 29 Feb 2024 12:00:00 GMT"),
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (-2_203_891_200, "Thu, 01 Mar 1900 00:00:00 GMT"),
        (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
    ];
    for (secs, want) in cases {
        assert_eq!(at(secs), want, "{secs}");
    }
}

#[test]
fn sub_seconds_round_toward_the_past() {
    let after = UNIX_EPOCH + Duration::from_millis(1_999);
    assert_eq!(&http_date(after), b"Thu, 01 Jan 1970 00:00:01 GMT");
    let before = UNIX_EPOCH - Duration::from_millis(500);
    assert_eq!(&http_date(before), b"Wed, 31 Dec 1969 23:59:59 GMT");
}

#[test]
fn out_of_range_years_clamp() {
    assert_eq!(at(253_402_300_800), "Fri, 31 Dec 9999 23:59:59 GMT");
    assert_eq!(at(i64::MAX / 4), "Fri, 31 Dec 9999 23:59:59 GMT");
    assert_eq!(at(-62_167_219_201), "Sat, 01 Jan 0000 00:00:00 GMT");
}
