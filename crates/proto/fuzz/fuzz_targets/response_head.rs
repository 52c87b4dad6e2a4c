//! The fast response-head parser against the httparse path and plain httparse, on any bytes.
//!
//! `cargo +nightly fuzz run response_head -- -max_total_time=300` from `crates/proto`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volt_proto::fuzz_response_head(data));
