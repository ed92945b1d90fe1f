//! Following a run's journal live: what the SSE and WebSocket routes stream.

use magrathea_core::{Engine, Entry, Record, RunId};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

/// How often a follower re-reads the journal when nothing was broadcast.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(2);

/// The run's records in `seq` order, each exactly once: first those already journaled, then
/// new ones as they commit. The channel closes after a terminal `StatusRecord`, when the
/// engine closes, or (the task stops) when the receiver is dropped.
pub(crate) fn follow(engine: Engine, run: RunId) -> mpsc::Receiver<Entry> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        // Subscribing before reading the journal: a record committed in between arrives
        // twice (read and broadcast), never not at all; `next` drops the duplicate.
        // The journal broadcast carries only records appended while someone listened, so a
        // batch appended before we subscribed and committed after our read is never
        // broadcast: status changes and a slow tick re-read the journal to catch up.
        let mut updates = engine.subscribe_journal();
        let mut statuses = engine.subscribe_status();
        let mut tick = tokio::time::interval(RESYNC);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut next = 0u64;
        let initial = engine.journal(run).unwrap_or_default();
        if forward(&tx, initial, &mut next).await.is_break() {
            return;
        }
        loop {
            let entries: Vec<Entry> = tokio::select! {
                update = updates.recv() => match update {
                    Ok(u) if u.run_id == run => {
                        if u.entries.first().is_some_and(|e| e.seq > next) {
                            engine.journal(run).unwrap_or_default()
                        } else {
                            u.entries.to_vec()
                        }
                    }
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => engine.journal(run).unwrap_or_default(),
                    Err(RecvError::Closed) => return,
                },
                status = statuses.recv() => match status {
                    Ok(u) if u.run_id == run => engine.journal(run).unwrap_or_default(),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(_)) => engine.journal(run).unwrap_or_default(),
                    Err(RecvError::Closed) => return,
                },
                _ = tick.tick() => engine.journal(run).unwrap_or_default(),
                () = tx.closed() => return,
            };
            if forward(&tx, entries, &mut next).await.is_break() {
                return;
            }
        }
    });
    rx
}

/// Sends the entries from `next` on; breaks when the receiver is gone or the run ended.
async fn forward(
    tx: &mpsc::Sender<Entry>,
    entries: Vec<Entry>,
    next: &mut u64,
) -> std::ops::ControlFlow<()> {
    for entry in entries {
        if entry.seq < *next {
            continue;
        }
        *next = entry.seq + 1;
        let end = is_end(&entry);
        if tx.send(entry).await.is_err() || end {
            return std::ops::ControlFlow::Break(());
        }
    }
    std::ops::ControlFlow::Continue(())
}

/// Whether the entry is the run's terminal `StatusRecord`.
pub(crate) fn is_end(entry: &Entry) -> bool {
    matches!(&entry.record, Record::Status { status, .. } if status.is_terminal())
}
