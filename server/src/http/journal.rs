//! `GET …/workflows/runs/{run_id}/journal?cursor=&limit=`: a run's journal, paged and streamed.
//!
//! The body is a JSON array of the run's records in `seq` order (the shape of
//! [`Entry`]), at most `limit` of them (default [`DEFAULT_LIMIT`], at
//! most [`MAX_LIMIT`]). When records remain after the page, the `X-Next-Cursor` header holds
//! the `cursor` of the next page and a `Link: <…>; rel="next"` header the whole URL, exactly as
//! `GET …/workflows/runs` pages. A cursor is opaque to clients: pass it back unchanged.
//!
//! The page is read from the store [`CHUNK`] records (and at most [`CHUNK_BYTES`]) at a time
//! while the body is sent, so a page of a long run never sits in the server's memory whole, as
//! records or as JSON.

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures::stream;
use magrathea_core::{Engine, Entry, RunId};
use serde::Deserialize;

use super::auth::ApiScope;
use super::error::ApiError;
use super::runs::{NEXT_CURSOR_HEADER, RunPath};
use super::state::AppState;

/// Records per page when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 1_000;

/// The largest `limit` a request may ask for; more is answered 400.
pub const MAX_LIMIT: usize = 10_000;

/// Records read from the store per step of the body.
pub const CHUNK: usize = 256;

/// Bytes of encoded records read from the store per step of the body (a step holds one
/// record, whatever its size).
pub const CHUNK_BYTES: usize = 1 << 20;

/// Query of the journal route: both optional, both strings so that a malformed value gets the
/// route's own error rather than a generic one.
#[derive(Debug, Deserialize)]
pub(crate) struct JournalQuery {
    cursor: Option<String>,
    limit: Option<String>,
}

/// Where a page starts and how long it is.
#[derive(Debug, Clone, Copy)]
struct Page {
    from: u64,
    limit: usize,
}

impl Page {
    fn parse(q: &JournalQuery) -> Result<Self, ApiError> {
        let from = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
            Some(c) => c.parse::<u64>().map_err(|_| {
                ApiError::bad_request(
                    "MAG-RD001",
                    format!("[MAG-RD001] invalid journal cursor `{c}`: pass the X-Next-Cursor of the previous page unchanged"),
                )
            })?,
            None => 0,
        };
        let limit = match q.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(l) => l
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "MAG-RD002",
                        format!("[MAG-RD002] invalid journal limit `{l}`: expected a whole number from 1 to {MAX_LIMIT}"),
                    )
                })?,
        };
        Ok(Self { from, limit })
    }

    /// The first seq after the page: the records of a page are those with a seq in
    /// `from..end`, so consecutive pages cover every record once whatever the seqs are.
    fn end(self) -> u64 {
        self.from.saturating_add(self.limit as u64)
    }
}

/// The journal route's handler: 404 for a run of another scope, 400 for a bad cursor or limit.
pub(crate) async fn journal(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    Query(q): Query<JournalQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let page = Page::parse(&q)?;
    let engine = state.engine.clone();
    let run = summary.run_id;
    // The first chunk is read before answering, so that an unreadable journal is a 500 rather
    // than a body cut short.
    let first = read_chunk(&engine, run, page.from, page.end()).map_err(ApiError::internal)?;
    let more = !engine
        .journal_page(run, page.end(), 1, 1)
        .map_err(ApiError::internal)?
        .is_empty();
    let mut response = Body::from_stream(body(engine, run, page, first)).into_response();
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if more {
        let cursor = page.end();
        let next = format!(
            "/brain/{}/project/{}/workflows/runs/{}/journal?limit={}&cursor={cursor}",
            p.tenant, p.project, run, page.limit
        );
        h.insert(NEXT_CURSOR_HEADER, HeaderValue::from(cursor));
        if let Ok(v) = format!("<{next}>; rel=\"next\"").parse() {
            h.insert(header::LINK, v);
        }
    }
    Ok(response)
}

/// Up to [`CHUNK`] records (and [`CHUNK_BYTES`]) with a seq in `from..end`.
fn read_chunk(engine: &Engine, run: RunId, from: u64, end: u64) -> Result<Vec<Entry>, String> {
    let room = usize::try_from(end.saturating_sub(from)).unwrap_or(usize::MAX);
    let mut entries = engine
        .journal_page(run, from, CHUNK.min(room), CHUNK_BYTES)
        .map_err(|e| e.to_string())?;
    entries.retain(|e| e.seq < end);
    Ok(entries)
}

/// What the body stream has still to send.
enum Sending {
    /// Records read, not yet sent; `first` while nothing of the array is sent.
    Chunk { entries: Vec<Entry>, first: bool },
    /// The closing bracket.
    Close,
    /// Sent.
    Done,
}

/// The page as a JSON array, one store read per chunk, each sent before the next is read.
fn body(
    engine: Engine,
    run: RunId,
    page: Page,
    first: Vec<Entry>,
) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
    let start = Sending::Chunk {
        entries: first,
        first: true,
    };
    stream::unfold(start, move |state| {
        let engine = engine.clone();
        async move {
            match state {
                Sending::Done => None,
                Sending::Close => Some((Ok(Bytes::from_static(b"]")), Sending::Done)),
                Sending::Chunk { entries, first } => {
                    let mut out = Vec::with_capacity(entries.len() * 128 + 1);
                    if first {
                        out.push(b'[');
                    }
                    for (i, entry) in entries.iter().enumerate() {
                        if !(first && i == 0) {
                            out.push(b',');
                        }
                        if let Err(e) = serde_json::to_writer(&mut out, entry) {
                            return Some((Err(std::io::Error::other(e)), Sending::Done));
                        }
                    }
                    let next = match entries.last() {
                        // An empty chunk is the journal's end as of now (a short one may be
                        // short of bytes only); so is the page's end.
                        Some(last) if last.seq + 1 < page.end() => {
                            match read_chunk(&engine, run, last.seq + 1, page.end()) {
                                Ok(more) if !more.is_empty() => Sending::Chunk {
                                    entries: more,
                                    first: false,
                                },
                                Ok(_) => Sending::Close,
                                Err(e) => {
                                    // The status is sent: cut the body short, so that the
                                    // client sees invalid JSON rather than a complete page.
                                    tracing::error!(%run, error = %e, "journal page: read failed");
                                    return Some((Err(std::io::Error::other(e)), Sending::Done));
                                }
                            }
                        }
                        _ => Sending::Close,
                    };
                    Some((Ok(Bytes::from(out)), next))
                }
            }
        }
    })
}
