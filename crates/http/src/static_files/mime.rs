//! `Content-Type` from a file name's extension: a small table of the common web types.

use std::path::Path;

/// The type of a file named `path`, by its extension (case-insensitive);
/// `application/octet-stream` when unknown. Text types say `charset=utf-8`.
pub(super) fn content_type(path: &Path) -> &'static str {
    let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
        return OCTETS;
    };
    let ext = ext.to_ascii_lowercase();
    TYPES
        .iter()
        .find(|(e, _)| *e == ext)
        .map_or(OCTETS, |(_, t)| t)
}

const OCTETS: &str = "application/octet-stream";

const TYPES: &[(&str, &str)] = &[
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    // RFC 9239 makes text/javascript the one type for JavaScript.
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("txt", "text/plain; charset=utf-8"),
    ("md", "text/markdown; charset=utf-8"),
    ("csv", "text/csv; charset=utf-8"),
    ("xml", "text/xml; charset=utf-8"),
    // JSON is UTF-8 by definition (RFC 8259 §8.1) and has no charset parameter.
    ("json", "application/json"),
    ("map", "application/json"),
    ("webmanifest", "application/manifest+json"),
    ("wasm", "application/wasm"),
    ("pdf", "application/pdf"),
    ("zip", "application/zip"),
    ("gz", "application/gzip"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/x-icon"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("ttf", "font/ttf"),
    ("otf", "font/otf"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mp3", "audio/mpeg"),
    ("ogg", "audio/ogg"),
    ("wav", "audio/wav"),
];

#[cfg(test)]
mod tests {
    use super::content_type;
    use std::path::Path;

    #[test]
    fn by_extension() {
        assert_eq!(
            content_type(Path::new("a/index.HTML")),
            "text/html; charset=utf-8"
        );
        assert_eq!(
            content_type(Path::new("app.js")),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.tar.gz")), "application/gzip");
        assert_eq!(content_type(Path::new("logo.svg")), "image/svg+xml");
        assert_eq!(
            content_type(Path::new("data.bin")),
            "application/octet-stream"
        );
        assert_eq!(
            content_type(Path::new("Makefile")),
            "application/octet-stream"
        );
        assert_eq!(content_type(Path::new(".txt")), "application/octet-stream");
    }
}
