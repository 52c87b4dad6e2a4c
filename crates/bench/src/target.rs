//! Where the load goes: `http://` and `https://` URLs split into the address to connect to and the request
//! target to send.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::Error;

/// A parsed `http[s]://host[:port][/path][?query]` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    /// `host` or `host:port` as written (IPv6 hosts keep their brackets): the `Host` header.
    pub authority: String,
    /// The host without brackets, for name resolution.
    pub host: String,
    pub port: u16,
    /// Path and query, at least `/`.
    pub target: String,
    /// `https://`: the connection is TLS.
    pub tls: bool,
}

impl Url {
    pub(crate) fn parse(url: &str) -> Result<Url, Error> {
        let (tls, rest) = match url.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
            Some((scheme, _)) => {
                return Err(Error::url(url, format!("unsupported scheme `{scheme}`")))
            }
            None => return Err(Error::url(url, "must start with http:// or https://")),
        };
        // The fragment is never sent.
        let rest = rest.split('#').next().unwrap_or_default();
        let (authority, target) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'?' => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return Err(Error::url(url, "user information in URLs is not supported"));
        }
        if let Some(b) = target.bytes().find(|b| !b.is_ascii_graphic()) {
            return Err(Error::url(
                url,
                format!("the path contains byte {b:#04x}; percent-encode it"),
            ));
        }
        let (host, port) = split_host_port(authority)
            .ok_or_else(|| Error::url(url, "the host is not `name`, `name:port` or `[v6]:port`"))?;
        if host.is_empty() {
            return Err(Error::url(url, "no host"));
        }
        Ok(Url {
            authority: authority.to_string(),
            host: host.to_string(),
            port: port.unwrap_or(if tls { 443 } else { 80 }),
            target,
            tls,
        })
    }

    /// `host:port`, for messages.
    pub(crate) fn host_port(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// Resolves the host. Every address is returned; connections go to the first one.
    pub(crate) fn resolve(&self) -> Result<Vec<SocketAddr>, Error> {
        let resolve_error = |source| Error::Resolve {
            authority: self.host_port(),
            source,
        };
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(resolve_error)?
            .collect();
        if addrs.is_empty() {
            return Err(resolve_error(std::io::Error::other("no addresses")));
        }
        Ok(addrs)
    }
}

fn split_host_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => (host, Some(port)),
            Some(_) => return None, // a bare IPv6 address needs brackets
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok().filter(|&p| p != 0)?),
        None => None,
    };
    Some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_shapes() {
        let u = Url::parse("http://127.0.0.1:8080/plaintext").unwrap();
        assert_eq!(u.authority, "127.0.0.1:8080");
        assert_eq!((u.host.as_str(), u.port), ("127.0.0.1", 8080));
        assert_eq!(u.target, "/plaintext");

        let u = Url::parse("http://localhost").unwrap();
        assert_eq!((u.port, u.target.as_str()), (80, "/"));

        let u = Url::parse("HTTP://[::1]:9000/a?b=c#frag").unwrap();
        assert_eq!(u.authority, "[::1]:9000");
        assert_eq!((u.host.as_str(), u.port), ("::1", 9000));
        assert_eq!(u.target, "/a?b=c");
        assert_eq!(u.host_port(), "[::1]:9000");

        let u = Url::parse("http://example.com?q=1").unwrap();
        assert_eq!(u.target, "/?q=1");
        assert!(!u.tls);

        let u = Url::parse("https://localhost/x").unwrap();
        assert_eq!((u.port, u.target.as_str(), u.tls), (443, "/x", true));
        let u = Url::parse("HTTPS://[::1]:8443").unwrap();
        assert_eq!((u.port, u.tls), (8443, true));
    }

    #[test]
    fn rejects_what_it_cannot_send() {
        for bad in [
            "127.0.0.1:8080/",
            "ftp://example.com/",
            "http://",
            "http://host:notaport/",
            "http://host:0/",
            "http://host:70000/",
            "http://::1/",
            "http://user@host/",
            "http://host/a b",
        ] {
            let err = Url::parse(bad).unwrap_err();
            assert!(err.is_usage(), "{bad}: {err}");
        }
        let err = Url::parse("ftp://x/").unwrap_err().to_string();
        assert!(err.contains("unsupported scheme `ftp`"), "{err}");
    }
}
