//! A file answer's body: bytes of a file, with literal bytes between them (the part heads of
//! multipart/byteranges), read on volt-rt's blocking pool a chunk at a time, or whole when
//! small.

use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_core::Stream;
use volt_rt::JoinHandle;

/// How much one blocking read takes. A body no larger is read whole with the lookup.
pub(super) const CHUNK: u64 = 64 * 1024;

/// A piece of a body, sent in order after the one before.
#[derive(Debug)]
pub(super) enum Piece {
    /// Bytes sent as they are.
    Bytes(Bytes),
    /// Bytes `start..end` of the file.
    File(Range<u64>),
}

/// The length of a body made of `pieces`.
pub(super) fn body_len(pieces: &[Piece]) -> u64 {
    let len = |piece: &Piece| match piece {
        Piece::Bytes(bytes) => bytes.len() as u64,
        Piece::File(range) => range.end - range.start,
    };
    pieces.iter().map(len).sum()
}

/// The body made of `pieces`, read whole on the calling thread (the blocking pool). For small
/// bodies only: it is all in memory at once.
///
/// Reads here and in [`FileChunks`] take exactly the bytes asked for: a file that got shorter
/// since its length was sent is an error (the response is cut short and the connection
/// closed), never a short body.
pub(super) fn read_whole(file: &File, pieces: &[Piece]) -> io::Result<Bytes> {
    let mut buf = Vec::with_capacity(body_len(pieces) as usize);
    for piece in pieces {
        match piece {
            Piece::Bytes(bytes) => buf.extend_from_slice(bytes),
            Piece::File(range) => {
                let at = buf.len();
                buf.resize(at + (range.end - range.start) as usize, 0);
                file.read_exact_at(&mut buf[at..], range.start)?;
            }
        }
    }
    Ok(buf.into())
}

/// A body made of pieces of a file, read a chunk at a time off the worker. While the
/// connection writes one chunk the next is being read, so a connection holds at most two;
/// the server asks for a chunk only once the socket took the one before, so a client that
/// reads slowly slows the reads down, and one that stops reading stops them.
pub(super) struct FileChunks {
    file: Arc<File>,
    /// What follows the chunk being read, in order.
    rest: VecDeque<Piece>,
    reading: Option<JoinHandle<io::Result<Bytes>>>,
}

impl FileChunks {
    pub(super) fn new(file: File, pieces: Vec<Piece>) -> FileChunks {
        let empty = |piece: &Piece| matches!(piece, Piece::File(range) if range.is_empty());
        FileChunks {
            file: Arc::new(file),
            rest: pieces.into_iter().filter(|p| !empty(p)).collect(),
            reading: None,
        }
    }

    /// Starts reading the next chunk, if what comes next is the file's.
    fn read_ahead(&mut self) {
        let Some(Piece::File(range)) = self.rest.front_mut() else {
            return;
        };
        let n = (range.end - range.start).min(CHUNK);
        let (file, at) = (self.file.clone(), range.start);
        range.start += n;
        if range.is_empty() {
            self.rest.pop_front();
        }
        self.reading = Some(volt_rt::spawn_blocking(move || {
            let mut buf = vec![0; n as usize];
            file.read_exact_at(&mut buf, at)?;
            Ok(buf.into())
        }));
    }
}

impl Stream for FileChunks {
    type Item = io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.reading.is_none() {
            match this.rest.pop_front() {
                None => return Poll::Ready(None),
                Some(Piece::Bytes(bytes)) => {
                    this.read_ahead();
                    return Poll::Ready(Some(Ok(bytes)));
                }
                Some(file) => {
                    this.rest.push_front(file);
                    this.read_ahead();
                }
            }
        }
        let reading = this.reading.as_mut().expect("a read was started");
        let read = ready!(Pin::new(reading).poll(cx));
        this.reading = None;
        let chunk = match read {
            Ok(Ok(chunk)) => chunk,
            Ok(Err(e)) => return Poll::Ready(Some(Err(e))),
            Err(_) => return Poll::Ready(Some(Err(io::Error::other("a file read panicked")))),
        };
        this.read_ahead();
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
