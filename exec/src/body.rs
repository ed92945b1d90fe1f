//! Reading an HTTP response body under a byte limit, for `http_request` and the agent engines.
//!
//! The body is read chunk by chunk and reading stops at the first chunk past the limit: an
//! oversized (or endless) body costs at most the limit plus one chunk of memory, and dropping
//! the response closes the connection, so the peer sees the client hang up instead of
//! streaming on.

/// Why a capped body was not read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The body is longer than the limit (by its `content-length`, or by what arrived).
    TooLarge,
    /// The connection failed while the body was read.
    Transport(reqwest::Error),
}

/// The body of `response`, if it holds at most `max` bytes.
pub(crate) async fn read_capped(
    mut response: reqwest::Response,
    max: u64,
) -> Result<Vec<u8>, BodyError> {
    if response.content_length().is_some_and(|n| n > max) {
        return Err(BodyError::TooLarge);
    }
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Transport)? {
        if (buf.len() + chunk.len()) as u64 > max {
            return Err(BodyError::TooLarge);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}
