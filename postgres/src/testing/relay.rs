//! A TCP relay between a worker and a [`TestCluster`](super::TestCluster) that can be frozen.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A relay on a loopback port of its own, forwarding every connection to the cluster's port.
///
/// [`freeze`](Self::freeze) cuts the network the way a partition does, without closing
/// anything: bytes sent either way are held (neither delivered nor dropped) and new
/// connections wait to be forwarded, so every call through the relay waits for an answer
/// until [`thaw`](Self::thaw). [`sever`](Self::sever) cuts it the way a stopped database does:
/// every connection is closed and new ones are refused until [`restore`](Self::restore). The
/// relay's threads end with its connections.
#[derive(Debug)]
pub struct Relay {
    port: u16,
    frozen: Arc<AtomicBool>,
    down: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    /// Starts a relay to `127.0.0.1:target` (see [`TestCluster::port`](super::TestCluster::port)).
    pub fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port for the relay");
        let port = listener.local_addr().expect("the relay's address").port();
        let frozen = Arc::new(AtomicBool::new(false));
        let down = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (held, refused, opened) = (Arc::clone(&frozen), Arc::clone(&down), Arc::clone(&open));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if refused.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                if let Ok(c) = client.try_clone() {
                    opened.lock().unwrap_or_else(|p| p.into_inner()).push(c);
                }
                let frozen = Arc::clone(&held);
                std::thread::spawn(move || {
                    wait_thawed(&frozen);
                    let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                        return;
                    };
                    pump_both(client, server, &frozen);
                });
            }
        });
        Self {
            port,
            frozen,
            down,
            open,
        }
    }

    /// `url` (a cluster's, as [`TestCluster::create_database`](super::TestCluster::create_database)
    /// gives) with its port replaced by the relay's.
    pub fn url(&self, url: &str) -> String {
        let (head, tail) = url.rsplit_once(':').expect("a URL with a port");
        let path = tail.find('/').map_or("", |i| &tail[i..]);
        format!("{head}:{}{path}", self.port)
    }

    /// Holds every byte and connection from now on.
    pub fn freeze(&self) {
        self.frozen.store(true, Ordering::SeqCst);
    }

    /// Lets what was held through, and what follows.
    pub fn thaw(&self) {
        self.frozen.store(false, Ordering::SeqCst);
    }

    /// Closes every connection and refuses new ones, as a stopped database does.
    pub fn sever(&self) {
        self.down.store(true, Ordering::SeqCst);
        for c in self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Forwards new connections again.
    pub fn restore(&self) {
        self.down.store(false, Ordering::SeqCst);
    }
}

fn wait_thawed(frozen: &AtomicBool) {
    while frozen.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn pump_both(client: TcpStream, server: TcpStream, frozen: &Arc<AtomicBool>) {
    let (Ok(client_back), Ok(server_back)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    let up = Arc::clone(frozen);
    let upstream = std::thread::spawn(move || pump(client, server, &up));
    pump(server_back, client_back, frozen);
    let _ = upstream.join();
}

/// Copies `from` to `to` until `from` ends, holding what it read while frozen.
fn pump(mut from: TcpStream, mut to: TcpStream, frozen: &AtomicBool) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        wait_thawed(frozen);
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
