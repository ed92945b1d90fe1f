//! The client's side: asking the store's owner over its control socket.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use magrathea_core::{Entry, GateAnswer, InboxItem, RunId, RunStatus, StartRequest};
use magrathea_server::http::runs::RunDto;
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use super::owner::{read_line, send};
use super::{MAX_REPLY_BYTES, Reply, Request, read_key, socket_path};
use crate::cli::backend::{
    Answered, Cancelled, ControlOp, Controlled, FollowEvent, Follower, update,
};

/// The owner of a store, reached over its control socket.
#[derive(Debug)]
pub(crate) struct OwnerClient {
    socket: PathBuf,
}

/// A connection with a request sent, waiting for its replies.
#[derive(Debug)]
struct Exchange {
    reader: BufReader<OwnedReadHalf>,
    // Kept open: the owner takes a closed end for a client that went away.
    _writer: OwnedWriteHalf,
    /// Whether a reply came.
    answered: bool,
}

/// Whether this process sent the owner a request (see [`OwnerLeft`]).
static SENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The owner went away before it answered a request of this command: it was leaving the
/// store (its own work done) as the command asked. When it got nothing (`sent: false`) and
/// the command had sent it nothing before, the command may start over and find the store
/// free or its next owner; a command that only reads may start over in any case.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnerLeft {
    /// Whether the request was sent whole (the owner may have acted on it).
    pub(crate) sent: bool,
}

impl std::fmt::Display for OwnerLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the store's owner went away before it answered")
    }
}

impl std::error::Error for OwnerLeft {}

/// Whether this process ever sent the store's owner a request.
pub(crate) fn sent_any() -> bool {
    SENT.load(std::sync::atomic::Ordering::SeqCst)
}

/// The owner that left before it answered, with `why`.
fn left(sent: bool, why: &str) -> anyhow::Error {
    anyhow::Error::new(OwnerLeft { sent }).context(went_away(why))
}

/// How long the owner has to answer a request (the first reply of an exchange; a followed
/// run's updates come when the run moves, however long that takes).
pub(super) const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

impl Exchange {
    /// The owner's answer to the request: [`Exchange::next`] within [`ANSWER_WAIT`]. An owner
    /// that is stopped (SIGSTOP) or wedged still accepts connections, and would hold the
    /// command for ever.
    async fn answer(&mut self) -> anyhow::Result<Reply> {
        tokio::time::timeout(ANSWER_WAIT, self.next())
            .await
            .unwrap_or_else(|_| Err(silent()))
    }

    async fn next(&mut self) -> anyhow::Result<Reply> {
        let gone = |why: &str| {
            if self.answered {
                went_away(why)
            } else {
                left(true, why)
            }
        };
        let line = read_line(&mut self.reader, MAX_REPLY_BYTES)
            .await
            .map_err(|e| gone(&e.to_string()))?
            .ok_or_else(|| gone("it closed the connection"))?;
        self.answered = true;
        match serde_json::from_slice::<Reply>(&line) {
            Ok(Reply::Error { message }) => Err(anyhow!(message)),
            Ok(reply) => Ok(reply),
            Err(e) => Err(went_away(&format!("its reply is not understood: {e}"))),
        }
    }
}

fn went_away(why: &str) -> anyhow::Error {
    anyhow!(
        "[MAG-CS001] lost the store's owner (the magrathea process that has the store open): \
         {why}; what it journaled is kept: `magrathea runs list` shows the runs (a run this \
         command asked to start is there if the owner got the request), `magrathea resume` \
         carries on the unfinished ones, and a command that only reads can be run again"
    )
}

/// The owner accepted the request and did not answer it in time.
pub(super) fn silent() -> anyhow::Error {
    went_away(&format!(
        "it did not answer within {} s (it may be stopped or overloaded)",
        ANSWER_WAIT.as_secs()
    ))
}

/// The store's control key cannot be read: this process may not ask the owner.
pub(crate) fn no_key(e: &std::io::Error) -> anyhow::Error {
    anyhow!(
        "[MAG-CS004] cannot read the store's control key (`control.key` in the store \
         directory): {e}; only a process that may read the store directory may ask its owner"
    )
}

fn unexpected(reply: &Reply) -> anyhow::Error {
    went_away(&format!("unexpected reply {reply:?}"))
}

impl OwnerClient {
    /// The owner's catalog (trigger state), over the socket.
    pub(crate) fn catalog(&self) -> super::catalog::RemoteCatalog {
        super::catalog::RemoteCatalog {
            socket: self.socket.clone(),
        }
    }

    /// The owner of the store in `dir`, if one answers on its socket.
    pub(crate) async fn connect(dir: &Path) -> std::io::Result<Self> {
        let socket = socket_path(dir);
        UnixStream::connect(&super::address::Address::of(&socket)?.path).await?;
        Ok(Self { socket })
    }

    async fn exchange(&self, request: &Request) -> anyhow::Result<Exchange> {
        // Nothing is sent until the request's last byte is: an owner that went before that
        // (it removes its key, then its socket) got nothing of it.
        let gone = |e: &dyn std::fmt::Display| left(false, &e.to_string());
        let key = match read_key(&self.socket) {
            Ok(key) => key,
            // The socket goes before the key: with neither, the owner has left.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !self.socket.exists() => {
                return Err(gone(&e));
            }
            Err(e) => return Err(no_key(&e)),
        };
        let address = super::address::Address::of(&self.socket).map_err(|e| gone(&e))?;
        let stream = UnixStream::connect(&address.path)
            .await
            .map_err(|e| gone(&e))?;
        let (read, mut write) = stream.into_split();
        let mut line = key.into_bytes();
        line.push(b'\n');
        write.write_all(&line).await.map_err(|e| gone(&e))?;
        send(&mut write, request).await.map_err(|e| gone(&e))?;
        SENT.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(Exchange {
            reader: BufReader::new(read),
            _writer: write,
            answered: false,
        })
    }

    async fn call(&self, request: &Request) -> anyhow::Result<Reply> {
        self.exchange(request).await?.answer().await
    }

    pub(crate) async fn list_runs(
        &self,
        workflow: Option<String>,
        scope: String,
        limit: usize,
        statuses: Vec<RunStatus>,
    ) -> anyhow::Result<Vec<RunDto>> {
        match self
            .call(&Request::ListRuns {
                workflow,
                scope,
                limit,
                statuses,
            })
            .await?
        {
            Reply::Runs { runs } => Ok(runs),
            other => Err(unexpected(&other)),
        }
    }

    /// Asks the owner to pause or resume `run`.
    pub(crate) async fn control(
        &self,
        run: RunId,
        op: ControlOp,
        by: &str,
    ) -> anyhow::Result<Controlled> {
        let request = Request::Control {
            run,
            control: op,
            by: by.into(),
        };
        match self.call(&request).await? {
            Reply::Controlled { controlled } => Ok(controlled),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn run(&self, run: RunId) -> anyhow::Result<Option<RunDto>> {
        match self.call(&Request::Run { run }).await? {
            Reply::Run { run } => Ok(run.map(|r| *r)),
            other => Err(unexpected(&other)),
        }
    }

    /// Whether the owner recovered and drives every unfinished run of the store.
    pub(crate) async fn drives_all(&self) -> anyhow::Result<bool> {
        match self.call(&Request::Owner).await? {
            Reply::Owner { drives_all } => Ok(drives_all),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn pending(&self, scope: Option<String>) -> anyhow::Result<Vec<InboxItem>> {
        match self.call(&Request::Pending { scope }).await? {
            Reply::Items { items } => Ok(items),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn journal(&self, run: RunId) -> anyhow::Result<Vec<Entry>> {
        match self.call(&Request::Journal { run }).await? {
            Reply::Journal { entries } => Ok(entries),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn inbox_item(
        &self,
        id: &str,
    ) -> anyhow::Result<Option<(InboxItem, Option<String>)>> {
        match self.call(&Request::InboxItem { id: id.into() }).await? {
            Reply::Item { item, scope } => Ok(item.map(|i| (*i, scope))),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn start(&self, request: StartRequest) -> anyhow::Result<(RunId, Follower)> {
        let mut exchange = self
            .exchange(&Request::Start {
                request: Box::new(request.into()),
            })
            .await?;
        match exchange.answer().await? {
            Reply::Started { run } => Ok((run, Follower::Remote(RemoteFollower { exchange }))),
            other => Err(unexpected(&other)),
        }
    }

    pub(crate) async fn answer(
        &self,
        run: RunId,
        id: &str,
        answer: GateAnswer,
    ) -> anyhow::Result<(Answered, Follower)> {
        let mut exchange = self
            .exchange(&Request::Answer {
                run,
                id: id.into(),
                answer,
            })
            .await?;
        match exchange.answer().await? {
            Reply::Answered { answered } => {
                Ok((answered, Follower::Remote(RemoteFollower { exchange })))
            }
            other => Err(unexpected(&other)),
        }
    }
}

impl OwnerClient {
    /// Asks the owner to cancel `run`, then follows the run.
    pub(crate) async fn cancel(
        &self,
        run: RunId,
        reason: &str,
    ) -> anyhow::Result<(Cancelled, Follower)> {
        let mut exchange = self
            .exchange(&Request::Cancel {
                run,
                reason: reason.into(),
            })
            .await?;
        match exchange.answer().await? {
            Reply::Cancelled { cancelled } => {
                Ok((cancelled, Follower::Remote(RemoteFollower { exchange })))
            }
            other => Err(unexpected(&other)),
        }
    }
}

/// Follows a run the owner drives, from the events it streams.
#[derive(Debug)]
pub(crate) struct RemoteFollower {
    exchange: Exchange,
}

impl RemoteFollower {
    pub(crate) async fn next(&mut self) -> anyhow::Result<FollowEvent> {
        match self.exchange.next().await? {
            Reply::Update { run, entries } => Ok(FollowEvent::Update(update(run, entries))),
            Reply::Skipped { count } => Ok(FollowEvent::Skipped(count)),
            Reply::Settled { view } => Ok(FollowEvent::Settled(view)),
            other => Err(unexpected(&other)),
        }
    }
}
