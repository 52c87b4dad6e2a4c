//! HTTP/2 load over cleartext TCP with prior knowledge (h2c): requests as header blocks
//! encoded once (`request`), the open streams of a connection (`streams`), the sans-I/O client
//! side of a connection (`conn`), and the driver that joins it to a transport (`driver`).
//! HTTP/3 (`crate::h3`) shares the driver's claims (what a slot may send, and when) and the
//! request's fields.

mod conn;
mod driver;
mod request;
mod streams;

pub(crate) use conn::status_code;
pub(crate) use driver::{
    backoff, claim, connection, drive, fail_claim, fail_connection, fail_stream, give_back,
    record_response, take_one, Claim,
};
pub(crate) use request::{fields, H2Request};
#[cfg(test)]
mod tests;
