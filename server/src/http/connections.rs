//! The serve loop: accepts TCP connections and serves HTTP/1.1 on each, within
//! [`ConnectionLimits`].
//!
//! A client cannot hold a socket for long without using it:
//!
//! * **Header read timeout.** From the moment a connection is accepted, and from the first
//!   byte of each later request, the request's head (request line and headers) must arrive in
//!   full within [`ConnectionLimits::header_read_timeout`]; otherwise the connection is closed.
//!   This stops slow-header ("slowloris") clients, and clients that connect and send nothing.
//! * **Body read timeout.** A request's body must arrive in full within
//!   [`ConnectionLimits::body_read_timeout`] of its head. Past it, reading the body fails (the
//!   handler answers 408 `MAG-HTTP-408`) and the connection closes, so a client that declares a
//!   body and sends it slowly, or not at all, holds its socket no longer than that — with or
//!   without a token, since a request is authorised by its handler, after its body.
//! * **Idle timeout.** Between requests of a keep-alive connection, the next request must
//!   begin within [`ConnectionLimits::idle_timeout`]. *Idle* means no request in flight: a
//!   response still streaming (SSE, a long journal) keeps its connection busy, however long it
//!   runs, and a WebSocket, once upgraded, is no longer an HTTP connection (its session has
//!   an idle timeout and a cap per token subject of its own, see `ws.rs`).
//! * **Connection cap.** At most [`ConnectionLimits::max_connections`] connections
//!   (WebSockets included, until they close) are served at once. Beyond the cap the server
//!   stops accepting: new connections wait in the operating system's listen backlog and are
//!   served, in order, as soon as a connection closes (a client with a connect timeout gives up
//!   on its own). Waiting rather than resetting them means a burst above the cap is slowed down,
//!   not failed.
//!
//! Shutdown: the listener closes, every connection finishes its in-flight request and closes;
//! [`ServerHandle::shutdown`](super::ServerHandle::shutdown) bounds the wait. A client that
//! does not read what it is sent (an SSE stream or a WebSocket left unread) holds the stop for
//! no longer than [`STOPPING_SEND_TIMEOUT`]: from the stop on, a write it leaves waiting fails
//! after that, not after the send timeout.

use std::convert::Infallible;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt as _;

/// Default [`ConnectionLimits::header_read_timeout`]: 10 seconds.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Default [`ConnectionLimits::body_read_timeout`]: 30 seconds.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Default [`ConnectionLimits::idle_timeout`]: 60 seconds.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Default [`ConnectionLimits::send_timeout`]: 30 seconds.
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Once the server stops, how long a write may wait for a client that does not read it.
pub const STOPPING_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// Default [`ConnectionLimits::max_connections`]: 1,024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How long clients may hold connections, and how many (see the [module](self) docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Time for a request's head to arrive in full, from its first byte (or from the accept).
    pub header_read_timeout: Duration,
    /// Time for a request's body to arrive in full, from its head.
    pub body_read_timeout: Duration,
    /// Time a connection may wait, with no request in flight, for the next request.
    pub idle_timeout: Duration,
    /// Time a write to the client may wait for the client to read: a client that stops
    /// reading an answer (its socket's buffers full) holds it, and the memory it takes, no
    /// longer than this; the connection is closed.
    pub send_timeout: Duration,
    /// Connections served at once; more wait in the listen backlog. At least 1.
    pub max_connections: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            send_timeout: DEFAULT_SEND_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` fires (or its sender is
/// dropped), then lets every connection finish its in-flight request.
pub(crate) async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (closing_tx, closing_rx) = watch::channel(false);
    // Connections live in the set: aborting the serve task (after the shutdown grace) drops
    // them all.
    let mut connections = JoinSet::new();
    let mut shutdown = pin!(shutdown);
    loop {
        // Past the cap, stop accepting: new connections wait in the listen backlog.
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        while connections.try_join_next().is_some() {}
        connections.spawn(connection(
            stream,
            permit,
            app.clone(),
            limits,
            closing_rx.clone(),
        ));
    }
    drop(listener);
    let _ = closing_tx.send(true);
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// An accept error: one connection's (aborted before it was taken) is skipped; a resource
/// error (too many open files) is logged and the loop pauses, as it would spin otherwise.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %e, "cannot accept a connection; retrying in one second");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Serves one connection until the client closes it, a limit closes it, or the server shuts
/// down (after the in-flight request).
async fn connection(
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    app: Router,
    limits: ConnectionLimits,
    mut closing: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let activity = Arc::new(Activity::new());
    let stop = {
        let mut closing = closing.clone();
        async move {
            // The sender's going (the serve loop ended) is a stop too.
            let _ = closing.wait_for(|closing| *closing).await;
        }
    };
    let io = TokioIo::new(WatchedIo {
        stream,
        activity: activity.clone(),
        send_timeout: limits.send_timeout,
        stalled: None,
        stop: Some(Box::pin(stop)),
        _permit: permit,
    });
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |req: Request<Incoming>| {
            let busy = Activity::begin_request(&activity);
            let app = app.clone();
            let req = req.map(|body| DeadlineBody::new(body, limits.body_read_timeout));
            async move {
                let response = app.oneshot(req).await.unwrap_or_else(|e| match e {});
                Ok::<_, Infallible>(response.map(|body| TrackedBody { body, _busy: busy }))
            }
        })
    };
    let mut builder = http1::Builder::new();
    // The limits below replace hyper's own header timeout, which would also cut idle
    // keep-alive connections at the header timeout.
    builder.keep_alive(true).header_read_timeout(None);
    let mut conn = pin!(builder.serve_connection(io, service).with_upgrades());
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            why = activity.expired(limits) => {
                // No request is in flight: dropping the connection closes the socket.
                tracing::debug!(reason = why, "closing a connection");
                break;
            }
            _ = closing.changed(), if !shutting_down => {
                shutting_down = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// What a connection is doing, for its timeouts.
#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request's head to arrive in full: since the accept, or since the first
    /// byte after an idle spell.
    AwaitingHead { since: Instant },
    /// No request in flight and no byte of the next one, since `since`.
    Idle { since: Instant },
    /// Requests in flight (their responses not yet fully sent).
    Busy { requests: usize },
}

/// The phase of one connection, updated by its reads and its requests.
#[derive(Debug)]
struct Activity {
    phase: Mutex<Phase>,
    changed: Notify,
}

impl Activity {
    fn new() -> Self {
        Self {
            phase: Mutex::new(Phase::AwaitingHead {
                since: Instant::now(),
            }),
            changed: Notify::new(),
        }
    }

    fn update(&self, f: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(PoisonError::into_inner);
        *phase = f(*phase);
        drop(phase);
        self.changed.notify_waiters();
    }

    /// Bytes arrived: after an idle spell, they begin the next request's head.
    fn read_some(&self) {
        let idle = matches!(
            *self.phase.lock().unwrap_or_else(PoisonError::into_inner),
            Phase::Idle { .. }
        );
        if idle {
            self.update(|phase| match phase {
                Phase::Idle { .. } => Phase::AwaitingHead {
                    since: Instant::now(),
                },
                other => other,
            });
        }
    }

    /// A request's head arrived; the connection is busy until the guard drops (when its
    /// response has been sent, or abandoned).
    fn begin_request(this: &Arc<Self>) -> BusyGuard {
        this.update(|phase| match phase {
            Phase::Busy { requests } => Phase::Busy {
                requests: requests + 1,
            },
            _ => Phase::Busy { requests: 1 },
        });
        BusyGuard(this.clone())
    }

    /// When the connection is to be closed, and why; `None` while busy.
    fn deadline(&self, limits: ConnectionLimits) -> Option<(Instant, &'static str)> {
        match *self.phase.lock().unwrap_or_else(PoisonError::into_inner) {
            Phase::AwaitingHead { since } => {
                Some((since + limits.header_read_timeout, "header read timeout"))
            }
            Phase::Idle { since } => Some((since + limits.idle_timeout, "idle timeout")),
            Phase::Busy { .. } => None,
        }
    }

    /// Resolves once the connection has stayed past its deadline.
    async fn expired(&self, limits: ConnectionLimits) -> &'static str {
        loop {
            let changed = self.changed.notified();
            let mut changed = pin!(changed);
            changed.as_mut().enable();
            match self.deadline(limits) {
                Some((at, why)) if at <= Instant::now() => return why,
                Some((at, _)) => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at) => {}
                        _ = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// Marks a request in flight on its connection until dropped.
#[derive(Debug)]
struct BusyGuard(Arc<Activity>);

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.0.update(|phase| match phase {
            Phase::Busy { requests } if requests > 1 => Phase::Busy {
                requests: requests - 1,
            },
            _ => Phase::Idle {
                since: Instant::now(),
            },
        });
    }
}

/// The words a request body that did not arrive in time fails with; the body readers answer
/// 408 `MAG-HTTP-408` on them.
pub(crate) const BODY_READ_TIMEOUT_MESSAGE: &str =
    "the request body did not arrive in full within the server's body read timeout";

/// A request body that must arrive in full by a deadline (the body read timeout after its
/// head): past it, the next read fails, and the connection is not reused. The timer is armed
/// only when a read has to wait, so a body that is already there costs none.
#[derive(Debug)]
struct DeadlineBody {
    body: Incoming,
    deadline: Instant,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl DeadlineBody {
    fn new(body: Incoming, timeout: Duration) -> Self {
        Self {
            body,
            deadline: Instant::now() + timeout,
            timer: None,
        }
    }
}

/// The error of a body that missed its deadline.
#[derive(Debug)]
struct BodyReadTimeout;

impl std::fmt::Display for BodyReadTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(BODY_READ_TIMEOUT_MESSAGE)
    }
}

impl std::error::Error for BodyReadTimeout {}

impl http_body::Body for DeadlineBody {
    type Data = axum::body::Bytes;
    type Error = Box<dyn std::error::Error + Send + Sync>;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(Box::new(BodyReadTimeout)))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A response body that keeps its connection busy until it is sent in full (or dropped).
#[derive(Debug)]
struct TrackedBody {
    body: Body,
    _busy: BusyGuard,
}

impl http_body::Body for TrackedBody {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// The connection's socket: notes arriving bytes for the timeouts, fails a write the client
/// leaves unread past the send timeout (past [`STOPPING_SEND_TIMEOUT`] once the server
/// stops), and holds the connection's place under the cap for as long as the socket lives
/// (through a WebSocket upgrade too).
struct WatchedIo {
    stream: TcpStream,
    activity: Arc<Activity>,
    send_timeout: Duration,
    /// Since a write found the socket full: the deadline of the send timeout.
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Completes when the server begins to stop; `None` once it has.
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>,
    _permit: OwnedSemaphorePermit,
}

impl std::fmt::Debug for WatchedIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchedIo")
            .field("stream", &self.stream)
            .field("send_timeout", &self.send_timeout)
            .field("stalled", &self.stalled.is_some())
            .field("stopping", &self.stop.is_none())
            .finish_non_exhaustive()
    }
}

impl WatchedIo {
    /// `polled`, a write's (or flush's) result: a write that made progress clears the send
    /// timeout; one still waiting past it fails with `TimedOut`, which closes the connection.
    /// While a write waits, the server's stop shortens its timeout to
    /// [`STOPPING_SEND_TIMEOUT`] (the stop wakes it, so a write already waiting is cut too).
    fn watch<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if polled.is_ready() {
            self.stalled = None;
            return polled;
        }
        if self
            .stop
            .as_mut()
            .is_some_and(|stop| stop.as_mut().poll(cx).is_ready())
        {
            self.stop = None;
        }
        let timeout = if self.stop.is_none() {
            self.send_timeout.min(STOPPING_SEND_TIMEOUT)
        } else {
            self.send_timeout
        };
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        let latest = Instant::now() + timeout;
        if stalled.deadline() > latest {
            stalled.as_mut().reset(latest);
        }
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not read the answer within the send timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read_some();
        }
        polled
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.watch(cx, polled)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        self.watch(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.watch(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}
