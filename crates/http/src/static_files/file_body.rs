//! A file's bytes as a response body, read on volt-rt's blocking pool a chunk at a time.

use std::fs::File;
use std::future::Future;
use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use volt_rt::JoinHandle;

/// How much one blocking read takes. A body no larger is read whole with the lookup.
pub(super) const CHUNK: u64 = 64 * 1024;

/// Bytes `next..end` of a file, read a chunk at a time off the worker. While the connection
/// writes one chunk the next is being read, so a connection holds at most two; the server
/// asks for a chunk only once the socket took the one before, so a client that reads
/// slowly slows the reads down, and one that stops reading stops them.
pub(super) struct FileChunks {
    file: Arc<File>,
    next: u64,
    end: u64,
    reading: Option<JoinHandle<io::Result<Bytes>>>,
}

impl FileChunks {
    pub(super) fn new(file: File, start: u64, end: u64) -> FileChunks {
        FileChunks {
            file: Arc::new(file),
            next: start,
            end,
            reading: None,
        }
    }

    fn start_read(&mut self) {
        let n = (self.end - self.next).min(CHUNK);
        let (file, at) = (self.file.clone(), self.next);
        self.next += n;
        self.reading = Some(volt_rt::spawn_blocking(move || read_at(&file, at, n)));
    }
}

/// Reads exactly `n` bytes at `at`: a file that got shorter since its length was sent is an
/// error (the response is cut short and the connection closed), never a short body.
pub(super) fn read_at(file: &File, at: u64, n: u64) -> io::Result<Bytes> {
    let mut buf = vec![0; n as usize];
    file.read_exact_at(&mut buf, at)?;
    Ok(buf.into())
}

impl Stream for FileChunks {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let reading = match &mut this.reading {
            Some(reading) => reading,
            None if this.next >= this.end => return Poll::Ready(None),
            None => {
                this.start_read();
                this.reading.as_mut().expect("just started")
            }
        };
        let read = ready!(Pin::new(reading).poll(cx));
        this.reading = None;
        let chunk = match read {
            Ok(Ok(chunk)) => chunk,
            Ok(Err(e)) => return Poll::Ready(Some(Err(e))),
            Err(_) => return Poll::Ready(Some(Err(io::Error::other("a file read panicked")))),
        };
        if this.next < this.end {
            this.start_read();
        }
        Poll::Ready(Some(Ok(chunk)))
    }
}

impl Drop for FileChunks {
    /// A read not yet started is not started (one running finishes, and its bytes are dropped).
    fn drop(&mut self) {
        if let Some(reading) = &self.reading {
            reading.abort();
        }
    }
}
