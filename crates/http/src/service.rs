//! The server's view of an application: something that turns a request into a response.

use std::future::Future;

use crate::response::{IntoResponse, Response};
use crate::Request;

/// An application the server can run: a [`Router`](crate::Router), or a single function made
/// with [`service_fn`].
///
/// The returned future need not be `Send`: each worker polls it on its own thread. A service
/// made with [`service_fn`] allocates nothing per request; the router boxes each handler's
/// future, in a box reused from request to request (a handler's future is allocated only
/// while more of its kind are running at once than ever before on that worker).
pub trait Service: Send + Sync + 'static {
    /// Handles one request.
    fn call(&self, req: Request) -> impl Future<Output = Response>;
}

/// A [`Service`] from one async function: every request, whatever its method and path, goes to
/// `f`. The fastest way to serve, with no routing and no boxing.
///
/// ```
/// let app = volt_http::service_fn(|req: volt_http::Request| async move {
///     format!("you asked for {}", req.path())
/// });
/// # let _ = app;
/// ```
pub fn service_fn<F, Fut, R>(f: F) -> ServiceFn<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R>,
    R: IntoResponse,
{
    ServiceFn(f)
}

/// See [`service_fn`].
#[derive(Debug, Clone)]
pub struct ServiceFn<F>(F);

impl<F, Fut, R> Service for ServiceFn<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R>,
    R: IntoResponse,
{
    async fn call(&self, req: Request) -> Response {
        (self.0)(req).await.into_response()
    }
}
