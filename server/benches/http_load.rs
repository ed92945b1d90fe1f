//! A bounded load test of the HTTP server: 10,000 starts (`LOAD_STARTS`) from 64 concurrent
//! clients over loopback; prints throughput and latency percentiles.
//!
//! Each client is one kept-alive HTTP/1.1 connection sending one request at a time and reading
//! each answer whole, as a load tool such as `wrk` does. The clients share the machine's cores
//! with the server, so the less a client spends on a request, the more of the figure is the
//! server's.
//!
//! `cargo bench -p magrathea-server --bench http_load`

#[path = "../tests/it/http_common/mod.rs"]
mod http_common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use http_common::*;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper_util::rt::TokioIo;

const CLIENTS: usize = 64;

/// The allocator of the `magrathea` binary, whose server this measures.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(ten_thousand_starts_from_64_clients());
}

async fn ten_thousand_starts_from_64_clients() {
    let total: usize = std::env::var("LOAD_STARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/noop.yaml"),
        "start: done\nstates:\n  done: { type: terminal, result: ok }\n",
    );
    // As on a server that has been up a while, the document and the tenant's settings were
    // written well before the load (a file written in the last 2 s is read again at each use;
    // see the file cache of `magrathea-exec`).
    for file in [
        "acme/shop/_vance/workflows/noop.yaml",
        "acme/_tenant/_vance/settings.yaml",
    ] {
        std::fs::File::options()
            .write(true)
            .open(s.root.join(file))
            .and_then(|f| {
                f.set_times(
                    std::fs::FileTimes::new()
                        .set_modified(std::time::SystemTime::now() - Duration::from_secs(60)),
                )
            })
            .expect("dating the document and the tenant settings");
    }
    let path = "/brain/acme/project/shop/workflows/noop/start";
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let n = total / CLIENTS + usize::from(c < total % CLIENTS);
        let mut client = Client::connect(s.addr).await;
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(n);
            for _ in 0..n {
                let t = Instant::now();
                assert_eq!(client.post(path, ACME, b"{}").await, 201);
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all: Vec<Duration> = Vec::with_capacity(total);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!(
        "{total} starts, {CLIENTS} clients: {:.0} starts/s; p50 {:?} p99 {:?} max {:?}",
        total as f64 / elapsed.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        all[all.len() - 1],
    );
    let metrics = s
        .get("/metrics", None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for line in metrics
        .lines()
        .filter(|l| l.starts_with("magrathea_journal_"))
    {
        println!("{line}");
    }
}

/// One load client: a kept-alive HTTP/1.1 connection to the server.
struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    host: HeaderValue,
}

impl Client {
    async fn connect(addr: SocketAddr) -> Self {
        let stream = tokio::net::TcpStream::connect(addr)
            .await
            .expect("connecting to the server");
        stream.set_nodelay(true).expect("TCP_NODELAY");
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("an HTTP/1.1 connection");
        tokio::spawn(conn);
        Self {
            sender,
            host: HeaderValue::from_str(&addr.to_string()).expect("a host header"),
        }
    }

    /// POSTs the JSON `body` to `path` with `token`; reads the whole answer and returns its
    /// status.
    async fn post(&mut self, path: &str, token: &str, body: &'static [u8]) -> u16 {
        let request = hyper::Request::post(path)
            .header(header::HOST, self.host.clone())
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from_static(body)))
            .expect("a request");
        self.sender.ready().await.expect("the connection is open");
        let response = self.sender.send_request(request).await.expect("an answer");
        let status = response.status().as_u16();
        response
            .into_body()
            .collect()
            .await
            .expect("the answer's body");
        status
    }
}
