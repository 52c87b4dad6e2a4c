//! Tests of volt's JSON writer: against serde_json, byte for byte.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::*;

/// Writes `value` both ways and checks the bytes are the same.
fn same_as_serde_json<T: Serialize + ?Sized>(value: &T) {
    let mut ours = BytesMut::new();
    write(&mut ours, value).expect("ours writes it");
    let theirs = serde_json::to_vec(value).expect("serde_json writes it");
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
}

#[derive(Serialize)]
enum Kind {
    Unit,
    Newtype(u8),
    Tuple(i32, String),
    Struct { a: Option<bool>, b: Vec<f32> },
}

#[derive(Serialize)]
struct Unit;

#[derive(Serialize)]
struct Wrapper(&'static str);

#[derive(Serialize)]
struct Pair(u8, char);

#[derive(Serialize)]
struct Everything {
    id: u64,
    name: String,
    score: f64,
    tags: Vec<&'static str>,
    kinds: Vec<Kind>,
    unit: Unit,
    wrapper: Wrapper,
    pair: Pair,
    nothing: Option<u8>,
    empty: Vec<u8>,
    empty_map: BTreeMap<String, u8>,
    #[serde(with = "serde_bytes_as_bytes")]
    raw: Vec<u8>,
    int_keys: BTreeMap<i64, &'static str>,
    bool_keys: BTreeMap<bool, u8>,
    char_keys: BTreeMap<char, u8>,
    float_values: BTreeMap<u8, f32>,
    float_keys: FloatKeys,
    big: (i128, u128),
    shown: Shown,
}

/// A field serialized with `serialize_bytes`.
mod serde_bytes_as_bytes {
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(v)
    }
}

/// A map with float keys (no std map has them).
struct FloatKeys(&'static [f64]);

impl Serialize for FloatKeys {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        for (i, key) in self.0.iter().enumerate() {
            map.serialize_entry(key, &i)?;
        }
        map.end()
    }
}

/// A value serialized with `collect_str`.
struct Shown;

impl Serialize for Shown {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}\"{}\n", "quote", 7))
    }
}

#[test]
fn writes_what_serde_json_writes() {
    same_as_serde_json(&Everything {
        id: u64::MAX,
        name: "Zoë \"the\" \\ coder\u{1}\u{1f}\u{7f}".into(),
        score: -0.0,
        tags: vec!["a", "", "日本語"],
        kinds: vec![
            Kind::Unit,
            Kind::Newtype(7),
            Kind::Tuple(-3, "x".into()),
            Kind::Struct {
                a: Some(true),
                b: vec![1.5, f32::NAN, 1e-7],
            },
            Kind::Struct { a: None, b: vec![] },
        ],
        unit: Unit,
        wrapper: Wrapper("w"),
        pair: Pair(1, '"'),
        nothing: None,
        empty: vec![],
        empty_map: BTreeMap::new(),
        raw: vec![0, 1, 255],
        int_keys: [(-1, "minus"), (0, "zero"), (i64::MAX, "max")].into(),
        bool_keys: [(false, 0), (true, 1)].into(),
        char_keys: [('k', 1), ('"', 2)].into(),
        float_values: [(1, 0.1), (2, f32::INFINITY)].into(),
        float_keys: FloatKeys(&[1.5, -0.0, 1e300]),
        big: (i128::MIN, u128::MAX),
        shown: Shown,
    });
    same_as_serde_json(&(f64::MIN_POSITIVE, f64::MAX, 1e21, 123456789.0, 0.3));
    same_as_serde_json(&[f64::NEG_INFINITY, 5e-324, -1.0]);
    same_as_serde_json(&((), Some(()), 'x', [1u16, 2]));
    let float_keyed: BTreeMap<String, Value> =
        [("1.5".to_string(), Value::Null)].into_iter().collect();
    same_as_serde_json(&float_keyed);
}

#[test]
fn every_string_escapes_as_in_serde_json() {
    // Every byte value in every position of strings 1 to 20 bytes long: each of the word
    // checks' paths (under four, four to seven, eight and more, the overlapping last word).
    for len in 1..=20 {
        for pos in 0..len {
            for byte in 0..=0x7fu8 {
                let mut s = vec![b'a'; len];
                s[pos] = byte;
                same_as_serde_json(std::str::from_utf8(&s).unwrap());
            }
        }
    }
    for s in [
        "",
        "é",
        "\u{2028}",
        "a\u{0}b",
        "\\\\\"\"",
        "\r\n\t\u{8}\u{c}",
    ] {
        same_as_serde_json(s);
    }
}

#[test]
fn random_values_match_serde_json() {
    // A small linear congruential generator: the same values every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    // `next` gives 31 bits; a float takes any 64 (non-finite ones become null).
    fn bits(next: &mut impl FnMut() -> u64) -> u64 {
        next() << 62 | next() << 31 | next()
    }
    fn string(next: &mut impl FnMut() -> u64) -> String {
        (0..next() % 24)
            .map(|_| {
                let range = if next() % 4 == 0 { 0x11_0000 } else { 0x300 };
                char::from_u32((next() % range) as u32).unwrap_or('?')
            })
            .collect()
    }
    fn value(next: &mut impl FnMut() -> u64, depth: u32) -> Value {
        let pick = next() % if depth > 3 { 6 } else { 8 };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(next() % 2 == 0),
            2 => Value::from(next() as i64 - (1 << 30)),
            3 => Value::from(bits(next)),
            4 => Value::from(f64::from_bits(bits(next))),
            5 => Value::String(string(next)),
            6 => Value::Array((0..next() % 5).map(|_| value(next, depth + 1)).collect()),
            _ => Value::Object(
                (0..next() % 5)
                    .map(|_| (string(next), value(next, depth + 1)))
                    .collect(),
            ),
        }
    }
    for _ in 0..2_000 {
        same_as_serde_json(&value(&mut next, 0));
    }
}

#[test]
fn keys_that_are_not_strings_numbers_or_bools_are_errors() {
    let mut out = BytesMut::new();
    let map: BTreeMap<Vec<u8>, u8> = [(vec![1], 1)].into();
    assert!(matches!(write(&mut out, &map), Err(Error::Custom(_))));
    let map: BTreeMap<Option<u8>, u8> = [(None, 1)].into();
    assert!(matches!(write(&mut out, &map), Err(Error::Custom(_))));
    // serde_json agrees.
    assert!(serde_json::to_vec(&map).is_err());
    let nan = FloatKeys(&[f64::NAN]);
    assert!(matches!(write(&mut out, &nan), Err(Error::Custom(_))));
    assert!(serde_json::to_vec(&nan).is_err());
}

#[test]
fn a_failing_serialize_impl_is_an_error() {
    struct Fails;
    impl Serialize for Fails {
        fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(serde::ser::Error::custom("no"))
        }
    }
    let mut out = BytesMut::new();
    let err = write(&mut out, &[Fails]).unwrap_err();
    assert_eq!(err.to_string(), "no");
}

#[test]
fn serde_json_s_raw_values_are_left_to_serde_json() {
    let raw = serde_json::value::RawValue::from_string(r#"{"a": [1, 2]}"#.into()).unwrap();
    let mut out = BytesMut::new();
    assert!(matches!(write(&mut out, &raw), Err(Error::SerdeJsonType)));
    let r = crate::Response::json(&(1, &raw));
    assert_eq!(&r.body().as_bytes().unwrap()[..], br#"[1,{"a": [1, 2]}]"#);
}

/// A map of the given entries, written through `serialize_map`.
struct Entries<K>(Vec<K>);

impl<K: Serialize> Serialize for Entries<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (i, key) in self.0.iter().enumerate() {
            map.serialize_entry(key, &i)?;
        }
        map.end()
    }
}

/// A value written with `collect_str` from `Display` fragments.
struct Fragments(&'static [&'static str]);

impl Display for Fragments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|s| f.write_str(s))
    }
}

impl Serialize for Fragments {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Serialize, PartialEq, Eq, PartialOrd, Ord)]
enum KeyVariant {
    Plain,
    #[serde(rename = "re\"named\u{1}")]
    Renamed,
}

#[derive(Serialize)]
struct KeyNewtype<T>(T);

#[test]
fn map_keys_as_serde_json_writes_them() {
    same_as_serde_json(&Entries(vec![KeyVariant::Plain, KeyVariant::Renamed]));
    same_as_serde_json(&Entries(vec![KeyNewtype("n"), KeyNewtype("\\")]));
    same_as_serde_json(&Entries(vec![KeyNewtype(KeyNewtype(-5i8))]));
    same_as_serde_json(&Entries(vec![Some(true), Some(false)]));
    same_as_serde_json(&Entries(vec![Some(Some(3u16))]));
    same_as_serde_json(&Entries(vec![i128::MIN, -1, 0, i128::MAX]));
    same_as_serde_json(&Entries(vec![u128::MAX]));
    same_as_serde_json(&Entries(vec![u8::MAX]));
    same_as_serde_json(&Entries(vec![
        0.0f32,
        -0.0,
        1e-7,
        f32::MAX,
        f32::MIN_POSITIVE,
    ]));
    same_as_serde_json(&Entries(vec![-0.0f64, 5e-324, 1e21, -1.5e-300]));
    same_as_serde_json(&Entries(vec![
        '\u{0}',
        '"',
        '\\',
        '\u{7f}',
        '\u{10ffff}',
        '-',
    ]));
    same_as_serde_json(&Entries(vec!["", "-1", "true", "null", "{", "\u{1f}\n"]));
    same_as_serde_json(&Entries(vec![
        Fragments(&["1", "2"]),
        Fragments(&["", "\"", "abcdefg\n", "\u{2028}é"]),
        Fragments(&[]),
    ]));
    same_as_serde_json(&Entries(vec![
        Value::from("s"),
        Value::from(-3),
        Value::from(u64::MAX),
        Value::from(0.25),
        Value::Bool(true),
    ]));
}

/// Writes `key` as a map key both ways, and checks both refuse it.
fn refused_as_key<K: Serialize>(key: K) {
    let map = Entries(vec![key]);
    let mut ours = BytesMut::new();
    assert!(
        write(&mut ours, &map).is_err(),
        "{:?}",
        String::from_utf8_lossy(&ours)
    );
    assert!(serde_json::to_vec(&map).is_err());
}

#[derive(Serialize)]
struct KeyUnit;

#[derive(Serialize)]
struct KeyStruct {
    a: &'static str,
}

#[derive(Serialize)]
struct KeyTuple(&'static str, u8);

#[derive(Serialize)]
enum KeyShapes {
    Newtype(&'static str),
    Tuple(&'static str, u8),
    Struct { a: &'static str },
}

#[test]
fn keys_serde_json_refuses_are_refused() {
    refused_as_key(());
    refused_as_key(KeyUnit);
    refused_as_key(None::<&str>);
    refused_as_key(Some(()));
    refused_as_key(KeyNewtype(()));
    refused_as_key(["a"]);
    refused_as_key(Vec::<&str>::new());
    refused_as_key(("a", 1));
    refused_as_key(KeyTuple("a", 1));
    refused_as_key(KeyStruct { a: "a" });
    refused_as_key(Entries(vec!["a"]));
    refused_as_key(KeyShapes::Newtype("a"));
    refused_as_key(KeyShapes::Tuple("a", 1));
    refused_as_key(KeyShapes::Struct { a: "a" });
    refused_as_key(Value::Null);
    refused_as_key(Value::Array(vec![Value::from("a")]));
    for x in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        refused_as_key(x);
        refused_as_key(x as f32);
    }
    struct Bytes;
    impl Serialize for Bytes {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(b"a")
        }
    }
    refused_as_key(Bytes);
    let raw = serde_json::value::RawValue::from_string(r#""a""#.into()).unwrap();
    refused_as_key(&raw);
}

/// The byte-at-a-time answer the word checks must give.
fn needs_escape_bytewise(bytes: &[u8]) -> bool {
    bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

#[test]
fn the_word_checks_are_exact_on_any_bytes() {
    // Not only UTF-8: every byte value, at every position of slices 1 to 20 long, over
    // backgrounds next to the borrows' edges (just above each limit, 0x80 and 0xff).
    for background in [
        b'a', 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdd, 0xff,
    ] {
        for len in 1..=20 {
            for pos in 0..len {
                for byte in 0..=0xffu8 {
                    let mut bytes = vec![background; len];
                    bytes[pos] = byte;
                    assert_eq!(
                        needs_escape(&bytes),
                        needs_escape_bytewise(&bytes),
                        "{bytes:02x?}"
                    );
                }
            }
        }
    }
    // Random words, their bytes mostly drawn from the edges: a borrow out of one byte
    // must never make another look like one to escape, nor hide one.
    const EDGES: [u8; 16] = [
        0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xa1, 0xa2, 0xdc,
        0xff,
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1_000_000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let word = state.to_ne_bytes().map(|r| {
            if r & 0x80 == 0 {
                EDGES[usize::from(r & 0xf)]
            } else {
                r.rotate_left(3)
            }
        });
        assert_eq!(
            word_needs_escape(u64::from_ne_bytes(word)),
            needs_escape_bytewise(&word),
            "{word:02x?}"
        );
    }
}

#[test]
fn strings_with_multibyte_characters_escape_as_in_serde_json() {
    // Characters of one to four bytes (bytes 0x80 and up on both sides of a borrow) mixed
    // with ones to escape, in every order of a few.
    let chars = [
        'a',
        '\u{0}',
        '\u{1f}',
        ' ',
        '"',
        '\\',
        '\u{7f}',
        '\u{80}',
        'é',
        '\u{7ff}',
        '\u{800}',
        '\u{2028}',
        '\u{ffff}',
        '\u{10000}',
        '\u{10ffff}',
    ];
    let mut s = String::new();
    for a in chars {
        for b in chars {
            for c in chars {
                for filler in ["", "xyz", "ééé", "日本"] {
                    s.clear();
                    s.extend([a, b]);
                    s.push_str(filler);
                    s.push(c);
                    same_as_serde_json(s.as_str());
                }
            }
        }
    }
}

#[test]
fn collect_str_escapes_across_fragments() {
    // A fragment of any length, a character to escape alone, at the end or start of one.
    same_as_serde_json(&Fragments(&[
        "a\"",
        "\"b",
        "",
        "\\",
        "1234567\u{1}",
        "\u{1f}",
    ]));
    same_as_serde_json(&Fragments(&["日", "本", "\n", "0123456789abcdef\t"]));
    same_as_serde_json(&(Fragments(&[]), Fragments(&[""])));
    same_as_serde_json(&std::net::Ipv6Addr::LOCALHOST);
}

#[test]
fn a_failing_display_impl_is_an_error() {
    // serde_json panics here ("there should be an error"); an error answers 500 instead.
    struct Fails;
    impl Display for Fails {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("part")?;
            Err(fmt::Error)
        }
    }
    struct Shown(Fails);
    impl Serialize for Shown {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(&self.0)
        }
    }
    let mut out = BytesMut::new();
    assert!(matches!(
        write(&mut out, &Shown(Fails)),
        Err(Error::Custom(_))
    ));
}

#[derive(Serialize)]
struct Flattened {
    id: u8,
    #[serde(flatten)]
    extra: BTreeMap<&'static str, u8>,
    #[serde(flatten)]
    inner: Option<KeyStruct>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<u8>,
    #[serde(rename = "with \"quote\"\u{0}")]
    renamed: (),
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum Internally {
    Unit,
    Newtype(KeyStruct),
    Map(BTreeMap<u8, u8>),
    Struct { x: i8 },
}

#[derive(Serialize)]
#[serde(tag = "t", content = "c")]
enum Adjacently {
    Unit,
    Newtype(u8),
    Tuple(u8, u8),
    Struct { x: i8 },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Untagged {
    Unit,
    Newtype(u8),
    Tuple(u8, u8),
    Struct { x: i8 },
}

#[test]
fn serde_attributes_write_what_serde_json_writes() {
    same_as_serde_json(&Flattened {
        id: 1,
        extra: [("b", 2), ("c", 3)].into(),
        inner: Some(KeyStruct { a: "a" }),
        skipped: None,
        renamed: (),
    });
    same_as_serde_json(&Flattened {
        id: 1,
        extra: BTreeMap::new(),
        inner: None,
        skipped: Some(4),
        renamed: (),
    });
    same_as_serde_json(&[
        Internally::Unit,
        Internally::Newtype(KeyStruct { a: "a" }),
        Internally::Map([(1, 2)].into()),
        Internally::Struct { x: -1 },
    ]);
    same_as_serde_json(&[
        Adjacently::Unit,
        Adjacently::Newtype(1),
        Adjacently::Tuple(1, 2),
        Adjacently::Struct { x: -1 },
    ]);
    same_as_serde_json(&[
        Untagged::Unit,
        Untagged::Newtype(1),
        Untagged::Tuple(1, 2),
        Untagged::Struct { x: -1 },
    ]);
    same_as_serde_json(&[KeyShapes::Tuple("a", 1)]);
    same_as_serde_json(&std::time::Duration::from_millis(1500));
    same_as_serde_json(&(1u8..4, 'a'..='c', std::ops::Bound::Included(2)));
    same_as_serde_json(&std::collections::HashSet::from([7]));
}

/// A sequence or map whose `Serialize` impl announces a length it does not keep.
struct LyingLength {
    map: bool,
}

impl Serialize for LyingLength {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        if self.map {
            let mut map = s.serialize_map(Some(0))?;
            map.serialize_entry("a", &1)?;
            map.end()
        } else {
            let mut seq = s.serialize_seq(Some(0))?;
            seq.serialize_element(&1)?;
            seq.end()
        }
    }
}

#[test]
fn lengths_announced_wrongly_still_make_json() {
    // serde_json closes a container announced empty at once and goes on writing after it
    // (`[],1]`, not JSON); this serializer does not look at the announced length.
    let mut out = BytesMut::new();
    write(&mut out, &LyingLength { map: false }).unwrap();
    assert_eq!(&out[..], b"[1]");
    assert_eq!(
        serde_json::to_vec(&LyingLength { map: false }).unwrap(),
        b"[],1]"
    );
    out.clear();
    write(&mut out, &LyingLength { map: true }).unwrap();
    assert_eq!(&out[..], br#"{"a":1}"#);
    assert_eq!(
        serde_json::to_vec(&LyingLength { map: true }).unwrap(),
        br#"{},"a":1}"#
    );
}
