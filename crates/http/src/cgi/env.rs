//! The meta-variables a script gets in its environment (RFC 3875 §4.1), and nothing else of the
//! server's environment.

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use super::CONNECTION_FIELDS;
use crate::Request;

/// A script's environment: name and value pairs.
pub(super) type Env = Vec<(OsString, OsString)>;

/// `PATH` when the gateway's settings name none.
pub(super) const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Request header fields not passed as `HTTP_*` (§4.1.18): credentials (the server does not
/// authenticate, and passing them would show every script the client's password), the two
/// that have meta-variables of their own, and those about one connection. `Proxy` is not a
/// standard field: as `HTTP_PROXY` it would pass for the proxy setting most HTTP libraries read
/// from the environment, handing the client the script's outgoing requests (httpoxy,
/// CVE-2016-5385). The fields about one connection ([`CONNECTION_FIELDS`]) are not passed either.
const NOT_PASSED: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "content-length",
    "content-type",
    "proxy",
];
fn push(env: &mut Env, name: &str, value: impl Into<OsString>) {
    env.push((name.into(), value.into()));
}

/// The meta-variables that depend on the request only (those that depend on where the script
/// was found are [`script_variables`]'). `content_length` is the body's length if it has one.
pub(super) fn request_variables(req: &Request, content_length: Option<u64>) -> Env {
    let mut env = Env::with_capacity(24);
    push(&mut env, "GATEWAY_INTERFACE", "CGI/1.1");
    push(
        &mut env,
        "SERVER_SOFTWARE",
        concat!("volt/", env!("CARGO_PKG_VERSION")),
    );
    push(&mut env, "SERVER_PROTOCOL", format!("{:?}", req.version()));
    push(&mut env, "REQUEST_METHOD", req.method().as_str());
    // §4.1.7: set, and empty when the target has no query.
    push(&mut env, "QUERY_STRING", req.query_string().unwrap_or(""));
    // §4.1.1: volt authenticates no one; the scheme the client offered is passed, never its
    // credentials (and `REMOTE_USER` is not set).
    if let Some(scheme) = req
        .header("authorization")
        .and_then(|v| v.split_ascii_whitespace().next())
    {
        push(&mut env, "AUTH_TYPE", scheme);
    }
    // §4.1.2, §4.1.3: only for a request with a body.
    if let Some(length) = content_length.filter(|&n| n > 0) {
        push(&mut env, "CONTENT_LENGTH", length.to_string());
        if let Some(ct) = req.header_bytes("content-type") {
            push(&mut env, "CONTENT_TYPE", OsString::from_vec(ct.to_vec()));
        }
    }
    if let Some(remote) = req.remote_addr() {
        let ip = remote.ip().to_string();
        // §4.1.9: the address stands for the name, as no lookup is made.
        push(&mut env, "REMOTE_HOST", ip.clone());
        push(&mut env, "REMOTE_ADDR", ip);
        push(&mut env, "REMOTE_PORT", remote.port().to_string());
    }
    let local = req.local_addr();
    push(
        &mut env,
        "SERVER_NAME",
        server_name(req.header("host"), local),
    );
    if let Some(local) = local {
        push(&mut env, "SERVER_PORT", local.port().to_string());
    }
    header_variables(req, &mut env);
    env
}

/// §4.1.14: the host the client asked for (`Host`, or `:authority` on HTTP/2, port dropped),
/// else the server's own address.
fn server_name(host: Option<&str>, local: Option<SocketAddr>) -> String {
    match host {
        Some(host) if host.starts_with('[') => match host.find(']') {
            Some(end) => host[..=end].to_owned(),
            None => host.to_owned(),
        },
        Some(host) => host.split(':').next().unwrap_or(host).to_owned(),
        None => match local.map(|a| a.ip()) {
            Some(IpAddr::V6(ip)) => format!("[{ip}]"),
            Some(ip) => ip.to_string(),
            None => "localhost".to_owned(),
        },
    }
}

/// `HTTP_*` for each request header field but [`NOT_PASSED`], [`CONNECTION_FIELDS`] and those
/// `Connection` names
/// (§4.1.18): the name upper-cased, `-` as `_`; repeated fields joined into one value with
/// `, ` (`; ` for `Cookie`, which HTTP/2 splits into one field per cookie). A name with an
/// `_` is dropped: `X_Forwarded_For` would reach the script as the `X-Forwarded-For` a proxy
/// in front vouched for.
fn header_variables(req: &Request, env: &mut Env) {
    let listed_in_connection: Vec<String> = req
        .headers()
        .filter(|(name, _)| name.eq_ignore_ascii_case("connection"))
        .flat_map(|(_, value)| volt_proto::list_elements(value))
        .map(|token| String::from_utf8_lossy(token).to_ascii_lowercase())
        .collect();
    let mut fields: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, value) in req.headers() {
        let lower = name.to_ascii_lowercase();
        if name.is_empty()
            || name.contains('_')
            || NOT_PASSED.contains(&lower.as_str())
            || CONNECTION_FIELDS.contains(&lower.as_str())
            || listed_in_connection.contains(&lower)
        {
            continue;
        }
        let variable: String = "HTTP_"
            .chars()
            .chain(name.chars().map(|c| match c {
                '-' => '_',
                c => c.to_ascii_uppercase(),
            }))
            .collect();
        match fields.iter_mut().find(|(v, _)| *v == variable) {
            Some((_, joined)) => {
                joined.extend_from_slice(if lower == "cookie" { b"; " } else { b", " });
                joined.extend_from_slice(value);
            }
            None => fields.push((variable, value.to_vec())),
        }
    }
    for (variable, value) in fields {
        env.push((variable.into(), OsString::from_vec(value)));
    }
}

/// The meta-variables that depend on where the script was found: `SCRIPT_NAME` (§4.1.13,
/// `mount` then the segments naming the script), `PATH_INFO` (§4.1.5, the segments after
/// them, decoded; unset when there are none) and `PATH_TRANSLATED` (§4.1.6, `PATH_INFO` under
/// `document_root`; unset with `PATH_INFO`).
pub(super) fn script_variables(
    env: &mut Env,
    mount: &str,
    segments: &[String],
    depth: usize,
    document_root: &Path,
) {
    let script_name = segments[..depth]
        .iter()
        .fold(mount.to_owned(), |name, s| name + "/" + s);
    push(env, "SCRIPT_NAME", script_name);
    let rest = &segments[depth..];
    if !rest.is_empty() {
        let path_info: String = rest.iter().flat_map(|s| ["/", s.as_str()]).collect();
        let mut translated = document_root.as_os_str().to_owned();
        translated.push(&path_info);
        push(env, "PATH_INFO", path_info);
        env.push(("PATH_TRANSLATED".into(), translated));
    }
}

#[cfg(test)]
mod tests {
    use super::server_name;

    #[test]
    fn server_name_is_the_host_without_its_port() {
        let local = Some("127.0.0.1:8080".parse().unwrap());
        assert_eq!(server_name(Some("example.com:8080"), local), "example.com");
        assert_eq!(server_name(Some("example.com"), local), "example.com");
        assert_eq!(server_name(Some("[::1]:8080"), local), "[::1]");
        assert_eq!(server_name(None, local), "127.0.0.1");
        assert_eq!(
            server_name(None, Some("[::1]:80".parse().unwrap())),
            "[::1]"
        );
    }
}
