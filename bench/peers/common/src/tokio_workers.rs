//! Running an accept loop on tokio with `--workers N`, in one of two shapes (`--flavor`):
//!
//! - `current` (default): N threads, each with its own `current_thread` runtime and its own
//!   `SO_REUSEPORT` listener. Nothing is shared between workers; a connection lives and dies on the
//!   thread that accepted it. This is the thread-per-core shape volt's runtime has, so the runtime
//!   comparison measures the runtimes and not the scheduling model.
//! - `multi`: one multi-thread (work-stealing) runtime with N worker threads and one listener, the
//!   way `#[tokio::main]` programs usually run.
//!
//! Every accepted socket gets `TCP_NODELAY`, as in every other peer, so no server's writes wait on
//! Nagle's algorithm.

use std::future::Future;
use std::io;
use std::net::SocketAddr;

use tokio::net::{TcpListener, TcpStream};

use crate::Args;

/// The runtime shape, from `--flavor current|multi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    CurrentThreadPerWorker,
    MultiThread,
}

impl Flavor {
    pub fn from_args(args: &Args) -> Flavor {
        match args.get("flavor").unwrap_or("current") {
            "current" => Flavor::CurrentThreadPerWorker,
            "multi" => Flavor::MultiThread,
            other => {
                eprintln!("--flavor must be current or multi, not {other:?}");
                std::process::exit(2)
            }
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Flavor::CurrentThreadPerWorker => {
                "tokio current_thread runtime per worker, SO_REUSEPORT"
            }
            Flavor::MultiThread => "tokio multi-thread runtime, one listener",
        }
    }
}

/// Accepts connections on `args.addr` with `args.workers` threads and runs `serve(stream)` as a
/// task for each. Returns only if a worker fails to start.
pub fn run<F, Fut>(args: &Args, serve: F) -> io::Result<()>
where
    F: Fn(TcpStream) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    match Flavor::from_args(args) {
        Flavor::CurrentThreadPerWorker => {
            let workers: Vec<_> = (0..args.workers)
                .map(|i| {
                    let serve = serve.clone();
                    let addr = args.addr;
                    std::thread::Builder::new()
                        .name(format!("worker-{i}"))
                        .spawn(move || {
                            let rt = tokio::runtime::Builder::new_current_thread()
                                .enable_all()
                                .build()?;
                            // The listener is registered with the runtime, so made inside it.
                            rt.block_on(async move { accept_loop(reuseport(addr)?, serve).await })
                        })
                })
                .collect::<io::Result<_>>()?;
            for worker in workers {
                worker.join().expect("worker thread panicked")?;
            }
            Ok(())
        }
        Flavor::MultiThread => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(args.workers)
                .enable_all()
                .build()?;
            let addr = args.addr;
            // The accept loop runs as a task, on the workers, not on the thread in `block_on`.
            rt.block_on(async move {
                tokio::spawn(async move { accept_loop(reuseport(addr)?, serve).await })
                    .await
                    .expect("accept loop panicked")
            })
        }
    }
}

fn reuseport(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::from_std(crate::reuseport_listener(addr)?)
}

async fn accept_loop<F, Fut>(listener: TcpListener, serve: F) -> io::Result<()>
where
    F: Fn(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                stream.set_nodelay(true)?;
                tokio::spawn(serve(stream));
            }
            // Out of file descriptors or a connection reset before accept: keep serving.
            Err(e) => eprintln!("accept: {e}"),
        }
    }
}
