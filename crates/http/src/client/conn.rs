//! One HTTP/1.1 connection of the client: the socket (plain or TLS), its read buffer, and the
//! reading and writing of one exchange at a time.

use std::future::{poll_fn, Future};
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version};
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use volt_proto::{BodyKind, Limits};
use volt_rt::net::TcpStream;
use volt_rt::time::{timeout, timeout_at};

use super::{proxy, Origin, Route};

/// Least free room in the read buffer before a read.
const MIN_READ: usize = 8 * 1024;

/// A new connection, by the protocol it speaks.
pub(super) enum Connected {
    H1(Conn),
    /// Requests are multiplexed over it once it runs ([`super::http2::drive`]); boxed: the
    /// connection's state is over a KiB, made once per connection.
    H2(Box<super::http2::Opened>),
}

/// The byte stream under a connection.
pub(crate) enum Stream {
    Tcp(TcpStream),
    /// Boxed: the session state is a few KiB.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// A connection along one route (to an origin, or to a proxy), idle between exchanges.
pub(super) struct Conn {
    stream: Stream,
    /// Bytes read and not yet taken: the rest of a head, or body bytes.
    pub(super) buf: BytesMut,
    pub(super) route: Route,
}

/// How much of a request went out.
pub(super) enum Sent {
    Whole,
    /// Cut short: the server answered, or closed, before the end (a 413 refusing an upload
    /// at its head), and may read no more of it.
    Answered,
}

/// A response head, owned (the spans it was parsed into point into the read buffer, which
/// the body then consumes).
pub(super) struct Head {
    pub(super) status: StatusCode,
    pub(super) version: Version,
    pub(super) headers: HeaderMap,
    pub(super) body: BodyKind,
    pub(super) keep_alive: bool,
}

impl Head {
    /// This head, on a connection that carries no request after it.
    pub(super) fn last(self) -> Head {
        Head {
            keep_alive: false,
            ..self
        }
    }
}

impl Conn {
    /// Resolves the host the route goes to first, the origin's or the proxy's (off the
    /// worker, on the blocking pool, unless it is an address), connects to the first address
    /// that answers, has a proxy open a tunnel if the route goes through one, and for `https`
    /// completes the TLS handshake with the origin, all within `timeout`. The connection
    /// speaks HTTP/2 if TLS's ALPN chose `h2`, or if `prior_knowledge` says the server speaks
    /// it on a plain port.
    pub(super) async fn connect(
        route: Route,
        tls: Option<Arc<rustls::ClientConfig>>,
        prior_knowledge: bool,
        timeout: Duration,
        limits: &Limits,
    ) -> io::Result<Connected> {
        let deadline = volt_rt::time::now() + timeout;
        let connected = timeout_at(deadline, async {
            let (host, port) = match &route {
                Route::Direct(origin) => (&*origin.host, origin.port),
                Route::Forward(hop) | Route::Tunnel(hop, _) => (hop.host.as_str(), hop.port),
            };
            let addrs = resolve(host, port).await?;
            let mut tcp = connect_any(&addrs).await?;
            tcp.set_nodelay(true)?;
            if let Route::Tunnel(hop, origin) = &route {
                tcp = tunnel(tcp, hop, origin, limits, deadline).await?;
            }
            let Some(config) = tls else {
                return Ok((Stream::Tcp(tcp), prior_knowledge));
            };
            let (Route::Direct(origin) | Route::Tunnel(_, origin)) = &route else {
                return Err(invalid_input("TLS to a forward proxy"));
            };
            let name = ServerName::try_from(origin.host.to_string())
                .map_err(|e| invalid_input(format!("TLS server name: {e}")))?;
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await?;
            let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
            Ok::<_, io::Error>((Stream::Tls(Box::new(tls)), h2))
        });
        let (stream, h2) = connected.await.map_err(|_| timed_out("connecting"))??;
        if h2 {
            let handshake = timeout_at(deadline, super::http2::handshake(stream, limits));
            let opened = handshake.await.map_err(|_| timed_out("connecting"))??;
            return Ok(Connected::H2(Box::new(opened)));
        }
        Ok(Connected::H1(Conn {
            stream,
            buf: BytesMut::new(),
            route,
        }))
    }

    /// The stream and what was read past the last head: for a connection that stops being
    /// HTTP (a WebSocket's, after its 101).
    pub(super) fn into_parts(self) -> (Stream, BytesMut) {
        (self.stream, self.buf)
    }

    /// Writes all of `bytes`, each write within `wait` of the last one that made progress (a
    /// large body on a slow link is not cut short while it moves), unless the server answers
    /// first: while the socket takes no more, what the server sends is read into the buffer,
    /// and a final response head there (or the server's close) ends the write early, with
    /// [`Sent::Answered`].
    pub(super) async fn write_all(
        &mut self,
        mut bytes: &[u8],
        wait: Duration,
        limits: &Limits,
    ) -> io::Result<Sent> {
        loop {
            // `None`: some bytes went out.
            let step = poll_fn(|cx| {
                if bytes.is_empty() {
                    let flushed = Pin::new(&mut self.stream).poll_flush(cx);
                    return flushed.map_ok(|()| Some(Sent::Whole));
                }
                match Pin::new(&mut self.stream).poll_write(cx, bytes) {
                    Poll::Ready(Ok(0)) => Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                    Poll::Ready(Ok(n)) => {
                        bytes = &bytes[n..];
                        Poll::Ready(Ok(None))
                    }
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => self.poll_answer(cx, limits).map_ok(Some),
                }
            });
            let step = timeout(wait, step).await;
            if let Some(sent) = step.map_err(|_| timed_out("sending the request"))?? {
                return Ok(sent);
            }
        }
    }

    /// While a write waits for room: reads what the server sends meanwhile. Ready once it has
    /// answered (a final head, or anything that cannot start one) or closed.
    fn poll_answer(&mut self, cx: &mut Context<'_>, limits: &Limits) -> Poll<io::Result<Sent>> {
        loop {
            if self.answered(limits) {
                return Poll::Ready(Ok(Sent::Answered));
            }
            self.buf.reserve(MIN_READ);
            let read = tokio_util::io::poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.buf);
            match read {
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(Sent::Answered)),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }

    /// Whether the buffer holds a final response head after any interim ones, or bytes that
    /// cannot start a response (for [`read_head`](Conn::read_head) to report).
    fn answered(&self, limits: &Limits) -> bool {
        let mut at = 0;
        loop {
            match volt_proto::parse_response(&self.buf[at..], limits, false) {
                Ok(Some(head)) if head.status.is_informational() => at += head.head_len,
                Ok(Some(_)) | Err(_) => return true,
                Ok(None) => return false,
            }
        }
    }

    /// After a head that asked for `Expect: 100-continue`: waits up to `wait` for a 100,
    /// which is taken off the buffer (so is any other interim response), then `Whole`: the
    /// body is to go. `Answered` if a final response, bytes that cannot start one, or the
    /// close came first (left for [`read_head`](Conn::read_head)); `Whole` too after `wait`.
    pub(super) async fn await_continue(
        &mut self,
        wait: Duration,
        limits: &Limits,
    ) -> io::Result<Sent> {
        let deadline = volt_rt::time::now() + wait;
        loop {
            match volt_proto::parse_response(&self.buf, limits, false) {
                // (A 101 is left for `read_head` to refuse.)
                Ok(Some(head))
                    if head.status.is_informational()
                        && head.status != StatusCode::SWITCHING_PROTOCOLS =>
                {
                    let go = head.status == StatusCode::CONTINUE;
                    self.buf.advance(head.head_len);
                    if go {
                        return Ok(Sent::Whole);
                    }
                }
                Ok(Some(_)) | Err(_) => return Ok(Sent::Answered),
                Ok(None) => match self.read_more(deadline).await {
                    Ok(0) => return Ok(Sent::Answered),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(Sent::Whole),
                    Err(e) => return Err(e),
                },
            }
        }
    }

    /// Reads more bytes into the buffer by `deadline`; `Ok(0)` when the server closed.
    pub(super) async fn read_more(&mut self, deadline: Instant) -> io::Result<usize> {
        self.buf.reserve(MIN_READ);
        let read = timeout_at(deadline, async {
            poll_fn(|cx| {
                tokio_util::io::poll_read_buf(Pin::new(&mut self.stream), cx, &mut self.buf)
            })
            .await
        });
        read.await
            .map_err(|_| timed_out("waiting for the response"))?
    }

    /// Reads the response head by `deadline`, skipping interim (1xx) responses. `received`
    /// says whether any byte of a response arrived, for the caller's retry rule.
    pub(super) async fn read_head(
        &mut self,
        limits: &Limits,
        head_request: bool,
        deadline: Instant,
        received: &mut bool,
    ) -> io::Result<Head> {
        loop {
            if !self.buf.is_empty() {
                *received = true;
                let parsed = volt_proto::parse_response(&self.buf, limits, head_request)
                    .map_err(|e| invalid_data(format!("bad response head: {e}")))?;
                if let Some(head) = parsed {
                    let status = head.status;
                    if status == StatusCode::SWITCHING_PROTOCOLS {
                        return Err(invalid_data("101 Switching Protocols is not supported"));
                    }
                    if status.is_informational() {
                        // 100 Continue, 103 Early Hints: the final response follows.
                        self.buf.advance(head.head_len);
                        continue;
                    }
                    let mut headers = HeaderMap::with_capacity(head.headers.len());
                    for field in &head.headers {
                        let name = HeaderName::from_bytes(field.name.get(&self.buf));
                        let value = HeaderValue::from_bytes(field.value.get(&self.buf));
                        let (Ok(name), Ok(value)) = (name, value) else {
                            return Err(invalid_data("bad response header field"));
                        };
                        headers.append(name, value);
                    }
                    self.buf.advance(head.head_len);
                    return Ok(Head {
                        status,
                        version: head.version,
                        headers,
                        body: head.body,
                        keep_alive: head.keep_alive,
                    });
                }
            }
            if self.read_more(deadline).await? == 0 {
                let e = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection before the response head",
                );
                return Err(e);
            }
        }
    }

    /// Whether an idle connection can carry another request: the server has neither closed
    /// it nor sent anything unasked (a read now would wait). Never waits.
    pub(super) fn is_reusable(&mut self) -> bool {
        let mut scratch = [0u8; 64];
        let mut buf = ReadBuf::new(&mut scratch);
        let mut cx = Context::from_waker(Waker::noop());
        let pending = Pin::new(&mut self.stream)
            .poll_read(&mut cx, &mut buf)
            .is_pending();
        self.buf.is_empty() && pending
    }
}

/// Asks the proxy at the other end of `tcp` for a tunnel to `origin` (RFC 9110 §9.3.6) by
/// `deadline`; the socket, now the tunnel, once it answered 2xx.
async fn tunnel(
    tcp: TcpStream,
    hop: &proxy::Hop,
    origin: &Origin,
    limits: &Limits,
    deadline: Instant,
) -> io::Result<TcpStream> {
    let mut conn = Conn {
        stream: Stream::Tcp(tcp),
        buf: BytesMut::new(),
        route: Route::Direct(origin.clone()),
    };
    let request = proxy::connect_request(hop, origin);
    let wait = deadline.saturating_duration_since(volt_rt::time::now());
    conn.write_all(&request, wait, limits).await?;
    // RFC 9110 §9.3.6: a 2xx has no content; whatever follows it is the tunnel's.
    let head = conn.read_head(limits, true, deadline, &mut false).await?;
    proxy::check_answer(head.status, origin)?;
    let (Stream::Tcp(tcp), rest) = conn.into_parts() else {
        return Err(io::Error::other("a tunnel over TLS")); // (made over TCP just above)
    };
    if !rest.is_empty() {
        // TLS speaks first from the client: a proxy that sends more is not tunnelling.
        return Err(invalid_data(
            "the proxy sent bytes before the tunnel was used",
        ));
    }
    Ok(tcp)
}

/// The addresses of `host`: parsed if it is an address, else looked up on the blocking pool
/// (`getaddrinfo` may take seconds, and the worker must not wait for it).
async fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let host = host.to_owned();
    let looked_up = volt_rt::spawn_blocking(move || {
        (host.as_str(), port)
            .to_socket_addrs()
            .map(Iterator::collect)
    });
    let looked_up = looked_up.await;
    looked_up.map_err(|_| io::Error::other("the address lookup panicked"))?
}

/// How long a connection attempt goes on alone before the next address is tried beside it
/// (RFC 8305 §5 recommends 250 ms).
const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// Connects to one of `addrs`, racing them as Happy Eyeballs does (RFC 8305): in the resolver's
/// order with the address families alternating (§4), each next attempt started once the
/// previous one failed or has gone on for [`ATTEMPT_DELAY`] (§5), the first connection made
/// winning (the others are dropped). An address that drops connection requests costs a
/// quarter of a second, not the connect timeout.
async fn connect_any(addrs: &[SocketAddr]) -> io::Result<TcpStream> {
    type Attempt = Pin<Box<dyn Future<Output = io::Result<TcpStream>>>>;
    let addrs = interleave(addrs);
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    let (mut attempts, mut next): (Vec<Attempt>, usize) = (Vec::new(), 0);
    let mut delay = pin!(volt_rt::time::sleep(Duration::ZERO));
    poll_fn(|cx| loop {
        let start =
            next < addrs.len() && (attempts.is_empty() || delay.as_mut().poll(cx).is_ready());
        if start {
            attempts.push(Box::pin(TcpStream::connect(addrs[next])));
            next += 1;
            delay.as_mut().reset(volt_rt::time::now() + ATTEMPT_DELAY);
        }
        let mut failed = false;
        let mut i = 0;
        while i < attempts.len() {
            match attempts[i].as_mut().poll(cx) {
                Poll::Ready(Ok(tcp)) => return Poll::Ready(Ok(tcp)),
                Poll::Ready(Err(e)) => {
                    last = e;
                    drop(attempts.swap_remove(i));
                    failed = true;
                }
                Poll::Pending => i += 1,
            }
        }
        if attempts.is_empty() && next == addrs.len() {
            return Poll::Ready(Err(std::mem::replace(&mut last, io::Error::other(""))));
        }
        if failed {
            // A failure starts the next attempt at once.
            delay.as_mut().reset(volt_rt::time::now());
        } else if !start {
            return Poll::Pending;
        }
        // Started one (its delay is to be polled), or one failed: look again.
    })
    .await
}

/// `addrs` with the families alternating, starting with the first's (RFC 8305 §4), each
/// family in the resolver's order.
fn interleave(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let Some(first) = addrs.first() else {
        return Vec::new();
    };
    let (mut lead, mut other): (Vec<_>, Vec<_>) = addrs
        .iter()
        .copied()
        .partition(|a| a.is_ipv6() == first.is_ipv6());
    let mut out = Vec::with_capacity(addrs.len());
    let (mut lead, mut other) = (lead.drain(..), other.drain(..));
    loop {
        match (lead.next(), other.next()) {
            (None, None) => return out,
            (a, b) => out.extend(a.into_iter().chain(b)),
        }
    }
}

pub(super) fn invalid_input(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

pub(super) fn invalid_data(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

pub(super) fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("timed out {what}"))
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpStream as StdStream;
    use std::time::Duration;

    use volt_rt::net::ListenOptions;

    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn families_alternate_from_the_first() {
        let got = interleave(&[
            addr("[::1]:1"),
            addr("[::2]:1"),
            addr("[::3]:1"),
            addr("10.0.0.1:1"),
        ]);
        let want = ["[::1]:1", "10.0.0.1:1", "[::2]:1", "[::3]:1"].map(addr);
        assert_eq!(got, want);
        let got = interleave(&[addr("10.0.0.1:1"), addr("10.0.0.2:1"), addr("[::1]:1")]);
        assert_eq!(got, ["10.0.0.1:1", "[::1]:1", "10.0.0.2:1"].map(addr));
        assert!(interleave(&[]).is_empty());
    }

    #[test]
    fn an_address_that_drops_connection_requests_costs_only_the_attempt_delay() {
        // A listener whose accept queue is full drops new SYNs: connecting to it hangs.
        let full = ListenOptions::new()
            .backlog(0)
            .bind_std("127.0.0.1:0")
            .unwrap();
        let hole = full.local_addr().unwrap();
        let mut fillers = Vec::new();
        let hangs = loop {
            match StdStream::connect_timeout(&hole, Duration::from_millis(300)) {
                Ok(s) => fillers.push(s),
                Err(_) => break true,
            }
            if fillers.len() > 16 {
                break false;
            }
        };
        assert!(hangs, "the accept queue never filled");
        let good = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let good_addr = good.local_addr().unwrap();
        let refused = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap() // closed when `l` drops: connecting is refused
        };
        volt_rt::block_on(async move {
            let within = Duration::from_secs(5);
            let raced = volt_rt::time::timeout(within, connect_any(&[hole, good_addr])).await;
            let tcp = raced.expect("waited on the dead address").unwrap();
            assert_eq!(tcp.peer_addr().unwrap(), good_addr);

            let raced = volt_rt::time::timeout(within, connect_any(&[refused, good_addr])).await;
            let tcp = raced.unwrap().unwrap();
            assert_eq!(tcp.peer_addr().unwrap(), good_addr);

            let err = connect_any(&[refused]).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
            let err = connect_any(&[]).await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
        });
        drop(fillers);
    }
}
