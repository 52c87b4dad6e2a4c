//! The server's view of an application: something that turns a request into a response.

use std::fmt;
use std::future::Future;

use crate::response::{IntoResponse, Response};
use std::sync::Arc;

use crate::running::{Handler, Running};
use crate::Request;

/// An application the server can run: a [`Router`](crate::Router), or a single function made
/// with [`service_fn`].
///
/// The returned future need not be `Send`: each worker polls it on its own thread. The router
/// and [`service_fn`] box each request's future in a box reused from request to request (a
/// future is allocated only while more of its kind are running at once than ever before on
/// that worker).
pub trait Service: Send + Sync + 'static {
    /// Handles one request.
    fn call(&self, req: Request) -> impl Future<Output = Response>;

    /// [`Service::call`]'s future in a form that may move after it was polled. The HTTP/1
    /// server polls a request's future once where it stands and moves on only the rare one that
    /// has to wait, so an answer that is ready at once costs no future for its whole batch.
    /// The default boxes `call`'s future for every request; the router and [`service_fn`]
    /// reuse their boxes.
    fn call_unpin(&self, req: Request) -> impl Future<Output = Response> + Unpin {
        Box::pin(self.call(req))
    }
}

/// A [`Service`] from one async function: every request, whatever its method and path, goes to
/// `f`. The fastest way to serve, with no routing.
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
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    let f = Arc::new(f);
    ServiceFn {
        handler: Arc::new(Handler::shared(f.clone())),
        f,
    }
}

/// See [`service_fn`].
#[derive(Clone)]
pub struct ServiceFn<F> {
    f: Arc<F>,
    /// `f` as the boxes of its futures call it (see [`Running`]).
    handler: Arc<Handler>,
}

impl<F: fmt::Debug> fmt::Debug for ServiceFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceFn").field("f", &self.f).finish()
    }
}

impl<F, Fut, R> Service for ServiceFn<F>
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + 'static,
    R: IntoResponse,
{
    async fn call(&self, req: Request) -> Response {
        (self.f)(req).await.into_response()
    }

    fn call_unpin(&self, req: Request) -> impl Future<Output = Response> + Unpin {
        Running::start(&self.handler, req)
    }
}
