//! Proxies: which requests go through one ([`Proxy`]: by scheme, less the `NO_PROXY`
//! exceptions), and the bytes that ask a proxy for something: the `CONNECT` that opens a
//! tunnel (RFC 9110 §9.3.6) and its answer. The connecting itself is `conn`'s.
//!
//! `http://` requests go to the proxy in absolute-form (RFC 9112 §3.2.2), on connections
//! shared by every `http` origin; `https://` ones (and WebSockets, `ws` and `wss`) through a
//! tunnel to their origin, TLS end to end inside it, one tunnel per origin.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use http::{HeaderValue, StatusCode, Uri};
use percent_encoding::percent_decode_str;

use super::conn::invalid_input;
use super::Origin;

/// Which requests go through which proxy: [`Proxy::http`], [`Proxy::https`], [`Proxy::all`]
/// or [`Proxy::from_env`], less the hosts [`Proxy::no_proxy`] names. Given to
/// [`ClientBuilder::proxy`](super::ClientBuilder::proxy).
///
/// A proxy URL is `http://[user:password@]host[:port]` (port 80 if none; no scheme is taken
/// as `http://`): the client speaks plain HTTP/1.1 to the proxy. The user information, if any
/// (percent-decoded), goes to the proxy as `Proxy-Authorization: Basic`, on every
/// absolute-form request and every `CONNECT`. TLS to the proxy itself (`https://` proxies)
/// and SOCKS are not supported.
#[derive(Clone, Debug, Default)]
pub struct Proxy {
    http: Option<Arc<Hop>>,
    https: Option<Arc<Hop>>,
    /// Hosts reached directly.
    bypass: NoProxy,
}

/// A proxy: where it is, and the credentials it is given.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Hop {
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `Proxy-Authorization`, from the proxy URL's user information.
    pub(crate) auth: Option<HeaderValue>,
}

/// The hosts a `NO_PROXY` list names.
#[derive(Clone, Debug, Default)]
struct NoProxy {
    /// `*`: every host.
    all: bool,
    addresses: Vec<IpAddr>,
    /// Lower case, without a leading `.` or `*.`: the name and every name below it.
    domains: Vec<String>,
}

/// A `CONNECT` the proxy answered with other than 2xx: the tunnel was not opened. In an
/// `io::Error` of kind `Other` ([`io::Error::get_ref`], then `downcast_ref`).
#[derive(Debug)]
pub struct ProxyError {
    status: StatusCode,
    authority: String,
}

impl ProxyError {
    /// The proxy's answer: 407 when it wants (other) credentials.
    pub fn status(&self) -> StatusCode {
        self.status
    }
}

impl fmt::Display for ProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the proxy refused a tunnel to {}: {}",
            self.authority, self.status
        )
    }
}

impl std::error::Error for ProxyError {}

impl Proxy {
    /// `http://` requests (and `ws://` WebSockets, in a tunnel) go through `url`; `https://`
    /// ones go directly.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a URL that is not `http://[user:password@]host[:port]`.
    pub fn http(url: &str) -> io::Result<Proxy> {
        Ok(Proxy {
            http: Some(Arc::new(Hop::parse(url)?)),
            ..Proxy::default()
        })
    }

    /// `https://` requests (and `wss://` WebSockets) go through a tunnel that `url` opens;
    /// `http://` ones go directly.
    ///
    /// # Errors
    ///
    /// As [`Proxy::http`].
    pub fn https(url: &str) -> io::Result<Proxy> {
        Ok(Proxy {
            https: Some(Arc::new(Hop::parse(url)?)),
            ..Proxy::default()
        })
    }

    /// Every request goes through `url`.
    ///
    /// # Errors
    ///
    /// As [`Proxy::http`].
    pub fn all(url: &str) -> io::Result<Proxy> {
        let hop = Arc::new(Hop::parse(url)?);
        Ok(Proxy {
            http: Some(hop.clone()),
            https: Some(hop),
            ..Proxy::default()
        })
    }

    /// The proxies the environment names, as curl reads them: `http_proxy` (or `HTTP_PROXY`,
    /// unless `REQUEST_METHOD` says the program runs as a CGI script, where `HTTP_PROXY` comes
    /// from a request's `Proxy` header: "httpoxy"), `https_proxy` or `HTTPS_PROXY`, either
    /// falling back to `all_proxy` or `ALL_PROXY`, and the hosts `no_proxy` or `NO_PROXY`
    /// exempts. Lower case wins; empty variables count as unset. With none set, no request is
    /// proxied.
    ///
    /// # Errors
    ///
    /// As [`Proxy::http`], for a variable's URL.
    pub fn from_env() -> io::Result<Proxy> {
        Proxy::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`Proxy::from_env`] reading the variables through `lookup` (for tests, or an
    /// environment of the caller's own).
    ///
    /// # Errors
    ///
    /// As [`Proxy::http`], for a variable's URL.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> io::Result<Proxy> {
        let get = |names: &[&str]| {
            let found = names.iter().find_map(|name| lookup(name));
            found.filter(|v| !v.trim().is_empty())
        };
        let all = get(&["all_proxy", "ALL_PROXY"]);
        let cgi = lookup("REQUEST_METHOD").is_some();
        let http = match cgi {
            true => get(&["http_proxy"]),
            false => get(&["http_proxy", "HTTP_PROXY"]),
        };
        let hop = |url: Option<String>| -> io::Result<Option<Arc<Hop>>> {
            url.or_else(|| all.clone())
                .map(|url| Hop::parse(url.trim()).map(Arc::new))
                .transpose()
        };
        let mut proxy = Proxy {
            http: hop(http)?,
            https: hop(get(&["https_proxy", "HTTPS_PROXY"]))?,
            ..Proxy::default()
        };
        if let Some(list) = get(&["no_proxy", "NO_PROXY"]) {
            proxy = proxy.no_proxy(&list);
        }
        Ok(proxy)
    }

    /// Hosts reached directly, as a `NO_PROXY` list: comma-separated, each an address
    /// (`127.0.0.1`, `::1`, matched exactly) or a domain name (`example.com`,
    /// `.example.com` and `*.example.com` alike: that name and every name below it), or `*`
    /// for every host. Case does not matter; ports are not looked at. Adds to the hosts named
    /// before.
    pub fn no_proxy(mut self, list: &str) -> Proxy {
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let bare = entry.trim_start_matches('[').trim_end_matches(']');
            if entry == "*" {
                self.bypass.all = true;
            } else if let Ok(ip) = bare.parse::<IpAddr>() {
                self.bypass.addresses.push(ip);
            } else {
                let domain = entry.trim_start_matches("*.").trim_start_matches('.');
                self.bypass.domains.push(domain.to_ascii_lowercase());
            }
        }
        self
    }

    /// `self` with `other`'s proxies for the schemes `other` has one for, and the hosts both
    /// exempt ([`ClientBuilder::proxy`](super::ClientBuilder::proxy) called again).
    pub(super) fn merged(mut self, other: Proxy) -> Proxy {
        self.http = other.http.or(self.http);
        self.https = other.https.or(self.https);
        self.bypass.all |= other.bypass.all;
        self.bypass.addresses.extend(other.bypass.addresses);
        self.bypass.domains.extend(other.bypass.domains);
        self
    }

    /// Whether no request goes through a proxy.
    pub(super) fn is_empty(&self) -> bool {
        self.http.is_none() && self.https.is_none()
    }

    /// The proxy requests to `origin` go through, if any: by its scheme (`ws` is `http`'s).
    pub(super) fn for_origin(&self, origin: &Origin) -> Option<&Arc<Hop>> {
        let hop = match origin.https {
            true => self.https.as_ref(),
            false => self.http.as_ref(),
        };
        hop.filter(|_| !self.bypass.covers(&origin.host))
    }
}

impl NoProxy {
    fn covers(&self, host: &str) -> bool {
        if self.all {
            return true;
        }
        if let Ok(ip) = host.parse::<IpAddr>() {
            return self.addresses.contains(&ip);
        }
        let host = host.trim_end_matches('.');
        self.domains.iter().any(|d| {
            let d = d.trim_end_matches('.');
            host.eq_ignore_ascii_case(d)
                || (host.len() > d.len()
                    && host[host.len() - d.len()..].eq_ignore_ascii_case(d)
                    && host.as_bytes()[host.len() - d.len() - 1] == b'.')
        })
    }
}

impl Hop {
    /// `http://[user:password@]host[:port][/]`, or the same without `http://`.
    fn parse(url: &str) -> io::Result<Hop> {
        let bad = |why: &str| invalid_input(format!("proxy URL `{url}`: {why}"));
        let full = match url.contains("://") {
            true => url.to_owned(),
            false => format!("http://{url}"),
        };
        let uri: Uri = full.parse().map_err(|e| bad(&format!("{e}")))?;
        if !uri
            .scheme_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("http"))
        {
            return Err(bad("only http:// proxies are supported"));
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err(bad("a proxy URL has no path"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let auth = match authority.as_str().rsplit_once('@') {
            None => None,
            Some((userinfo, _)) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |s: &str| percent_decode_str(s).collect::<Vec<u8>>();
                let mut credentials = decode(user);
                credentials.push(b':');
                credentials.extend(decode(password));
                let basic = format!("Basic {}", BASE64.encode(credentials));
                let mut value = HeaderValue::try_from(basic).map_err(|_| bad("credentials"))?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(Hop {
            host: host.to_owned(),
            port: authority.port_u16().unwrap_or(80),
            auth,
        })
    }
}

/// The `CONNECT` request that asks `hop` for a tunnel to `origin` (RFC 9110 §9.3.6, RFC 9112
/// §3.2.3: authority-form, and the same `Host`).
pub(super) fn connect_request(hop: &Hop, origin: &Origin) -> Vec<u8> {
    let authority = match origin.host.contains(':') {
        true => format!("[{}]:{}", origin.host, origin.port),
        false => format!("{}:{}", origin.host, origin.port),
    };
    let mut head = Vec::with_capacity(128);
    head.extend_from_slice(b"CONNECT ");
    head.extend_from_slice(authority.as_bytes());
    head.extend_from_slice(b" HTTP/1.1\r\n");
    volt_proto::write_header(&mut head, b"host", authority.as_bytes());
    if let Some(auth) = &hop.auth {
        volt_proto::write_header(&mut head, b"proxy-authorization", auth.as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// The proxy's answer to `CONNECT`: a 2xx opens the tunnel (RFC 9110 §9.3.6), anything else
/// is a [`ProxyError`].
pub(super) fn check_answer(status: StatusCode, origin: &Origin) -> io::Result<()> {
    if status.is_success() {
        return Ok(());
    }
    Err(io::Error::other(ProxyError {
        status,
        authority: format!("{}:{}", origin.host, origin.port),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(https: bool, host: &str) -> Origin {
        Origin {
            https,
            host: host.into(),
            port: 443,
        }
    }

    #[test]
    fn proxy_urls_give_the_host_port_and_basic_credentials() {
        let hop = Hop::parse("http://al%40ice:s%3Acret@proxy.test:3128").unwrap();
        assert_eq!((hop.host.as_str(), hop.port), ("proxy.test", 3128));
        // base64("al@ice:s:cret")
        assert_eq!(hop.auth.unwrap(), "Basic YWxAaWNlOnM6Y3JldA==");
        let hop = Hop::parse("proxy.test").unwrap();
        assert_eq!(
            (hop.host.as_str(), hop.port, hop.auth),
            ("proxy.test", 80, None)
        );
        let hop = Hop::parse("http://[::1]:8080/").unwrap();
        assert_eq!((hop.host.as_str(), hop.port), ("::1", 8080));
        for bad in [
            "https://p.test",
            "socks5://p.test:1080",
            "http://p.test/x",
            "http://",
        ] {
            let err = Hop::parse(bad).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
    }

    #[test]
    fn the_environment_is_read_as_curl_reads_it() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                let found = vars.iter().find(|(k, _)| *k == name);
                found.map(|(_, v)| v.to_string())
            }
        };
        let p = Proxy::from_lookup(env(&[
            ("HTTP_PROXY", "http://upper.test:1"),
            ("http_proxy", "http://lower.test:2"),
            ("HTTPS_PROXY", "tunnel.test:3"),
            ("NO_PROXY", "internal.test"),
        ]))
        .unwrap();
        let via = |p: &Proxy, https, host| p.for_origin(&origin(https, host)).cloned();
        assert_eq!(via(&p, false, "a.test").unwrap().host, "lower.test");
        assert_eq!(via(&p, true, "a.test").unwrap().port, 3);
        assert!(via(&p, true, "x.internal.test").is_none());
        // Under CGI, HTTP_PROXY may be a request's `Proxy` header: ignored.
        let p = Proxy::from_lookup(env(&[
            ("HTTP_PROXY", "http://attacker.test"),
            ("REQUEST_METHOD", "GET"),
        ]))
        .unwrap();
        assert!(p.is_empty());
        let p = Proxy::from_lookup(env(&[("ALL_PROXY", "all.test"), ("https_proxy", "")])).unwrap();
        assert_eq!(via(&p, true, "a.test").unwrap().host, "all.test");
        assert!(Proxy::from_lookup(env(&[])).unwrap().is_empty());
        let err = Proxy::from_lookup(env(&[("http_proxy", "socks5://s.test")])).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn no_proxy_names_domains_addresses_and_everything() {
        let list = " Example.com, .dot.test,*.star.test ,10.1.2.3, [::1], ";
        let p = Proxy::all("p.test").unwrap().no_proxy(list);
        let direct = |host: &str| p.for_origin(&origin(false, host)).is_none();
        for host in [
            "example.com",
            "a.b.example.COM",
            "dot.test",
            "x.dot.test",
            "y.star.test",
        ] {
            assert!(direct(host), "{host}");
        }
        for host in [
            "badexample.com",
            "example.com.evil.test",
            "10.1.2.4",
            "test",
            "::2",
        ] {
            assert!(!direct(host), "{host}");
        }
        assert!(direct("10.1.2.3") && direct("::1"));
        let p = Proxy::all("p.test").unwrap().no_proxy("*");
        assert!(p.for_origin(&origin(true, "any.test")).is_none());
        // Per scheme: an http-only proxy leaves https direct.
        let p = Proxy::http("p.test").unwrap();
        assert!(p.for_origin(&origin(false, "a.test")).is_some());
        assert!(p.for_origin(&origin(true, "a.test")).is_none());
        // Set again: the schemes the later one names are its, the exemptions add up.
        let p = p
            .no_proxy("one.test")
            .merged(Proxy::https("q.test").unwrap().no_proxy("two.test"));
        assert_eq!(
            p.for_origin(&origin(false, "a.test")).unwrap().host,
            "p.test"
        );
        assert_eq!(
            p.for_origin(&origin(true, "a.test")).unwrap().host,
            "q.test"
        );
        assert!(p.for_origin(&origin(true, "one.test")).is_none());
        assert!(p.for_origin(&origin(false, "two.test")).is_none());
    }

    #[test]
    fn connect_asks_for_the_origins_authority_with_credentials() {
        let hop = Hop::parse("http://u:p@proxy.test:3128").unwrap();
        let head = connect_request(&hop, &origin(true, "example.com"));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\
             proxy-authorization: Basic dTpw\r\n\r\n"
        );
        let head = connect_request(&Hop::parse("p.test").unwrap(), &origin(true, "::1"));
        assert!(head.starts_with(b"CONNECT [::1]:443 HTTP/1.1\r\nhost: [::1]:443\r\n\r\n"));
        let err = check_answer(
            StatusCode::PROXY_AUTHENTICATION_REQUIRED,
            &origin(true, "e.test"),
        )
        .unwrap_err();
        let refused = err.get_ref().unwrap().downcast_ref::<ProxyError>().unwrap();
        assert_eq!(refused.status(), 407);
        assert_eq!(
            err.to_string(),
            "the proxy refused a tunnel to e.test:443: 407 Proxy Authentication Required"
        );
        assert!(check_answer(StatusCode::OK, &origin(true, "e.test")).is_ok());
    }
}
