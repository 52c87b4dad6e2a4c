//! `Content-Type` from a file name's extension: a built-in table of the common web types, the
//! types a `ServeDir` adds or changes, and one for the rest; and [`ByExtension`], the map
//! those additions and `Cache-Control` by extension are kept in.

use std::path::Path;

use http::header::HeaderValue;

/// The extension of a file named `name`, as bytes; `None` without one (`Makefile`, `.txt`).
pub(super) fn extension(name: &Path) -> Option<&[u8]> {
    name.extension().map(|e| e.as_encoded_bytes())
}

/// Values by file name extension, compared ASCII-case-insensitively, so a lookup allocates
/// nothing. A few entries at most: a scan finds them.
#[derive(Clone, Debug, Default)]
pub(super) struct ByExtension(Vec<(Box<[u8]>, HeaderValue)>);

impl ByExtension {
    /// Sets `ext`'s value, replacing any earlier one.
    ///
    /// # Panics
    /// If `ext` is empty or holds a `.` or a `/`: no extension does, so it would never match.
    pub(super) fn set(&mut self, ext: &str, value: HeaderValue) {
        assert!(
            !ext.is_empty() && !ext.contains(['.', '/']),
            "invalid extension {ext:?} (without the dot: `css`, not `.css`)"
        );
        let ext = ext.as_bytes();
        match self.0.iter_mut().find(|(e, _)| e.eq_ignore_ascii_case(ext)) {
            Some((_, old)) => *old = value,
            None => self.0.push((ext.into(), value)),
        }
    }

    pub(super) fn get(&self, ext: &[u8]) -> Option<&HeaderValue> {
        let (_, value) = self.0.iter().find(|(e, _)| e.eq_ignore_ascii_case(ext))?;
        Some(value)
    }
}

/// The types files are served with.
#[derive(Clone, Debug)]
pub(super) struct Types {
    /// Types set with `ServeDir::mime_type`, looked up before the built-in table.
    pub(super) added: ByExtension,
    /// The type of a file whose extension is in neither, or that has none.
    pub(super) unknown: HeaderValue,
}

impl Default for Types {
    fn default() -> Types {
        Types {
            added: ByExtension::default(),
            unknown: HeaderValue::from_static("application/octet-stream"),
        }
    }
}

impl Types {
    /// The type of a file named `name`, by its extension (case-insensitive).
    pub(super) fn of(&self, name: &Path) -> HeaderValue {
        let Some(ext) = extension(name) else {
            return self.unknown.clone();
        };
        if let Some(added) = self.added.get(ext) {
            return added.clone();
        }
        match builtin(ext) {
            Some(builtin) => HeaderValue::from_static(builtin),
            None => self.unknown.clone(),
        }
    }
}

/// `ext`'s type in the built-in table.
fn builtin(ext: &[u8]) -> Option<&'static str> {
    let (_, t) = TYPES
        .iter()
        .find(|(e, _)| e.as_bytes().eq_ignore_ascii_case(ext))?;
    Some(t)
}

/// The built-in table: IANA-registered types where there are some, else the one browsers and
/// common servers' tables (nginx's, Apache's) agree on, marked. `text/*` types say
/// `charset=utf-8`; other types have no charset parameter (JSON is UTF-8 by definition, RFC
/// 8259 §8.1; XML and YAML documents declare or detect their own encoding).
const TYPES: &[(&str, &str)] = &[
    // Documents and data.
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("xhtml", "application/xhtml+xml"),
    ("css", "text/css; charset=utf-8"),
    // RFC 9239 makes text/javascript the one type for JavaScript.
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("txt", "text/plain; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("xml", "text/xml; charset=utf-8"),
    ("ics", "text/calendar; charset=utf-8"),
    ("vcf", "text/vcard; charset=utf-8"),
    // WebVTT captions, for <track>.
    ("vtt", "text/vtt; charset=utf-8"),
    ("json", "application/json"),
    ("map", "application/json"),
    ("jsonld", "application/ld+json"),
    ("webmanifest", "application/manifest+json"),
    // RFC 9512.
    ("yaml", "application/yaml"),
    ("yml", "application/yaml"),
    // The type TOML's specification names.
    ("toml", "application/toml"),
    // Not registered, but what feed readers expect (and nginx and Apache send).
    ("rss", "application/rss+xml"),
    ("atom", "application/atom+xml"),
    ("pdf", "application/pdf"),
    ("epub", "application/epub+zip"),
    ("wasm", "application/wasm"),
    (
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ),
    (
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ),
    (
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ),
    // Archives. tar, bz2, xz and 7z have no registered type: these are the ones in use.
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("zst", "application/zstd"),
    ("tar", "application/x-tar"),
    ("bz2", "application/x-bzip2"),
    ("xz", "application/x-xz"),
    ("7z", "application/x-7z-compressed"),
    ("rar", "application/vnd.rar"),
    // Images.
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    // An animated PNG: browsers list image/apng in their Accept.
    ("apng", "image/apng"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("jxl", "image/jxl"),
    ("heic", "image/heic"),
    ("heif", "image/heif"),
    ("bmp", "image/bmp"),
    ("tif", "image/tiff"),
    ("tiff", "image/tiff"),
    // What browsers send and expect for favicons (the registered image/vnd.microsoft.icon
    // is rarely seen).
    ("ico", "image/x-icon"),
    // Fonts (RFC 8081).
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("ttf", "font/ttf"),
    ("otf", "font/otf"),
    ("ttc", "font/collection"),
    ("eot", "application/vnd.ms-fontobject"),
    // Audio and video.
    ("mp4", "video/mp4"),
    // An MP4 file by another name.
    ("m4v", "video/mp4"),
    ("mov", "video/quicktime"),
    ("mpeg", "video/mpeg"),
    ("mpg", "video/mpeg"),
    ("webm", "video/webm"),
    ("ogv", "video/ogg"),
    ("mp3", "audio/mpeg"),
    ("m4a", "audio/mp4"),
    ("aac", "audio/aac"),
    ("flac", "audio/flac"),
    ("ogg", "audio/ogg"),
    ("oga", "audio/ogg"),
    // RFC 7845 §9: an .opus file is Ogg, audio/ogg (audio/opus is the RTP payload's type).
    ("opus", "audio/ogg"),
    ("weba", "audio/webm"),
    // Browsers play audio/wav (the registered audio/vnd.wave is rarely understood).
    ("wav", "audio/wav"),
    // Streaming: HLS playlists (RFC 8216 §4) and segments, DASH manifests and segments.
    ("m3u8", "application/vnd.apple.mpegurl"),
    // `.ts` is also TypeScript, which has no registered type and which no browser runs;
    // an HLS segment served as anything but video/mp2t fails in some players. A site that
    // publishes TypeScript sources to be read sets `.mime_type("ts", "text/plain; …")`.
    ("ts", "video/mp2t"),
    ("mpd", "application/dash+xml"),
    ("m4s", "video/iso.segment"),
    // 3D models (glTF 2.0).
    ("gltf", "model/gltf+json"),
    ("glb", "model/gltf-binary"),
];

#[cfg(test)]
mod tests {
    use super::{ByExtension, Types, TYPES};
    use http::header::HeaderValue;
    use std::path::Path;

    fn type_of(name: &str) -> String {
        let t = Types::default().of(Path::new(name));
        t.to_str().unwrap().to_owned()
    }

    #[test]
    fn by_extension() {
        assert_eq!(type_of("a/index.HTML"), "text/html; charset=utf-8");
        assert_eq!(type_of("app.js"), "text/javascript; charset=utf-8");
        assert_eq!(type_of("x.tar.gz"), "application/gzip");
        assert_eq!(type_of("x.tar"), "application/x-tar");
        assert_eq!(type_of("logo.svg"), "image/svg+xml");
        assert_eq!(type_of("seg0.ts"), "video/mp2t");
        assert_eq!(type_of("data.bin"), "application/octet-stream");
        assert_eq!(type_of("Makefile"), "application/octet-stream");
        assert_eq!(type_of(".txt"), "application/octet-stream");
        assert_eq!(type_of("a."), "application/octet-stream");
    }

    #[test]
    fn the_table_is_consistent() {
        for (i, (ext, t)) in TYPES.iter().enumerate() {
            assert_eq!(*ext, ext.to_ascii_lowercase(), "{ext}");
            assert!(!ext.contains('.'), "{ext}");
            let later = TYPES[i + 1..].iter().map(|(e, _)| e);
            assert!(later.into_iter().all(|e| e != ext), "{ext} twice");
            assert!(HeaderValue::from_str(t).is_ok(), "{t}");
            let text = t.starts_with("text/");
            assert_eq!(text, t.ends_with("; charset=utf-8"), "{ext}: {t}");
            assert_eq!(text, t.contains(';'), "{ext}: {t}");
        }
    }

    #[test]
    fn added_types_come_first_whatever_the_case() {
        let mut types = Types::default();
        // A later type for the same extension, in any case, replaces the earlier one.
        for (ext, t) in [
            ("CSS", "text/x-mine"),
            ("Vue", "text/plain"),
            ("vue", "text/x-vue"),
        ] {
            types.added.set(ext, HeaderValue::from_static(t));
        }
        types.unknown = HeaderValue::from_static("text/plain");
        let of = |name: &str| types.of(Path::new(name));
        assert_eq!(of("a.css"), "text/x-mine");
        assert_eq!(of("a.VUE"), "text/x-vue");
        assert_eq!(of("a.Png"), "image/png");
        assert_eq!(of("README"), "text/plain");
        assert_eq!(of("a.unknown"), "text/plain");
    }

    #[test]
    #[should_panic(expected = "invalid extension \".css\"")]
    fn an_extension_with_its_dot_panics() {
        ByExtension::default().set(".css", HeaderValue::from_static("text/css"));
    }
}
