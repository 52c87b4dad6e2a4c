//! JSON output for [`Json`](crate::Json) responses: a serde `Serializer` that writes compact
//! JSON into a `BytesMut`, byte for byte what `serde_json::to_writer` writes.
//!
//! It is ours for speed. serde_json looks every byte of a string up in a table and writes a
//! value in many small pieces; here a string is checked eight bytes at a time and, when nothing
//! in it needs escaping (almost always), copied in one piece: a 4.6 KB API payload costs 2.3×
//! fewer instructions than through serde_json (`examples/json_speed.rs`), TechEmpower's
//! `/json` ~100 fewer a request. Integers are formatted by `itoa`, as serde_json does; floats
//! by serde_json itself.
//!
//! Two serde_json types cannot be written without serde_json's internals: `Number` with its
//! `arbitrary_precision` feature and `RawValue`. They announce themselves by a struct name, and
//! [`write()`] answers [`Error::SerdeJsonType`] for them so the caller can use serde_json instead
//! (which serializes the whole value a second time; with `arbitrary_precision` on anywhere in
//! the build, that is every `serde_json::Value` holding a number). Map keys follow serde_json:
//! strings, and numbers and booleans in quotes; anything else is an error.
//!
//! Where serde_json writes something that is not JSON, or panics, this writes JSON or fails: a
//! `Serialize` impl that announces a sequence or map of length 0 and then writes elements
//! (serde_json closes it at once: `[],1]`), and a `Display` impl that fails in `collect_str`.

use std::fmt::{self, Display, Write as _};

use bytes::{BufMut, BytesMut};
use serde::ser::{self, Serialize};

/// Why a value was not written; whatever was written of it is left in the buffer.
#[derive(Debug)]
pub(crate) enum Error {
    /// The value's `Serialize` impl failed, or a map key was not a string, number or bool.
    Custom(String),
    /// One of serde_json's own types, which only serde_json can write.
    SerdeJsonType,
}

impl Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Custom(msg) => f.write_str(msg),
            Error::SerdeJsonType => f.write_str("a serde_json type only serde_json can write"),
        }
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: Display>(msg: T) -> Error {
        Error::Custom(msg.to_string())
    }
}

/// Appends `value` as JSON to `out`.
pub(crate) fn write<T: Serialize + ?Sized>(out: &mut BytesMut, value: &T) -> Result<(), Error> {
    value.serialize(Writer(out))
}

/// serde_json's types that announce themselves by this struct name prefix.
const SERDE_JSON_PRIVATE: &str = "$serde_json::private::";

struct Writer<'a>(&'a mut BytesMut);

impl<'a> Writer<'a> {
    fn integer(self, n: impl itoa::Integer) -> Result<(), Error> {
        self.0
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
        Ok(())
    }

    /// Floats as serde_json writes them (its formatting has changed between versions, so it
    /// is asked); non-finite ones are `null`.
    fn float(self, x: impl Serialize) -> Result<(), Error> {
        serde_json::to_writer(self.0.writer(), &x).map_err(|e| Error::Custom(e.to_string()))
    }

    /// Opens an array or object that `close` ends.
    fn open(self, open: u8, close: &'static [u8]) -> Compound<'a> {
        self.0.put_u8(open);
        Compound {
            out: self.0,
            first: true,
            close,
        }
    }

    /// Opens `{"variant":` and then an array or object; `close` ends both.
    fn open_variant(self, variant: &str, open: u8, close: &'static [u8]) -> Compound<'a> {
        self.0.put_u8(b'{');
        write_str(self.0, variant);
        self.0.put_u8(b':');
        self.open(open, close)
    }
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.0
            .extend_from_slice(if v { b"true".as_slice() } else { b"false" });
        Ok(())
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.integer(v)
    }

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.float(v)
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.0, v);
        Ok(())
    }

    /// An array of numbers, as in serde_json.
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut seq = self.open(b'[', b"]");
        for byte in v {
            ser::SerializeSeq::serialize_element(&mut seq, byte)?;
        }
        ser::SerializeSeq::end(seq)
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        self.0.put_u8(b'{');
        write_str(self.0, variant);
        self.0.put_u8(b':');
        v.serialize(Writer(&mut *self.0))?;
        self.0.put_u8(b'}');
        Ok(())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open(b'[', b"]"))
    }

    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, Error> {
        Ok(self.open(b'[', b"]"))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open(b'[', b"]"))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open_variant(variant, b'[', b"]}"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Error> {
        Ok(self.open(b'{', b"}"))
    }

    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Compound<'a>, Error> {
        if name.starts_with(SERDE_JSON_PRIVATE) {
            return Err(Error::SerdeJsonType);
        }
        Ok(self.open(b'{', b"}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Error> {
        Ok(self.open_variant(variant, b'{', b"}}"))
    }

    /// Streams the `Display` output through the escaping, with no `String` in between.
    fn collect_str<T: Display + ?Sized>(self, v: &T) -> Result<(), Error> {
        struct Escaping<'b>(&'b mut BytesMut);
        impl fmt::Write for Escaping<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                write_str_contents(self.0, s.as_bytes());
                Ok(())
            }
        }
        self.0.put_u8(b'"');
        write!(Escaping(&mut *self.0), "{v}")
            .map_err(|_| Error::Custom("a Display impl failed".into()))?;
        self.0.put_u8(b'"');
        Ok(())
    }
}

/// An array or object being written.
struct Compound<'a> {
    out: &'a mut BytesMut,
    first: bool,
    close: &'static [u8],
}

impl Compound<'_> {
    /// Writes the comma before every element but the first.
    fn separate(&mut self) {
        if !self.first {
            self.out.put_u8(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.separate();
        v.serialize(Writer(&mut *self.out))
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Error> {
        self.separate();
        write_str(self.out, key);
        self.out.put_u8(b':');
        v.serialize(Writer(&mut *self.out))
    }

    fn close(self) -> Result<(), Error> {
        // One or two bytes: stores, where `extend_from_slice` would call `memcpy`.
        for &byte in self.close {
            self.out.put_u8(byte);
        }
        Ok(())
    }
}

/// serde's six compound traits besides maps: each forwards its one method to `Compound`'s own.
macro_rules! forward_compound {
    ($($name:ident: $method:ident($($key:ident)?) => $own:ident;)*) => {$(
        impl ser::$name for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(
                &mut self,
                $($key: &'static str,)?
                v: &T,
            ) -> Result<(), Error> {
                self.$own($($key,)? v)
            }

            fn end(self) -> Result<(), Error> {
                self.close()
            }
        }
    )*};
}

forward_compound! {
    SerializeSeq: serialize_element() => element;
    SerializeTuple: serialize_element() => element;
    SerializeTupleStruct: serialize_field() => element;
    SerializeTupleVariant: serialize_field() => element;
    SerializeStruct: serialize_field(key) => field;
    SerializeStructVariant: serialize_field(key) => field;
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    /// The key is written as any value, then checked: a string stays, a number or bool is put
    /// in quotes, anything else is an error (serde_json's rules, without a second serializer).
    /// A `Serializer` is used up by the one call that writes a value, so the key wrote exactly
    /// one JSON value, and its first byte says which kind: `"` a string (also a char, a unit
    /// variant, `collect_str`), `-` or a digit a number, `t` or `f` a bool. `n` (null, and a
    /// float that is not finite), `[` and `{` are what serde_json refuses.
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.separate();
        let start = self.out.len();
        key.serialize(Writer(&mut *self.out))?;
        match self.out.get(start) {
            Some(b'"') => Ok(()),
            Some(b'-' | b'0'..=b'9' | b't' | b'f') => {
                self.out.put_u8(b'"');
                self.out[start..].rotate_right(1);
                self.out.put_u8(b'"');
                Ok(())
            }
            _ => Err(Error::Custom(
                "a JSON object key must be a string, a finite number or a bool".into(),
            )),
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Error> {
        self.out.put_u8(b':');
        v.serialize(Writer(&mut *self.out))
    }

    fn end(self) -> Result<(), Error> {
        self.close()
    }
}

/// Writes `s` as a JSON string, in quotes.
fn write_str(out: &mut BytesMut, s: &str) {
    out.reserve(s.len() + 2);
    out.put_u8(b'"');
    write_str_contents(out, s.as_bytes());
    out.put_u8(b'"');
}

/// Writes the bytes of a string, escaped if they need it (rarely: apart, and out of line).
#[inline]
fn write_str_contents(out: &mut BytesMut, bytes: &[u8]) {
    if needs_escape(bytes) {
        write_escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
}

/// Writes the bytes of a string escaped as serde_json escapes them: `"`, `\` and the control
/// characters below 0x20 (short forms where JSON has them, else `\u00xx`); nothing else.
#[cold]
#[inline(never)]
fn write_escaped(out: &mut BytesMut, bytes: &[u8]) {
    let mut plain = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0..0x20 => b'u',
            _ => continue,
        };
        out.extend_from_slice(&bytes[plain..i]);
        plain = i + 1;
        if short == b'u' {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
            out.extend_from_slice(&[b'\\', b'u', b'0', b'0', hex[0], hex[1]]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&bytes[plain..]);
}

/// Whether `bytes` holds a byte a JSON string must escape, eight bytes at a time: a string of
/// eight or more ends with an overlapping word, one of four to seven is two overlapping halves.
#[inline]
fn needs_escape(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n >= 8 {
        let word = |chunk: &[u8]| u64::from_ne_bytes(chunk.try_into().expect("eight bytes"));
        return bytes.chunks_exact(8).any(|c| word_needs_escape(word(c)))
            || word_needs_escape(word(&bytes[n - 8..]));
    }
    if n >= 4 {
        let half = |chunk: &[u8]| u32::from_ne_bytes(chunk.try_into().expect("four bytes"));
        let (low, high) = (half(&bytes[..4]), half(&bytes[n - 4..]));
        return word_needs_escape(u64::from(low) | u64::from(high) << 32);
    }
    bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// Whether any byte of `w` is below 0x20, `"` or `\`: the classic "has a byte less than n"
/// and "has a zero byte" tests, exact as yes/no answers for any limit n up to 0x80. A byte b
/// gets its top bit set in `(b - n) & !b` when b < n (b - n wraps to 0x80 or more, and b's
/// own top bit is clear), and not when b ≥ n: then b - n < 0x80, or b ≥ 0x80 and `!b` clears
/// the bit. Only a byte below n borrows from the next, so the lowest byte that answers yes
/// answers truly, and bytes above it can only add to a yes.
fn word_needs_escape(w: u64) -> bool {
    const fn each(byte: u8) -> u64 {
        u64::from_ne_bytes([byte; 8])
    }
    let below = |v: u64, n: u8| v.wrapping_sub(each(n)) & !v;
    let control = below(w, 0x20);
    let quote = below(w ^ each(b'"'), 1);
    let backslash = below(w ^ each(b'\\'), 1);
    (control | quote | backslash) & each(0x80) != 0
}

#[cfg(test)]
mod tests;
