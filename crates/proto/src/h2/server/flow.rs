//! Flow control (RFC 9113 §5.2, §6.9): the send and receive windows of the connection and
//! its streams, WINDOW_UPDATE in both directions, and the windows' changes with SETTINGS.

use super::stream::StreamState;
use super::{conn_err, Connection, Event, Fault, Handled, State};
use crate::h2::frame::{self, FrameHeader, Reason};

impl Connection {
    /// The client's new initial window changes every open stream's send window by the
    /// difference (§6.9.2).
    pub(super) fn set_peer_initial_window(&mut self, value: u32) -> Result<(), Fault> {
        if value > frame::MAX_WINDOW {
            return Err(conn_err(
                Reason::FLOW_CONTROL_ERROR,
                "INITIAL_WINDOW_SIZE too large",
            ));
        }
        let delta = i64::from(value) - i64::from(self.peer_initial_window);
        self.peer_initial_window = value;
        for s in &mut self.streams {
            s.send_window += delta;
            if s.send_window > i64::from(frame::MAX_WINDOW) {
                return Err(conn_err(
                    Reason::FLOW_CONTROL_ERROR,
                    "stream window overflow",
                ));
            }
        }
        Ok(())
    }

    /// The client took the server's settings: request streams get the configured window from
    /// now on, and streams it opened before get the difference.
    pub(super) fn settings_acknowledged(&mut self) -> Option<Event> {
        let configured = self.settings.initial_window_size;
        let delta = i64::from(configured) - i64::from(self.recv_initial_window);
        self.recv_initial_window = configured;
        for s in &mut self.streams {
            s.recv_window += delta;
        }
        None
    }

    pub(super) fn on_window_update(&mut self, h: FrameHeader, payload: &[u8]) -> Handled {
        let Ok(b) = <[u8; 4]>::try_from(payload) else {
            return Err(conn_err(
                Reason::FRAME_SIZE_ERROR,
                "WINDOW_UPDATE not 4 bytes",
            ));
        };
        self.spend_window_update()?;
        let increment = i64::from(u32::from_be_bytes(b) & frame::MAX_WINDOW);
        let max = i64::from(frame::MAX_WINDOW);
        if h.stream == 0 {
            if increment == 0 {
                return Err(conn_err(Reason::PROTOCOL_ERROR, "WINDOW_UPDATE of 0"));
            }
            self.send_window += increment;
            if self.send_window > max {
                return Err(conn_err(
                    Reason::FLOW_CONTROL_ERROR,
                    "connection window overflow",
                ));
            }
            return Ok(Some(Event::WindowOpened { stream: 0 }));
        }
        let Some(i) = self.find(h.stream) else {
            if h.stream > self.last_stream {
                return Err(conn_err(
                    Reason::PROTOCOL_ERROR,
                    "WINDOW_UPDATE on an idle stream",
                ));
            }
            return Ok(None);
        };
        if increment == 0 {
            return Err(Fault::Stream(h.stream, Reason::PROTOCOL_ERROR));
        }
        let s = &mut self.streams[i];
        s.send_window += increment;
        if s.send_window > max {
            return Err(Fault::Stream(h.stream, Reason::FLOW_CONTROL_ERROR));
        }
        Ok(Some(Event::WindowOpened { stream: h.stream }))
    }

    pub(super) fn release_connection(&mut self, n: u32, dst: &mut Vec<u8>) {
        if n > 0 {
            self.recv_window += i64::from(n);
            frame::write_window_update(dst, 0, n);
        }
    }

    /// Gives `n` bytes of window back to the client, on `stream` (while it may still send)
    /// and on the connection: call as the application consumes request body bytes.
    pub fn release(&mut self, stream: u32, n: usize, dst: &mut Vec<u8>) {
        self.release_connection_window(n, dst);
        self.release_stream_window(stream, n, dst);
    }

    /// The connection's part of [`Connection::release`] alone: for body bytes discarded while
    /// their stream's window is to stay closed (backpressure on that stream only).
    pub fn release_connection_window(&mut self, n: usize, dst: &mut Vec<u8>) {
        let Ok(n) = u32::try_from(n) else { return };
        if self.state != State::Closed {
            self.release_connection(n, dst);
        }
    }

    /// The stream's part of [`Connection::release`] alone (nothing once the client ended the
    /// stream).
    pub fn release_stream_window(&mut self, stream: u32, n: usize, dst: &mut Vec<u8>) {
        let Ok(n) = u32::try_from(n) else { return };
        if n == 0 || self.state == State::Closed {
            return;
        }
        if let Some(i) = self.find(stream) {
            let s = &mut self.streams[i];
            if s.state != StreamState::HalfClosedRemote {
                s.recv_window += i64::from(n);
                frame::write_window_update(dst, stream, n);
            }
        }
    }

    /// How many body bytes `stream` may send now (both windows allowing).
    pub fn send_capacity(&self, stream: u32) -> usize {
        match self.find(stream) {
            Some(i) => self.streams[i].send_window.min(self.send_window).max(0) as usize,
            None => 0,
        }
    }

    /// How many body bytes the client may still send on `stream` before the server gives
    /// window back (0 once the stream is gone or the client ended it).
    pub fn recv_capacity(&self, stream: u32) -> usize {
        match self.find(stream) {
            Some(i) if self.streams[i].state != StreamState::HalfClosedRemote => {
                self.streams[i].recv_window.max(0) as usize
            }
            _ => 0,
        }
    }

    /// Whether `stream`'s own send window is shut (whatever the connection's).
    pub fn stream_window_shut(&self, stream: u32) -> bool {
        self.find(stream)
            .is_none_or(|i| self.streams[i].send_window <= 0)
    }

    /// Whether the connection's send window is shut: no stream may send body bytes.
    pub fn connection_window_shut(&self) -> bool {
        self.send_window <= 0
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;

    #[test]
    fn request_body_flow_control() {
        let mut conn = open(Settings {
            initial_window_size: 10,
            ..Settings::default()
        });
        let mut bytes = headers(1, 0, &POST);
        bytes.extend(data(1, 0, b"0123456789"));
        let (events, _, err) = run(&mut conn, &bytes);
        assert_eq!((events.len(), err), (2, None));
        let (_, out, err) = run(&mut conn, &data(1, 0, b"x"));
        assert_eq!(err, None);
        assert_eq!(rst_code(&out, 1), Some(Reason::FLOW_CONTROL_ERROR));

        let mut bytes = headers(3, 0, &POST);
        bytes.extend(data(3, 0, b"0123456789"));
        run(&mut conn, &bytes);
        let mut out = Vec::new();
        conn.release(3, 10, &mut out);
        let f = frames(&out);
        assert_eq!((f[0].0.stream, f[1].0.stream), (0, 3));
        let (events, _, err) = run(&mut conn, &data(3, flags::END_STREAM, b"0123456789"));
        assert_eq!((events.len(), err), (1, None));
    }

    /// A client may send within the window the server advertised as soon as it read the
    /// server's SETTINGS, before its ACK arrives (RFC 9113 §6.9.2); and within the default
    /// window until then, should the server advertise a smaller one (§6.9.3).
    #[test]
    fn the_advertised_window_holds_before_the_settings_ack() {
        for (advertised, before_ack, after_ack) in [(100_000, 100_000, 100_000), (10, 65_535, 10)] {
            let mut out = Vec::new();
            let mut conn = Connection::new(
                Settings {
                    initial_window_size: advertised,
                    ..Settings::default()
                },
                &mut out,
            );
            // The client's SETTINGS, no ACK: stream 1 may take `before_ack` bytes.
            let mut bytes = H2_PREFACE.to_vec();
            bytes.extend(frame(0x4, 0, 0, &[]));
            bytes.extend(headers(1, 0, &POST));
            let body = vec![b'x'; before_ack as usize];
            for piece in body.chunks(16_384) {
                bytes.extend(data(1, 0, piece));
            }
            let (_, out, err) = run(&mut conn, &bytes);
            assert_eq!(err, None);
            assert_eq!(rst_code(&out, 1), None, "{advertised}: within the window");
            let (_, out, _) = run(&mut conn, &data(1, 0, b"x"));
            assert_eq!(rst_code(&out, 1), Some(Reason::FLOW_CONTROL_ERROR));
            // After the ACK a new stream gets the advertised window exactly.
            run(&mut conn, &frame(0x4, flags::ACK, 0, &[]));
            let mut bytes = headers(3, 0, &POST);
            for piece in vec![b'x'; after_ack as usize].chunks(16_384) {
                bytes.extend(data(3, 0, piece));
            }
            let (_, out, _) = run(&mut conn, &bytes);
            assert_eq!(rst_code(&out, 3), None, "{advertised}: within the window");
            let (_, out, _) = run(&mut conn, &data(3, 0, b"x"));
            assert_eq!(rst_code(&out, 3), Some(Reason::FLOW_CONTROL_ERROR));
        }
    }

    #[test]
    fn response_body_waits_for_window() {
        let mut conn = open(Settings::default());
        // The client's initial window: 3 bytes per stream.
        run(&mut conn, &frame(0x4, 0, 0, &[0, 4, 0, 0, 0, 3]));
        run(&mut conn, &headers(1, flags::END_STREAM, &GET));
        let mut out = Vec::new();
        assert_eq!(conn.send_capacity(1), 3);
        assert_eq!(conn.send_data(1, b"Hello", true, &mut out), 3);
        assert_eq!(frames(&out)[0].0.flags, 0, "not the end yet");
        // SETTINGS shrinks the window below zero, WINDOW_UPDATE brings it back.
        let (events, _, _) = run(&mut conn, &frame(0x4, 0, 0, &[0, 4, 0, 0, 0, 1]));
        assert_eq!(events, [Event::WindowOpened { stream: 0 }]);
        assert_eq!(conn.send_capacity(1), 0);
        let (events, _, _) = run(&mut conn, &frame(0x8, 0, 1, &4u32.to_be_bytes()));
        assert_eq!(events, [Event::WindowOpened { stream: 1 }]);
        out.clear();
        assert_eq!(conn.send_data(1, b"lo", true, &mut out), 2);
        assert_eq!(frames(&out)[0].0.flags, flags::END_STREAM);
        assert!(!conn.is_open(1));
    }
}
