//! Which file a request names under the gateway's root, and what is left over for the script:
//! the split of RFC 3875 §4.1.13 (`SCRIPT_NAME`) and §4.1.5 (`PATH_INFO`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use http::StatusCode;

use crate::request::percent_decode;

/// Why a request names no script, as the status it is answered with.
#[derive(Debug)]
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) why: &'static str,
}

fn refuse(status: StatusCode, why: &'static str) -> Refusal {
    Refusal { status, why }
}

/// The segments of the part of a request path below the gateway's mount point, decoded.
///
/// Refused before the file system is looked at (403): a `.` or `..` segment, an encoded `/`
/// (`%2F`, which would let one segment name a path of several), a NUL byte, and an empty segment
/// anywhere but at the end (a trailing `/` is an empty `PATH_INFO` segment). These rules cover
/// the `PATH_INFO` part too: a script may map it onto files (`PATH_TRANSLATED`), and must not be
/// led outside its tree by it. Bad percent-encoding (or bytes that are not UTF-8) is a 400.
pub(super) fn segments(raw: &str) -> Result<Vec<String>, Refusal> {
    let raw: Vec<&str> = raw.split('/').collect();
    let last = raw.len() - 1;
    let mut decoded = Vec::with_capacity(raw.len());
    for (i, segment) in raw.iter().enumerate() {
        let segment = percent_decode(segment)
            .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "bad percent-encoding in the path"))?;
        let forbidden = |why| Err(refuse(StatusCode::FORBIDDEN, why));
        match &*segment {
            "." | ".." => return forbidden("a dot segment in the path"),
            "" if i != last => return forbidden("an empty segment in the path"),
            s if s.contains('/') => return forbidden("an encoded slash in the path"),
            s if s.contains('\0') => return forbidden("a NUL byte in the path"),
            _ => decoded.push(segment.into_owned()),
        }
    }
    Ok(decoded)
}

/// A script found under the root.
#[derive(Debug)]
pub(super) struct Found {
    /// The script's file, every symbolic link resolved.
    pub(super) path: PathBuf,
    /// How many of the segments name it (the rest are `PATH_INFO`).
    pub(super) depth: usize,
}

/// Finds the script `segments` name under `root`: the shortest prefix of them that names an
/// executable regular file (§4.1.13: the rest of the path is `PATH_INFO`, §4.1.5).
///
/// Answers 404 when a prefix names nothing (or the path ends on a directory's missing entry),
/// and 403 when the first file met is not a regular executable file (a directory named by the
/// whole path, a file without an execute bit, a FIFO or device), or when it lies outside the
/// root once symbolic links are resolved (a link out of the tree never runs). Blocking: call it
/// on the blocking pool.
pub(super) fn find(root: &Path, segments: &[String]) -> Result<Found, Refusal> {
    let root = fs::canonicalize(root).map_err(|_| {
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the CGI directory is missing",
        )
    })?;
    let mut path = root.clone();
    for (i, segment) in segments.iter().enumerate() {
        if segment.is_empty() {
            break; // a trailing `/` after directories only
        }
        path.push(segment);
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(_) => return Err(refuse(StatusCode::NOT_FOUND, "no such script")),
        };
        if meta.is_dir() {
            continue;
        }
        if !meta.is_file() {
            return Err(refuse(StatusCode::FORBIDDEN, "not a regular file"));
        }
        let resolved =
            fs::canonicalize(&path).map_err(|_| refuse(StatusCode::NOT_FOUND, "no such script"))?;
        if !resolved.starts_with(&root) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "the script lies outside the CGI directory",
            ));
        }
        if meta.permissions().mode() & 0o111 == 0 {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "the script is not executable",
            ));
        }
        return Ok(Found {
            path: resolved,
            depth: i + 1,
        });
    }
    Err(refuse(StatusCode::FORBIDDEN, "a directory, not a script"))
}

#[cfg(test)]
mod tests {
    use super::segments;
    use http::StatusCode;

    #[test]
    fn unsafe_segments_are_refused_before_the_file_system() {
        assert_eq!(segments("a/b.sh/x/y").unwrap(), ["a", "b.sh", "x", "y"]);
        assert_eq!(segments("s%20p.sh/").unwrap(), ["s p.sh", ""]);
        for (raw, status) in [
            ("../etc/passwd", StatusCode::FORBIDDEN),
            ("a/./b", StatusCode::FORBIDDEN),
            ("%2e%2e/x", StatusCode::FORBIDDEN),
            ("a%2Fb.sh", StatusCode::FORBIDDEN),
            ("a.sh/x%2fy", StatusCode::FORBIDDEN),
            ("a%00.sh", StatusCode::FORBIDDEN),
            ("a//b.sh", StatusCode::FORBIDDEN),
            ("a%zz", StatusCode::BAD_REQUEST),
            ("a%FF", StatusCode::BAD_REQUEST),
        ] {
            assert_eq!(segments(raw).unwrap_err().status, status, "{raw}");
        }
    }
}
