//! Hosted tester transport (docs/trng-tester-protocol.md section 2): serves
//! 512 KiB buffers of conditioned or raw output on a loopback TCP port, ping-pong style.
//!
//! Threads here make no Xous calls (each Xous-calling thread costs a kernel slot for good): the
//! acceptor logs through the `log` facade only when a listener starts; connection and filler
//! threads report health failures through `notify` (a std channel drained by the server's
//! notifier thread, which sends the subscribers' notifications).
//!
//! The tester is part of the server process and reachable only on the host's loopback
//! interface; it is the hosted stand-in for the device's tester mailbox (docs/security.md).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use trng_core::spec::tester as T;

use crate::server::TrngServer;
use crate::tester_mailbox::{fill, header, status_of};

/// Global phase counter: 1, 2, 3, ... over the server's lifetime.
static SEQ: AtomicU64 = AtomicU64::new(1);
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// At most this many concurrent tester connections (each holds two 512 KiB buffers and two threads).
const MAX_CONNECTIONS: usize = 4;

fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::SeqCst)
}

/// Parse a 16-byte request: Ok(mode) or Err(mode as received) for a bad request.
pub fn parse_request(req: &[u8; 16]) -> Result<u32, u32> {
    let mode = u32::from_le_bytes(req[8..12].try_into().unwrap());
    let reserved = u32::from_le_bytes(req[12..16].try_into().unwrap());
    if &req[0..8] != T::REQUEST_MAGIC.as_bytes() || reserved != 0 || mode > T::modes::BOTH as u32 {
        return Err(mode);
    }
    Ok(mode)
}

fn serve(mut s: TcpStream, server: Arc<Mutex<TrngServer>>, notify: Sender<()>) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(60)));
    let mut req = [0u8; 16];
    if s.read_exact(&mut req).is_err() {
        return; // closed early / timeout: drop silently
    }
    let mode = match parse_request(&req) {
        Ok(m) => m,
        Err(m) => {
            let _ = s.write_all(&header(next_seq(), m, 0, 0, T::status::BAD_REQUEST as u32));
            return;
        }
    };
    let buffer_bytes = T::BUFFER_BYTES;
    // ping-pong: the filler fills one buffer while this thread sends the other
    let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(2);
    let (full_tx, full_rx) = sync_channel::<(u64, u32, Vec<u8>)>(2);
    empty_tx.send(vec![0u8; buffer_bytes]).unwrap();
    empty_tx.send(vec![0u8; buffer_bytes]).unwrap();
    let fb = server.clone();
    let filler = std::thread::spawn(move || {
        for mut buf in empty_rx {
            let status = status_of(&fill(&fb, mode, &mut buf));
            // seq assigned when the buffer is complete: frames leave in seq order
            if full_tx.send((next_seq(), status, buf)).is_err() {
                break;
            }
        }
    });
    for (seq, status, mut buf) in full_rx.iter() {
        let ok = if status == T::status::DATA as u32 {
            let crc = crc32fast::hash(&buf);
            let h = header(seq, mode, buf.len() as u32, crc, status);
            s.write_all(&h).and_then(|_| s.write_all(&buf)).is_ok()
        } else {
            if status == T::status::HEALTH as u32 {
                let _ = notify.send(());
            }
            let _ = s.write_all(&header(seq, mode, 0, 0, status));
            false // error frame, then close: the client reconnects (protocol section 2.5)
        };
        // sent bytes are not kept around
        buf.fill(0);
        if !ok || empty_tx.send(buf).is_err() {
            break;
        }
    }
    drop(empty_tx);
    let _ = s.shutdown(std::net::Shutdown::Both);
    let _ = filler.join();
}

/// Bind the listener on 127.0.0.1:`port` (0 = ephemeral), announce it (and write the port to
/// `portfile`, atomically) and serve forever on a background thread. Returns the port.
pub fn start(
    server: Arc<Mutex<TrngServer>>,
    notify: Sender<()>,
    port: u16,
    portfile: Option<&str>,
) -> std::io::Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let port = listener.local_addr()?.port();
    println!("{}{}", T::LISTEN_MARKER, port);
    if let Some(path) = portfile {
        let tmp = format!("{path}.tmp");
        std::fs::write(&tmp, format!("{port}\n"))?;
        std::fs::rename(&tmp, path)?;
    }
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(s) = conn else { continue };
            if ACTIVE.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                let mut s = s;
                let _ = s.write_all(&header(next_seq(), 0, 0, 0, T::status::INTERNAL as u32));
                continue;
            }
            ACTIVE.fetch_add(1, Ordering::SeqCst);
            let b = server.clone();
            let n = notify.clone();
            std::thread::spawn(move || {
                serve(s, b, n);
                ACTIVE.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Ok(port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_parsing() {
        let mut r = [0u8; 16];
        r[..8].copy_from_slice(b"TRNGREQ1");
        assert_eq!(parse_request(&r), Ok(0));
        r[8] = 3;
        assert_eq!(parse_request(&r), Ok(3));
        r[8] = 4;
        assert_eq!(parse_request(&r), Err(4));
        r[8] = 1;
        r[12] = 1;
        assert_eq!(parse_request(&r), Err(1));
        r[12] = 0;
        r[0] = b'X';
        assert_eq!(parse_request(&r), Err(1));
    }
}
