//! Cookies (RFC 6265bis): the [`CookieJar`] that keeps what `Set-Cookie` fields say (§5.7)
//! and gives each request the `Cookie` field it is owed (§5.8.3).
//!
//! Without a public suffix list, a `Domain` attribute of one label (`Domain=com`,
//! `Domain=localhost`) is refused unless it names the request's host itself (then the cookie
//! is host-only), so a cookie can never be set for a whole top-level domain; a registrable
//! suffix of two labels (`co.uk`) cannot be told from a domain and is accepted.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use http::header::{COOKIE, SET_COOKIE};
use http::{HeaderMap, HeaderValue};

pub use super::set_cookie::SameSite;
use super::set_cookie::SetCookie;
use super::set_cookie::MAX_COOKIE_SIZE;
use super::Target;

const MAX_COOKIES_PER_DOMAIN: usize = CookieJar::MAX_PER_DOMAIN;
const MAX_COOKIES: usize = CookieJar::MAX_COOKIES;

/// Cookies kept across requests: a handle, cheap to clone, whose clones share one store.
///
/// `Send` and `Sync`: one jar may serve the clients of every worker
/// ([`ClientBuilder::cookie_jar`](super::ClientBuilder::cookie_jar)), or each client keeps its
/// own ([`ClientBuilder::cookies`](super::ClientBuilder::cookies)). It can be filled before
/// the first request ([`CookieJar::set`]) and looked into at any time ([`CookieJar::cookies`],
/// [`CookieJar::header_for`]).
#[derive(Clone, Default)]
pub struct CookieJar {
    store: Arc<Mutex<Store>>,
}

/// A cookie in a [`CookieJar`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cookie {
    name: String,
    value: String,
    /// Lower case, no leading dot: the host itself for a host-only cookie.
    domain: String,
    path: String,
    host_only: bool,
    secure: bool,
    http_only: bool,
    same_site: Option<SameSite>,
    expires: Option<SystemTime>,
    /// Creation order (§5.7 step 23: a replaced cookie keeps its predecessor's).
    created: u64,
    /// Use order, for eviction: the latest store or send.
    used: u64,
}

#[derive(Default)]
struct Store {
    /// Cookies by their domain.
    domains: HashMap<String, Vec<Cookie>>,
    count: usize,
    /// The next creation or use number.
    clock: u64,
}

impl CookieJar {
    /// The most cookies kept for one domain (RFC 6265bis §6.1 asks for at least 50); past it
    /// the domain's least recently used cookie goes (expired ones first).
    pub const MAX_PER_DOMAIN: usize = 50;

    /// The most cookies kept in a jar (§6.1: at least 3000); past it the least recently used
    /// cookie of all goes (expired ones first).
    pub const MAX_COOKIES: usize = 3000;

    /// The most bytes of a cookie's name and value together; a larger cookie is ignored
    /// (§5.6). An attribute value over 1024 bytes is ignored, the cookie kept.
    pub const MAX_COOKIE_SIZE: usize = MAX_COOKIE_SIZE;

    /// An empty jar.
    pub fn new() -> CookieJar {
        CookieJar::default()
    }

    /// Stores `set_cookie` (a `Set-Cookie` field's value) as if a response from `url` had
    /// carried it; whether it was kept (a cookie that removes one, `Max-Age=0`, is not).
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a URL that is not `http://` or `https://`.
    pub fn set(&self, url: &str, set_cookie: &str) -> io::Result<bool> {
        let target = Target::parse(url)?;
        let now = SystemTime::now();
        Ok(self.lock().store(&target, set_cookie.as_bytes(), now))
    }

    /// The cookies a request to `url` would carry, as its `Cookie` field's value.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a URL that is not `http://` or `https://`.
    pub fn header_for(&self, url: &str) -> io::Result<Option<String>> {
        let target = Target::parse(url)?;
        Ok(self.lock().header(&target, SystemTime::now()))
    }

    /// Every unexpired cookie, by domain and then in creation order.
    pub fn cookies(&self) -> Vec<Cookie> {
        let now = SystemTime::now();
        let store = self.lock();
        let mut domains: Vec<_> = store.domains.iter().collect();
        domains.sort_by(|a, b| a.0.cmp(b.0));
        let mut all: Vec<Cookie> = Vec::new();
        for (_, cookies) in domains {
            let mut live: Vec<_> = cookies.iter().filter(|c| !c.expired(now)).collect();
            live.sort_by_key(|c| c.created);
            all.extend(live.into_iter().cloned());
        }
        all
    }

    /// Removes every cookie.
    pub fn clear(&self) {
        let mut store = self.lock();
        store.domains.clear();
        store.count = 0;
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        // A panic elsewhere while it was held leaves a consistent store (each change is made
        // whole before anything that can panic).
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `headers` with the jar's cookies for `target` added to its `Cookie` field (after those
    /// the caller set, in one field), or as they are if none match.
    pub(super) fn request_headers<'a>(
        &self,
        headers: &'a HeaderMap,
        target: &Target,
    ) -> Cow<'a, HeaderMap> {
        let Some(cookies) = self.lock().header(target, SystemTime::now()) else {
            return Cow::Borrowed(headers);
        };
        let mut value = Vec::new();
        for own in headers.get_all(COOKIE) {
            value.extend_from_slice(own.as_bytes());
            value.extend_from_slice(b"; ");
        }
        value.extend_from_slice(cookies.as_bytes());
        let mut headers = headers.clone();
        // The jar's cookies are made of header value bytes, so this cannot fail.
        if let Ok(value) = HeaderValue::from_bytes(&value) {
            headers.insert(COOKIE, value);
        }
        Cow::Owned(headers)
    }

    /// Stores the `Set-Cookie` fields of a response from `target`.
    pub(super) fn store_response(&self, target: &Target, headers: &HeaderMap) {
        let mut fields = headers.get_all(SET_COOKIE).iter().peekable();
        if fields.peek().is_none() {
            return;
        }
        let now = SystemTime::now();
        let mut store = self.lock();
        for field in fields {
            store.store(target, field.as_bytes(), now);
        }
    }
}

impl Store {
    /// §5.7: stores the cookie of one `Set-Cookie` field from `target`, received at `now`,
    /// replacing the one with its name, domain and path; whether it was kept.
    fn store(&mut self, target: &Target, line: &[u8], now: SystemTime) -> bool {
        let Some(set) = SetCookie::parse(line, now) else {
            return false;
        };
        let host = target.origin.host.to_ascii_lowercase();
        let https = target.origin.https;
        let (domain, host_only) = match set.domain {
            None => (host, true),
            // No public suffix list: one label is taken for a suffix, refused unless it is the
            // host itself (then the cookie is host-only, §5.7 step 9).
            Some(domain) if !domain.contains('.') && domain == host => (host, true),
            Some(domain) if !domain.contains('.') => return false,
            // An address has no domain above it (§5.1.3): only itself matches.
            Some(domain) if !domain_matches(&host, &domain) => return false,
            Some(domain) => (domain, false),
        };
        let path = set
            .path
            .unwrap_or_else(|| default_path(&target.path).to_owned());
        // §5.7 step 14 and §4.1.3: Secure only from a secure origin; the name prefixes.
        // (By bytes: a name may have a multi-byte character where the prefix would end.)
        let prefixed = |prefix: &str| {
            let name = set.name.as_bytes();
            name.len() >= prefix.len()
                && name[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes())
        };
        if set.secure && !https
            || prefixed("__Secure-") && !set.secure
            || prefixed("__Host-") && !(set.secure && host_only && path == "/")
        {
            return false;
        }
        // §5.7 step 16: an insecure origin cannot shadow a secure cookie of the same name.
        if !https && self.shadows_secure(&set.name, &domain, &path) {
            return false;
        }
        let mut created = self.tick();
        let list = self.domains.entry(domain.clone()).or_default();
        let same = |c: &Cookie| c.name == set.name && c.host_only == host_only && c.path == path;
        if let Some(at) = list.iter().position(same) {
            created = list.remove(at).created;
            self.count -= 1;
        }
        let expires = set.expires;
        if expires.is_some_and(|at| at <= now) {
            self.forget_empty(&domain);
            return false;
        }
        let used = self.tick();
        let cookie = Cookie {
            name: set.name,
            value: set.value,
            domain: domain.clone(),
            path,
            host_only,
            secure: set.secure,
            http_only: set.http_only,
            same_site: set.same_site,
            expires,
            created,
            used,
        };
        let list = self.domains.entry(domain.clone()).or_default();
        list.push(cookie);
        self.count += 1;
        if list.len() > MAX_COOKIES_PER_DOMAIN {
            self.evict(Some(&domain), now);
        }
        if self.count > MAX_COOKIES {
            self.evict(None, now);
        }
        true
    }

    fn shadows_secure(&self, name: &str, domain: &str, path: &str) -> bool {
        self.domains.values().flatten().any(|c| {
            c.secure
                && c.name == name
                && (domain_matches(domain, &c.domain) || domain_matches(&c.domain, domain))
                && path_matches(path, &c.path)
        })
    }

    /// The `Cookie` value for a request to `target` at `now` (§5.8.3): cookies whose domain
    /// and path match, `Secure` ones over https only, longer paths first, then older ones.
    fn header(&mut self, target: &Target, now: SystemTime) -> Option<String> {
        if self.count == 0 {
            return None;
        }
        let host = target.origin.host.to_ascii_lowercase();
        let path = target.path.split('?').next().unwrap_or("/");
        let https = target.origin.https;
        // The domains that may hold cookies for `host`: itself, and for a name each suffix
        // that starts after a dot.
        let mut domains = vec![host.as_str()];
        if !is_ip(&host) {
            let dots = host.match_indices('.').map(|(i, _)| &host[i + 1..]);
            domains.extend(dots.filter(|d| !d.is_empty()));
        }
        let clock = self.tick();
        // (path length, creation, domain, index) of each cookie to send.
        let mut sent = Vec::new();
        for domain in domains {
            let Some(list) = self.domains.get_mut(domain) else {
                continue;
            };
            let before = list.len();
            list.retain(|c| !c.expired(now));
            self.count -= before - list.len();
            for (i, c) in list.iter().enumerate() {
                let domain_ok = !c.host_only || c.domain == host;
                if domain_ok && path_matches(path, &c.path) && (https || !c.secure) {
                    sent.push((c.path.len(), c.created, domain, i));
                }
            }
        }
        if sent.is_empty() {
            return None;
        }
        sent.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut value = String::new();
        for (_, _, domain, i) in sent {
            let cookie = &mut self.domains.get_mut(domain)?[i];
            cookie.used = clock;
            if !value.is_empty() {
                value.push_str("; ");
            }
            if !cookie.name.is_empty() {
                value.push_str(&cookie.name);
                value.push('=');
            }
            value.push_str(&cookie.value);
        }
        Some(value)
    }

    /// Removes expired cookies (of `domain`, or of all), then if still over the cap the least
    /// recently used one (§5.7 "remove excess cookies").
    fn evict(&mut self, domain: Option<&str>, now: SystemTime) {
        let before = self.count;
        let mut removed = 0;
        for (name, list) in self.domains.iter_mut() {
            if domain.is_none_or(|d| d == name) {
                let len = list.len();
                list.retain(|c| !c.expired(now));
                removed += len - list.len();
            }
        }
        self.count = before - removed;
        let over = match domain {
            Some(d) => self.domains.get(d).map_or(0, Vec::len) > MAX_COOKIES_PER_DOMAIN,
            None => self.count > MAX_COOKIES,
        };
        if over {
            let oldest = self
                .domains
                .iter()
                .filter(|(name, _)| domain.is_none_or(|d| d == *name))
                .flat_map(|(name, list)| {
                    list.iter().enumerate().map(move |(i, c)| (c.used, name, i))
                })
                .min()
                .map(|(_, name, i)| (name.clone(), i));
            if let Some((name, i)) = oldest {
                if let Some(list) = self.domains.get_mut(&name) {
                    list.remove(i);
                    self.count -= 1;
                }
            }
        }
        self.domains.retain(|_, list| !list.is_empty());
    }

    fn forget_empty(&mut self, domain: &str) {
        if self.domains.get(domain).is_some_and(Vec::is_empty) {
            self.domains.remove(domain);
        }
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }
}

impl Cookie {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn value(&self) -> &str {
        &self.value
    }

    /// The host (host-only cookies) or the domain it is sent to, lower case, no leading dot.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Sent to its domain's host only (it came without a `Domain` attribute), not to the
    /// hosts below it.
    pub fn host_only(&self) -> bool {
        self.host_only
    }

    /// Sent over https only.
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// `HttpOnly`: kept, and sent as any other (it hides cookies from a browser's scripts).
    pub fn http_only(&self) -> bool {
        self.http_only
    }

    /// `SameSite`, as it came; the client does not act on it (it has no sites).
    pub fn same_site(&self) -> Option<SameSite> {
        self.same_site
    }

    /// When it stops being sent; `None` for a session cookie (kept as long as the jar).
    pub fn expires(&self) -> Option<SystemTime> {
        self.expires
    }

    fn expired(&self, now: SystemTime) -> bool {
        self.expires.is_some_and(|at| at <= now)
    }
}

impl fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieJar")
            .field("cookies", &self.lock().count)
            .finish()
    }
}

fn is_ip(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
}

/// §5.1.3: `host` is `domain`, or a name that ends with `.` and `domain`.
fn domain_matches(host: &str, domain: &str) -> bool {
    host == domain
        || (!is_ip(host)
            && host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

/// §5.1.4: the default path of a request path (its directory, without the last `/`).
fn default_path(path: &str) -> &str {
    let path = path.split('?').next().unwrap_or_default();
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// §5.1.4: a request path falls under a cookie path if they are equal, or the cookie path is a
/// prefix ending in `/` or followed by `/`.
fn path_matches(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie)
            && (cookie.ends_with('/') || request.as_bytes()[cookie.len()] == b'/'))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn target(url: &str) -> Target {
        Target::parse(url).unwrap()
    }

    /// Stores each line as from `url` at time 1000; what was kept.
    fn store(jar: &mut Store, url: &str, lines: &[&str]) -> Vec<bool> {
        let t = target(url);
        lines
            .iter()
            .map(|l| jar.store(&t, l.as_bytes(), at(1000)))
            .collect()
    }

    fn header(jar: &mut Store, url: &str) -> Option<String> {
        jar.header(&target(url), at(1000))
    }

    #[test]
    fn paths_match_and_default_as_rfc_6265bis_says() {
        assert_eq!(default_path("/"), "/");
        assert_eq!(default_path("/a"), "/");
        assert_eq!(default_path("/a/b?x=/y"), "/a");
        assert_eq!(default_path("/a/b/"), "/a/b");
        assert!(path_matches("/a", "/a"));
        assert!(path_matches("/a/b", "/a"));
        assert!(path_matches("/a/b", "/a/"));
        assert!(!path_matches("/ab", "/a"));
        assert!(!path_matches("/", "/a"));
        assert!(domain_matches("a.example.com", "example.com"));
        assert!(!domain_matches("aexample.com", "example.com"));
        assert!(!domain_matches("example.com", "a.example.com"));
        assert!(!domain_matches("10.0.0.1", "0.0.1"));
    }

    #[test]
    fn domains_are_checked_and_host_only_cookies_stay_on_their_host() {
        let mut jar = Store::default();
        let kept = store(
            &mut jar,
            "http://www.example.com/",
            &[
                "host=1",
                "dom=2; Domain=example.com",
                "other=3; Domain=example.org",
                "tld=4; Domain=com",
                "sub=5; Domain=deeper.www.example.com",
            ],
        );
        assert_eq!(kept, [true, true, false, false, false]);
        assert_eq!(
            header(&mut jar, "http://www.example.com/").as_deref(),
            Some("host=1; dom=2")
        );
        assert_eq!(
            header(&mut jar, "http://api.example.com/").as_deref(),
            Some("dom=2")
        );
        assert_eq!(
            header(&mut jar, "http://x.www.example.com/").as_deref(),
            Some("dom=2")
        );
        assert_eq!(header(&mut jar, "http://example.org/"), None);
        // A single label names the host itself: host-only. An address takes only itself.
        let kept = store(&mut jar, "http://localhost/", &["l=1; Domain=localhost"]);
        assert_eq!(kept, [true]);
        let kept = store(
            &mut jar,
            "http://10.0.0.1/",
            &["ip=1; Domain=10.0.0.1", "ip2=2; Domain=0.0.1"],
        );
        assert_eq!(kept, [true, false]);
        assert_eq!(
            header(&mut jar, "http://10.0.0.1/").as_deref(),
            Some("ip=1")
        );
    }

    #[test]
    fn same_name_domain_and_path_replaces_keeping_creation_order() {
        let mut jar = Store::default();
        let url = "https://example.com/a/b";
        store(&mut jar, url, &["a=1", "b=2; Path=/", "c=3; Path=/a/b/c"]);
        assert_eq!(
            header(&mut jar, "https://example.com/a/x").as_deref(),
            Some("a=1; b=2")
        );
        // Longest path first, then creation order; `a` replaced keeps its place before `b`.
        store(&mut jar, url, &["a=one", "b=two; Path=/a"]);
        assert_eq!(
            header(&mut jar, "https://example.com/a/b/c").as_deref(),
            Some("c=3; a=one; b=two; b=2")
        );
        assert_eq!(jar.count, 4);
        store(&mut jar, url, &["b=gone; Path=/a; Max-Age=0"]);
        assert_eq!(
            header(&mut jar, "https://example.com/a/b/c").as_deref(),
            Some("c=3; a=one; b=2")
        );
        assert_eq!(jar.count, 3);
    }

    #[test]
    fn secure_cookies_need_https_and_prefixes_their_rules() {
        let mut jar = Store::default();
        let kept = store(
            &mut jar,
            "https://example.com/",
            &[
                "s=1; Secure",
                "__Secure-a=2",
                "__Secure-b=3; Secure",
                "__Host-c=4; Secure; Domain=example.com",
                "__Host-d=5; Secure; Path=/",
                "__Hosté=6",
            ],
        );
        assert_eq!(kept, [true, false, true, false, true, true]);
        assert_eq!(
            header(&mut jar, "https://example.com/").as_deref(),
            Some("s=1; __Secure-b=3; __Host-d=5; __Hosté=6")
        );
        assert_eq!(
            header(&mut jar, "http://example.com/").as_deref(),
            Some("__Hosté=6")
        );
        // Not settable from http, nor shadowed from there.
        let kept = store(&mut jar, "http://example.com/", &["t=1; Secure", "s=plain"]);
        assert_eq!(kept, [false, false]);
    }

    #[test]
    fn caps_per_domain_and_overall_evict_the_least_recently_used() {
        let mut jar = Store::default();
        let url = "http://a.test/";
        for i in 0..MAX_COOKIES_PER_DOMAIN {
            store(&mut jar, url, &[&format!("c{i}=v")]);
        }
        // Sending every cookie makes them used; `c0` is then used again alone.
        header(&mut jar, url);
        store(&mut jar, "http://a.test/only", &["c0=v"]);
        store(&mut jar, url, &["new=v"]);
        assert_eq!(jar.count, MAX_COOKIES_PER_DOMAIN);
        let names: Vec<_> = jar.domains["a.test"]
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert!(!names.contains(&"c1".to_owned()), "{names:?}");
        assert!(names.contains(&"new".to_owned()) && names.contains(&"c0".to_owned()));

        let mut jar = Store::default();
        for d in 0..MAX_COOKIES / 30 {
            for i in 0..30 {
                store(
                    &mut jar,
                    &format!("http://d{d}.test/"),
                    &[&format!("c{i}=v")],
                );
            }
        }
        assert_eq!(jar.count, MAX_COOKIES);
        store(&mut jar, "http://last.test/", &["x=1"]);
        assert_eq!(jar.count, MAX_COOKIES);
        assert!(!jar.domains["d0.test"].iter().any(|c| c.name == "c0"));
        assert_eq!(
            header(&mut jar, "http://last.test/").as_deref(),
            Some("x=1")
        );
    }

    #[test]
    fn expired_cookies_are_not_sent_and_leave_the_count() {
        let mut jar = Store::default();
        let t = target("http://example.com/");
        jar.store(&t, b"a=1; Max-Age=10", at(1000));
        jar.store(&t, b"b=2", at(1000));
        assert_eq!(jar.header(&t, at(1009)).as_deref(), Some("a=1; b=2"));
        assert_eq!(jar.header(&t, at(1010)).as_deref(), Some("b=2"));
        assert_eq!(jar.count, 1);
    }
}
