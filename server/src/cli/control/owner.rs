//! The owner's side: serving the control socket while this process holds the store.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use magrathea_core::Engine;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, watch};

use super::{
    MAX_CLIENTS, MAX_KEY_BYTES, MAX_REQUEST_BYTES, Reply, Request, key_matches, key_path, new_key,
    socket_path,
};
use crate::cli::backend::{Backend, FollowEvent, Follower};
use magrathea_server::http::metrics::Metrics;

/// How [`shutdown`] treats the clients still connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    /// Serve on until no client is connected: runs a client started are followed until they
    /// settle, so a `magrathea run` owner does not leave its clients' runs half driven, and
    /// other commands keep being answered meanwhile.
    Drain,
    /// Close them now (the engine is stopping; their runs resume with the next owner).
    Abort,
}

/// How often a draining owner looks whether its last client has gone.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// How long a closing owner waits for one more queued connection before it closes the socket
/// (a client that connected as the socket's name went).
const QUEUED_GRACE: Duration = Duration::from_millis(20);

/// How long a draining owner that had clients stays after the last one left: a client that
/// followed its run to the end asks once more (the run as it ended, the inbox) over a new
/// connection, and would otherwise find the owner gone in between.
const CLIENT_LINGER: Duration = Duration::from_millis(150);

/// A socket this process serves.
#[derive(Debug)]
struct Served {
    path: PathBuf,
    key: PathBuf,
    accept: tokio::task::JoinHandle<()>,
    /// Tells the accepting task to serve what is queued and close the socket.
    closing: watch::Sender<bool>,
    slots: Arc<Semaphore>,
    /// Connections being served.
    active: Arc<AtomicUsize>,
    /// Whether a client connected at all.
    had_clients: Arc<AtomicBool>,
    stop: watch::Sender<bool>,
}

/// Counts a connection as active while it lives.
struct Active(Arc<AtomicUsize>);

impl Active {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn served() -> &'static Mutex<Vec<Served>> {
    static SERVED: Mutex<Vec<Served>> = Mutex::new(Vec::new());
    &SERVED
}

/// Serves the control socket of the store in `dir`, whose engine this process owns. A fresh
/// control key is written first (mode 0600, renamed into place), then the socket is bound
/// under a temporary name, given mode 0600 and renamed into place, so neither ever exists
/// with wider permissions; a socket or key left by an owner that crashed is replaced
/// (holding the store's lock proves that no other owner is alive).
///
/// A server passes its `metrics`, which count the runs its clients start (`trigger="cli"`).
pub(crate) fn serve(
    engine: &Engine,
    dir: &Path,
    metrics: Option<Arc<Metrics>>,
    drives_all: bool,
) -> anyhow::Result<()> {
    let path = socket_path(dir);
    let cannot = || {
        format!(
            "[MAG-CS003] cannot serve the control socket {}; other magrathea commands on this \
             store will fail while this one runs",
            path.display()
        )
    };
    let key = new_key();
    let key_file = key_path(&path);
    write_key(dir, &key_file, &key).with_context(cannot)?;
    let key: Arc<str> = key.into();
    let temp = dir.join(format!("control.{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let listener = bind(&temp, &path)
        .inspect_err(|_| {
            // No socket for it to open: the key would only outlive this process.
            let _ = std::fs::remove_file(&key_file);
        })
        .with_context(cannot)?;
    let slots = Arc::new(Semaphore::new(MAX_CLIENTS));
    let (stop, stopped) = watch::channel(false);
    let (closing, mut closed) = watch::channel(false);
    let accept_slots = slots.clone();
    let active = Arc::new(AtomicUsize::new(0));
    let had_clients = Arc::new(AtomicBool::new(false));
    let serve_one = {
        let (engine, active, had) = (engine.clone(), active.clone(), had_clients.clone());
        move |stream: UnixStream, slot: Option<tokio::sync::OwnedSemaphorePermit>| {
            had.store(true, Ordering::SeqCst);
            let engine = engine.clone();
            let stopped = stopped.clone();
            let active = Active::new(&active);
            let key = key.clone();
            let metrics = metrics.clone();
            tokio::spawn(async move {
                let owner = Owner {
                    key: &key,
                    metrics: metrics.as_deref(),
                    drives_all,
                };
                connection(engine, stream, owner, stopped).await;
                drop((active, slot));
            });
        }
    };
    let accept = tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                _ = closed.changed() => break,
                slot = accept_slots.clone().acquire_owned() => {
                    let Ok(slot) = slot else { return };
                    tokio::select! {
                        _ = closed.changed() => break,
                        accepted = listener.accept() => accepted.map(|(s, _)| (s, slot)),
                    }
                }
            };
            if let Ok((stream, slot)) = accepted {
                serve_one(stream, Some(slot));
            }
        }
        // Closing: the socket's name is gone, so no client connects any more, but those that
        // connected just before are queued here. Each is served (a slot or not: there are
        // only so many), rather than reset by closing the socket under them.
        while let Ok(Ok((stream, _))) = tokio::time::timeout(QUEUED_GRACE, listener.accept()).await
        {
            serve_one(stream, None);
        }
    });
    served()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Served {
            path,
            key: key_file,
            accept,
            closing,
            slots,
            active,
            had_clients,
            stop,
        });
    Ok(())
}

/// Writes the control key to `file` with mode 0600, through a temporary file renamed into
/// place.
fn write_key(dir: &Path, file: &Path, key: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let temp = dir.join(format!("control.{}.key", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut f| f.write_all(key.as_bytes()))
        .and_then(|()| std::fs::rename(&temp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

fn bind(temp: &Path, path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt as _;
    let listener = UnixListener::bind(&super::address::Address::of(temp)?.path)?;
    let placed = std::fs::set_permissions(temp, std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::fs::rename(temp, path));
    if let Err(e) = placed {
        let _ = std::fs::remove_file(temp);
        return Err(e);
    }
    Ok(listener)
}

/// Stops serving, once no client is connected ([`Shutdown::Drain`]) or at once
/// ([`Shutdown::Abort`]); the socket file is removed, so that a command started from then on
/// opens the store itself once this process has closed it.
pub(crate) async fn shutdown(how: Shutdown) {
    let all = std::mem::take(&mut *served().lock().unwrap_or_else(PoisonError::into_inner));
    for s in all {
        if how == Shutdown::Drain {
            loop {
                while s.active.load(Ordering::SeqCst) > 0 {
                    tokio::time::sleep(DRAIN_POLL).await;
                }
                if !s.had_clients.load(Ordering::SeqCst) {
                    break;
                }
                tokio::time::sleep(CLIENT_LINGER).await;
                if s.active.load(Ordering::SeqCst) == 0 {
                    break;
                }
            }
        }
        // The name first: a client from now on finds no owner and opens the store once this
        // process has let it go; one that connected a moment before is still answered.
        let _ = std::fs::remove_file(&s.path);
        let _ = s.closing.send(true);
        let _ = s.accept.await;
        if how == Shutdown::Abort {
            let _ = s.stop.send(true);
        }
        if how == Shutdown::Drain {
            while s.active.load(Ordering::SeqCst) > 0 {
                tokio::time::sleep(DRAIN_POLL).await;
            }
        }
        let _ = std::fs::remove_file(&s.key);
        let permits = u32::try_from(MAX_CLIENTS).unwrap_or(u32::MAX);
        let _ = s.slots.acquire_many(permits).await;
    }
}

/// How long an owner waits for a client's control key (clients send it at once): a
/// connection that sends nothing gives its slot back soon.
const KEY_WAIT: Duration = Duration::from_secs(2);

/// What a connection knows of the owner serving it.
struct Owner<'a> {
    /// The store's control key.
    key: &'a str,
    /// A server's metrics, which count the runs its clients start.
    metrics: Option<&'a Metrics>,
    /// Whether this process recovered and drives every unfinished run of the store.
    drives_all: bool,
}

/// One client: its control key, then one request and its answer (or stream of answers).
async fn connection(
    engine: Engine,
    stream: UnixStream,
    owner: Owner<'_>,
    mut stopped: watch::Receiver<bool>,
) {
    let Owner {
        key,
        metrics,
        drives_all,
    } = owner;
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let offered = tokio::time::timeout(KEY_WAIT, read_line(&mut reader, MAX_KEY_BYTES)).await;
    match offered {
        // A client that only checked that the owner is alive.
        Ok(Ok(None)) => return,
        Ok(Ok(Some(line))) if key_matches(&line, key) => {}
        _ => {
            let message = "[MAG-CS004] the connection did not begin with the store's control \
                           key (`control.key` in the store directory): only a process that may \
                           read the store directory may ask its owner"
                .to_string();
            let _ = send(&mut write, &Reply::Error { message }).await;
            return;
        }
    }
    let request = match read_line(&mut reader, MAX_REQUEST_BYTES).await {
        // A client that only checked that the owner is alive.
        Ok(None) => return,
        Ok(Some(line)) => serde_json::from_slice::<Request>(&line)
            .map_err(|e| format!("[MAG-CS002] invalid request to the store's owner: {e}")),
        Err(e) => Err(format!(
            "[MAG-CS002] invalid request to the store's owner: {e}"
        )),
    };
    let request = match request {
        Ok(r) => r,
        Err(message) => {
            let _ = send(&mut write, &Reply::Error { message }).await;
            return;
        }
    };
    let backend = Backend::Local(engine);
    let (first, follower) = answer(&backend, request, drives_all).await;
    if let (Reply::Started { .. }, Some(metrics)) = (&first, metrics) {
        metrics.run_started("cli");
    }
    if send(&mut write, &first).await.is_err() {
        return;
    }
    let Some(mut follower) = follower else {
        return;
    };
    let mut probe = [0u8; 1];
    loop {
        let reply = tokio::select! {
            event = follower.next() => match event {
                Ok(FollowEvent::Update(u)) => Reply::Update {
                    run: u.run_id,
                    entries: u.entries.as_ref().clone(),
                },
                Ok(FollowEvent::Skipped(count)) => Reply::Skipped { count },
                Ok(FollowEvent::Settled(view)) => Reply::Settled { view },
                Err(e) => Reply::Error { message: crate::cli::output::chain(&e) },
            },
            // The client closed its end (Ctrl-C): the run goes on without it, driven here
            // until it settles (a draining owner waits for this connection), as the client
            // was told.
            _ = reader.read(&mut probe) => {
                drop(write);
                follow_to_the_end(&mut follower, &mut stopped).await;
                return;
            }
            _ = stopped.changed() => return,
        };
        let last = matches!(reply, Reply::Settled { .. } | Reply::Error { .. });
        if send(&mut write, &reply).await.is_err() || last {
            return;
        }
    }
}

/// Follows a run whose client has gone until it settles (or the engine stops), so that the
/// connection keeps a draining owner serving, and so driving, the run.
async fn follow_to_the_end(follower: &mut Follower, stopped: &mut watch::Receiver<bool>) {
    loop {
        tokio::select! {
            event = follower.next() => match event {
                Ok(FollowEvent::Settled(_)) | Err(_) => return,
                Ok(_) => {}
            },
            _ = stopped.changed() => return,
        }
    }
}

/// The reply to `request`, and the run to follow for a start or an answer; `drives_all`
/// says what this owner is.
async fn answer(
    backend: &Backend,
    request: Request,
    drives_all: bool,
) -> (Reply, Option<Follower>) {
    let reply = match request {
        Request::Owner => Ok(Reply::Owner { drives_all }),
        Request::ListRuns {
            workflow,
            scope,
            limit,
            statuses,
        } => backend
            .runs_of(workflow, scope, limit, &statuses)
            .await
            .map(|runs| Reply::Runs { runs }),
        Request::Run { run } => backend.run(run).await.map(|run| Reply::Run {
            run: run.map(Box::new),
        }),
        Request::Pending { scope } => backend
            .pending(scope)
            .await
            .map(|items| Reply::Items { items }),
        Request::Journal { run } => backend
            .journal(run)
            .await
            .map(|entries| Reply::Journal { entries }),
        Request::InboxItem { id } => backend.inbox_item(&id).await.map(|found| match found {
            Some((item, scope)) => Reply::Item {
                item: Some(Box::new(item)),
                scope,
            },
            None => Reply::Item {
                item: None,
                scope: None,
            },
        }),
        Request::Start { request } => match backend.start((*request).into()).await {
            Ok((run, follower)) => return (Reply::Started { run }, Some(follower)),
            Err(e) => Err(e),
        },
        Request::Cancel { run, reason } => match backend.cancel(run, &reason).await {
            Ok((cancelled, follower)) => return (Reply::Cancelled { cancelled }, Some(follower)),
            Err(e) => Err(e),
        },
        Request::Answer { run, id, answer } => match backend.answer(run, &id, answer).await {
            Ok((answered, follower)) => return (Reply::Answered { answered }, Some(follower)),
            Err(e) => Err(e),
        },
        Request::Control { run, control, by } => backend
            .control(run, control, &by)
            .await
            .map(|(controlled, _)| Reply::Controlled { controlled }),
        Request::Catalog { call } => match backend {
            Backend::Local(engine) => super::catalog::apply(engine, call)
                .map(|result| Reply::Catalog { result })
                .map_err(anyhow::Error::from),
            Backend::Remote(_) => Err(anyhow::anyhow!("this process does not own the store")),
        },
    };
    let reply = reply.unwrap_or_else(|e| Reply::Error {
        message: crate::cli::output::chain(&e),
    });
    (reply, None)
}

/// Writes `reply` as one line (see [`reply_line`]).
pub(super) async fn send(
    write: &mut (impl AsyncWriteExt + Unpin),
    reply: &impl serde::Serialize,
) -> std::io::Result<()> {
    let line = reply_line(reply, super::MAX_REPLY_BYTES)?;
    write.write_all(&line).await?;
    write.flush().await
}

/// `reply` as one line of JSON, or, when it is longer than a client reads (`limit`), an error
/// that says so: the client would otherwise take the cut line for an owner that went away.
fn reply_line(reply: &impl serde::Serialize, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(reply).map_err(std::io::Error::other)?;
    if line.len() as u64 > limit {
        let message = format!(
            "the answer holds {} bytes, more than the {limit} one answer of the store's owner \
             may (runs with large parameters or results, or a very long journal): ask for less \
             (`runs list --limit N`, `--status`, `--workflow`), or read it over HTTP, which pages",
            line.len()
        );
        line = serde_json::to_vec(&Reply::Error { message }).map_err(std::io::Error::other)?;
    }
    line.push(b'\n');
    Ok(line)
}

/// Reads one line of at most `limit` bytes; `None` at the end of the stream.
pub(super) async fn read_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    limit: u64,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = reader.take(limit + 1).read_until(b'\n', &mut line).await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        let why = if line.len() as u64 > limit {
            format!("a line is longer than {limit} bytes")
        } else {
            "the line ends early".to_string()
        };
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, why));
    }
    line.pop();
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_too_long_for_a_client_is_an_error_that_says_so() {
        let big = Reply::Error {
            message: "x".repeat(500),
        };
        let line = reply_line(&big, 100).unwrap();
        assert!(line.len() < 400, "{}", String::from_utf8_lossy(&line));
        match serde_json::from_slice::<Reply>(&line[..line.len() - 1]).unwrap() {
            Reply::Error { message } => {
                assert!(message.contains("more than the 100"), "{message}");
                assert!(message.contains("--limit"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let small = reply_line(&big, 10_000).unwrap();
        assert_eq!(small.last(), Some(&b'\n'));
        assert!(small.len() > 500);
    }
}
