//! HTTP/2 load over cleartext TCP with prior knowledge (h2c): requests as header blocks
//! encoded once (`request`), the open streams of a connection (`streams`), the sans-I/O client
//! side of a connection (`conn`), and the driver that joins it to a transport (`driver`).

mod conn;
mod driver;
mod request;
mod streams;

pub(crate) use driver::drive;
pub(crate) use request::H2Request;
#[cfg(test)]
mod tests;
