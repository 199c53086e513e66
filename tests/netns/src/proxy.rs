//! A TCP proxy that delays every byte by half a round-trip time in each
//! direction, as a link of that latency would.
//!
//! Each direction of each connection is a delay line: a reader thread
//! stamps every chunk it reads with `read time + delay` and queues it; a
//! writer thread sends each chunk, in order, once its time has come. A
//! chunk read while earlier ones wait is not held up behind their delays
//! (a sleep per read would add the delay once per chunk in flight and
//! understate what the link carries). Threads, not tokio tasks: the
//! delays here are fractions of a millisecond, and tokio's timer rounds
//! to whole milliseconds; a thread's sleep is precise to tens of
//! microseconds. Both sockets have `TCP_NODELAY`, as the database client
//! and server do.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running proxy; stops accepting and cuts its connections on drop.
#[derive(Debug)]
pub struct DelayProxy {
    addr: SocketAddr,
    stopped: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<TcpStream>>>,
}

impl DelayProxy {
    /// Listen on `listen` (port 0 for any) and forward each connection to
    /// `target`, adding `round_trip / 2` in each direction.
    pub fn start(
        listen: SocketAddr,
        target: SocketAddr,
        round_trip: Duration,
    ) -> std::io::Result<DelayProxy> {
        let listener = TcpListener::bind(listen)?;
        let addr = listener.local_addr()?;
        let stopped = Arc::new(AtomicBool::new(false));
        let connections = Arc::new(Mutex::new(Vec::new()));
        let (stop, open) = (Arc::clone(&stopped), Arc::clone(&connections));
        let one_way = round_trip / 2;
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                // A client whose server cannot be reached is closed at
                // once, as the server's refusal would close it.
                let server = match TcpStream::connect(target) {
                    Ok(server) => server,
                    Err(e) => {
                        eprintln!("delay proxy: {target}: {e}");
                        continue;
                    }
                };
                if let Err(e) = forward(client, server, one_way, &open) {
                    eprintln!("delay proxy: {e}");
                }
            }
        });
        Ok(DelayProxy {
            addr,
            stopped,
            connections,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Ok(open) = self.connections.lock() {
            for socket in open.iter() {
                let _ = socket.shutdown(Shutdown::Both);
            }
        }
    }
}

/// Start both directions of one connection.
fn forward(
    client: TcpStream,
    server: TcpStream,
    one_way: Duration,
    open: &Mutex<Vec<TcpStream>>,
) -> std::io::Result<()> {
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    if let Ok(mut open) = open.lock() {
        // Closed sockets are only forgotten when the proxy goes; a test's
        // or a benchmark's connections are few.
        open.push(client.try_clone()?);
        open.push(server.try_clone()?);
    }
    delay_line(client.try_clone()?, server.try_clone()?, one_way);
    delay_line(server, client, one_way);
    Ok(())
}

/// Copy `from` to `to`, each chunk `delay` after it was read; at the end
/// of `from` (or an error on either side), close `to` for writing.
fn delay_line(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let (send, receive) = mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if send
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        // Unblock the peer direction's reader if the writer already failed.
        let _ = from.shutdown(Shutdown::Read);
    });
    std::thread::spawn(move || {
        for (due, chunk) in receive {
            let wait = due.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// An echo server behind the proxy: a ping-pong takes the round trip,
    /// and a second chunk sent while the first is in flight is not delayed
    /// behind it.
    #[test]
    fn adds_the_round_trip_once_per_exchange_and_pipelines() {
        let echo = TcpListener::bind("127.0.0.1:0").unwrap();
        let target = echo.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut s, _) = echo.accept().unwrap();
            let mut buf = [0u8; 1024];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 || s.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        let rtt = Duration::from_millis(20);
        let proxy = DelayProxy::start("127.0.0.1:0".parse().unwrap(), target, rtt).unwrap();
        let mut s = TcpStream::connect(proxy.addr()).unwrap();
        s.set_nodelay(true).unwrap();
        let mut buf = [0u8; 1];
        let t = Instant::now();
        s.write_all(b"a").unwrap();
        s.read_exact(&mut buf).unwrap();
        let one = t.elapsed();
        assert!(one >= rtt && one < rtt * 3, "{one:?}");
        // Ten chunks 1 ms apart arrive about one round trip after the
        // first, not ten.
        let t = Instant::now();
        for _ in 0..10 {
            s.write_all(b"b").unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut ten = [0u8; 10];
        s.read_exact(&mut ten).unwrap();
        let all = t.elapsed();
        assert!(all < rtt * 2, "{all:?}");
    }
}
