//! HTTP/1.1 over a bare TCP socket, for tests that need what a client library hides: a
//! request sent in pieces, a connection held open, a `Host` header of the test's choosing.

#![allow(dead_code, unreachable_pub, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Generous bound for anything the server should do on its own (close, answer).
pub const PATIENCE: Duration = Duration::from_secs(30);

/// Sends `request` (with `Connection: close`, so the server ends the answer) and reads the
/// whole answer.
pub async fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(PATIENCE, s.read_to_end(&mut out))
        .await
        .expect("the server answers and closes")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of a raw answer.
pub fn status(answer: &str) -> u16 {
    answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"))
}

/// Reads one answer with a `Content-Length` body from a keep-alive connection.
pub async fn read_answer(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                return String::from_utf8_lossy(&buf[..end + 4 + len]).into_owned();
            }
        }
        let n = tokio::time::timeout(PATIENCE, s.read(&mut chunk))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(n > 0, "the connection closed mid-answer");
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Waits (up to [`PATIENCE`]) for the server to close `s`: a read returns 0 bytes or a reset.
/// Returns whether it did.
pub async fn closed_by_server(s: &mut TcpStream) -> bool {
    let mut chunk = [0u8; 1024];
    loop {
        match tokio::time::timeout(PATIENCE, s.read(&mut chunk)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // The server may answer a partial request with an error before closing.
            Ok(Ok(_)) => continue,
        }
    }
}
