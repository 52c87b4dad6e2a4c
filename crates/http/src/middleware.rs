//! Middleware: an async function around a [`Service`], which sees each request before the
//! service does and its response after, and may answer without it.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use crate::response::{IntoResponse, Response};
use crate::running::{Handler, Running};
use crate::service::Service;
use crate::Request;

/// Wraps `service` in `f`: every request goes to `f` with a [`Next`], whose
/// [`run`](Next::run) passes it on to `service` and gives back its response. `f` may change
/// the request before and the response after, or answer on its own without calling `run`
/// (a refused login, a cached page). The result is a [`Service`] again, so wrappers stack: the
/// outermost sees the request first.
///
/// ```
/// use std::time::Instant;
/// use volt_http::{get, wrap, IntoResponse, Request, Router, StatusCode};
///
/// let app = Router::new().route("/", get(|_req: Request| async { "hello" }));
/// // An access log.
/// let app = wrap(app, |req: Request, next| async move {
///     let (method, path, start) = (req.method().clone(), req.path().to_owned(), Instant::now());
///     let response = next.run(req).await;
///     eprintln!("{method} {path} {} {:?}", response.status().as_u16(), start.elapsed());
///     response
/// });
/// // A gate in front of it.
/// let app = wrap(app, |req: Request, next| async move {
///     if req.header("authorization").is_none() {
///         return StatusCode::UNAUTHORIZED.into_response();
///     }
///     next.run(req).await
/// });
/// # let _ = app;
/// ```
///
/// Like [`service_fn`](crate::service_fn), a wrapped service allocates nothing per request:
/// `f`'s future sits in a box reused from request to request, and the inner service's future
/// (a router's dispatch) lives inside it. A [`Next`] costs one reference count.
pub fn wrap<S, F, Fut, R>(service: S, f: F) -> Wrap<S, F>
where
    S: Service,
    F: Fn(Request, Next<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    let (service, f) = (Arc::new(service), Arc::new(f));
    let (inner, outer) = (service.clone(), f.clone());
    let handler = Handler::new(move |req: Request| {
        outer(
            req,
            Next {
                service: inner.clone(),
            },
        )
    });
    Wrap {
        service,
        f,
        handler: Arc::new(handler),
    }
}

/// A [`Service`] wrapped in a function: see [`wrap`].
pub struct Wrap<S, F> {
    service: Arc<S>,
    f: Arc<F>,
    /// `f` with the service, as the boxes of its futures call it (see [`Running`]).
    handler: Arc<Handler>,
}

impl<S: fmt::Debug, F> fmt::Debug for Wrap<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wrap")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl<S, F, Fut, R> Service for Wrap<S, F>
where
    S: Service,
    F: Fn(Request, Next<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    async fn call(&self, req: Request) -> Response {
        let next = Next {
            service: self.service.clone(),
        };
        (self.f)(req, next).await.into_response()
    }

    fn call_unpin(&self, req: Request) -> impl Future<Output = Response> + Unpin {
        Running::start(&self.handler, req)
    }
}

/// The rest of the chain, handed to a [`wrap`] function with each request.
pub struct Next<S> {
    service: Arc<S>,
}

impl<S: Service> Next<S> {
    /// Passes `req` on to the wrapped service and waits for its response.
    pub async fn run(self, req: Request) -> Response {
        self.service.call_unpin(req).await
    }
}

impl<S> fmt::Debug for Next<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Next").finish_non_exhaustive()
    }
}
