//! The HTML listing of a directory without an index page.

use std::ffi::OsString;
use std::fmt::Write;
use std::os::unix::ffi::OsStrExt;

use percent_encoding::{percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What a link encodes: everything but RFC 3986 §2.3's unreserved characters. The result is
/// plain ASCII with no character HTML gives a meaning to, and a relative reference whatever
/// the name (`a:b` cannot become a scheme, `?` or `#` a query or fragment).
const LINK: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One entry of a listed directory.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) name: OsString,
    pub(super) is_dir: bool,
}

/// The page listing `entries` of the directory at `path` (the request's path, as sent):
/// directories first, then files, each group sorted by name (bytewise); a link to the parent
/// unless `at_root`.
pub(super) fn page(path: &str, mut entries: Vec<Entry>, at_root: bool) -> String {
    entries.sort_by(|a, b| {
        b.is_dir
            .cmp(&a.is_dir)
            .then_with(|| a.name.as_bytes().cmp(b.name.as_bytes()))
    });
    let title = escape(path);
    let mut html = format!(
        "<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n<title>Index of {title}\
         </title>\n</head>\n<body>\n<h1>Index of {title}</h1>\n<ul>\n"
    );
    if !at_root {
        html.push_str("<li><a href=\"../\">../</a></li>\n");
    }
    for entry in &entries {
        let href = percent_encode(entry.name.as_bytes(), LINK);
        let text = escape(&entry.name.to_string_lossy());
        let slash = if entry.is_dir { "/" } else { "" };
        let _ = writeln!(html, "<li><a href=\"{href}{slash}\">{text}{slash}</a></li>");
    }
    html.push_str("</ul>\n</body>\n</html>\n");
    html
}

/// `s` with HTML's special characters as character references.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, is_dir: bool) -> Entry {
        Entry {
            name: name.into(),
            is_dir,
        }
    }

    #[test]
    fn sorted_escaped_and_encoded() {
        let page = page(
            "/files/<x>/",
            vec![
                entry("b.txt", false),
                entry("zdir", true),
                entry("<script>&\"'.html", false),
                entry("a dir", true),
                entry("a.txt", false),
            ],
            false,
        );
        let items: Vec<&str> = page.lines().filter(|l| l.starts_with("<li>")).collect();
        assert_eq!(
            items,
            [
                "<li><a href=\"../\">../</a></li>",
                "<li><a href=\"a%20dir/\">a dir/</a></li>",
                "<li><a href=\"zdir/\">zdir/</a></li>",
                "<li><a href=\"%3Cscript%3E%26%22%27.html\">&lt;script&gt;&amp;&quot;&#39;.html</a></li>",
                "<li><a href=\"a.txt\">a.txt</a></li>",
                "<li><a href=\"b.txt\">b.txt</a></li>",
            ]
        );
        assert!(page.contains("<title>Index of /files/&lt;x&gt;/</title>"));
        assert!(!page.contains("<script>"));
    }
}
