//! HTTP/3 load (`--h3`): requests as request-stream bytes encoded once (`request`), the QUIC
//! connection on its own UDP socket (`quic`: quinn-proto's state machine on volt-rt), the
//! HTTP/3 client side of a connection over it (`conn`: `volt_proto::h3`'s frames and QPACK),
//! and the driver that runs a slot's requests on them (`driver`), modelled on HTTP/2's
//! (concurrent streams per connection, the same claims and counting).

mod conn;
mod driver;
mod quic;
mod request;

pub(crate) use driver::drive;
pub(crate) use quic::QuicConn;
pub(crate) use request::H3Request;
