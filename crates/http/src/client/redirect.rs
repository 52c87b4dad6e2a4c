//! Following redirects (RFC 9110 §15.4): where a 3xx sends the request next, and which of
//! its method and body go with it.

use http::{Method, StatusCode};

use super::Target;

/// The request a redirect asks for next.
#[derive(Debug)]
pub(super) struct Next {
    pub(super) method: Method,
    pub(super) target: Target,
    /// The body goes again (307, 308, and 301/302 for methods other than POST).
    pub(super) keeps_body: bool,
}

/// The request `status` and `location` ask for after a request of `method` to `base`, or
/// `None` if the response is the answer: not a redirect (300, 304 and 305 are not followed),
/// or one with no usable `Location`.
pub(super) fn next(
    status: StatusCode,
    method: &Method,
    base: &Target,
    location: Option<&str>,
) -> Option<Next> {
    let (method, keeps_body) = match status.as_u16() {
        // 301 and 302: user agents change POST to GET (§15.4.2, §15.4.3), and only POST.
        301 | 302 if *method == Method::POST => (Method::GET, false),
        301 | 302 | 307 | 308 => (method.clone(), true),
        // 303: a GET (or HEAD) of the other resource (§15.4.4).
        303 if *method == Method::HEAD => (Method::HEAD, false),
        303 => (Method::GET, false),
        _ => return None,
    };
    let target = Target::parse(&resolve(base, location?)?).ok()?;
    Some(Next {
        method,
        target,
        keeps_body,
    })
}

/// `reference` resolved against the URL of `base` (RFC 3986 §5.2), as an absolute URL; its
/// fragment dropped (no request carries one). `None` for a scheme other than http(s).
fn resolve(base: &Target, reference: &str) -> Option<String> {
    let reference = reference.split('#').next().unwrap_or_default().trim();
    let scheme = if base.origin.https { "https" } else { "http" };
    if let Some((name, _)) = reference.split_once(':') {
        let is_scheme = name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b));
        if is_scheme && !name.is_empty() && !name.contains('/') {
            let known = name.eq_ignore_ascii_case("http") || name.eq_ignore_ascii_case("https");
            return known.then(|| reference.to_owned());
        }
    }
    if let Some(rest) = reference.strip_prefix("//") {
        return Some(format!("{scheme}://{rest}"));
    }
    let (base_path, base_query) = match base.path.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (base.path.as_str(), None),
    };
    let (path, query) = match reference.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (reference, None),
    };
    let (path, query) = if path.is_empty() {
        // Same path; the reference's query if it has one, else the base's.
        (base_path.to_owned(), query.or(base_query))
    } else if path.starts_with('/') {
        (remove_dots(path), query)
    } else {
        // Merged with the base path's directory (§5.2.3).
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        (remove_dots(&format!("{dir}{path}")), query)
    };
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    Some(format!("{scheme}://{}{path}{query}", base.authority))
}

/// A path with its `.` and `..` segments applied (RFC 3986 §5.2.4); always absolute.
fn remove_dots(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." | ".." => {
                if *segment == ".." {
                    out.pop();
                }
                if last {
                    out.push(""); // `a/b/..` names the directory: `a/`
                }
            }
            segment => out.push(segment),
        }
    }
    format!("/{}", out.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Target {
        Target::parse("http://a.test:8080/b/c/d?q").unwrap()
    }

    /// RFC 3986 §5.4.1's normal examples, on an http base.
    #[test]
    fn references_resolve_as_rfc_3986_says() {
        let cases = [
            ("g", "http://a.test:8080/b/c/g"),
            ("./g", "http://a.test:8080/b/c/g"),
            ("g/", "http://a.test:8080/b/c/g/"),
            ("/g", "http://a.test:8080/g"),
            ("//g.test/x", "http://g.test/x"),
            ("?y", "http://a.test:8080/b/c/d?y"),
            ("g?y", "http://a.test:8080/b/c/g?y"),
            ("#s", "http://a.test:8080/b/c/d?q"),
            ("g#s", "http://a.test:8080/b/c/g"),
            ("", "http://a.test:8080/b/c/d?q"),
            (".", "http://a.test:8080/b/c/"),
            ("..", "http://a.test:8080/b/"),
            ("../g", "http://a.test:8080/b/g"),
            ("../..", "http://a.test:8080/"),
            ("../../../g", "http://a.test:8080/g"),
            ("/./g/../h", "http://a.test:8080/h"),
            ("https://other.test/p?x", "https://other.test/p?x"),
            ("HTTP://other.test/", "HTTP://other.test/"),
        ];
        for (reference, want) in cases {
            assert_eq!(
                resolve(&base(), reference).as_deref(),
                Some(want),
                "{reference}"
            );
        }
        assert_eq!(resolve(&base(), "ftp://x.test/"), None);
        assert_eq!(resolve(&base(), "mailto:someone@x.test"), None);
    }

    #[test]
    fn methods_and_bodies_follow_rfc_9110() {
        let go = |status: u16, method: Method| {
            let status = StatusCode::from_u16(status).unwrap();
            next(status, &method, &base(), Some("/n")).map(|n| (n.method, n.keeps_body))
        };
        assert_eq!(go(301, Method::POST), Some((Method::GET, false)));
        assert_eq!(go(302, Method::PUT), Some((Method::PUT, true)));
        assert_eq!(go(303, Method::POST), Some((Method::GET, false)));
        assert_eq!(go(303, Method::HEAD), Some((Method::HEAD, false)));
        assert_eq!(go(307, Method::POST), Some((Method::POST, true)));
        assert_eq!(go(308, Method::DELETE), Some((Method::DELETE, true)));
        for status in [300, 304, 305, 200, 404] {
            assert_eq!(go(status, Method::GET), None, "{status}");
        }
        let status = StatusCode::FOUND;
        assert!(next(status, &Method::GET, &base(), None).is_none());
        assert!(next(status, &Method::GET, &base(), Some("ftp://x/")).is_none());
    }
}
