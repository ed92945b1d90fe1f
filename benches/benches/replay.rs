//! Replay bench: recovering a run whose journal holds 10,000 records.
//!
//! Run: `cargo bench -p magrathea-benches --bench replay`
//!
//! Setup (once, not timed): a durable engine runs `steps_then_sleep` with 4,999 sequential no-op
//! tasks, then a 1-hour durable sleep. Its journal is `StartRecord`, 4,999 ×
//! (`TaskStartedRecord`, `TaskResultRecord`), `TimerSetRecord`: exactly 10,000 records. The run
//! is then suspended and evicted from memory.
//!
//! - `replay/resume_until_suspended`: from `Engine::resume(run)` until the run has left memory
//!   again. That covers reading the 10,000 records from redb, decoding them, re-running the
//!   workflow code against them (4,999 task steps matched and fed back), re-arming the timer,
//!   and the eviction check. Replay writes nothing (the run's state is unchanged), so every
//!   iteration replays the same journal. The redb file is in the OS page cache and redb's own
//!   cache after the first iteration: this is a warm replay.
//! - `replay/read_journal`: only reading and decoding the 10,000 records
//!   (`Store::read_journal`), to split the figure above.
//!
//! The workload is `magrathea_workloads::replay`, which `magrathea bench` runs too.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use magrathea_workloads::replay::{RECORDS, ReplayRun};

fn replay(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = magrathea_benches::bench_dir();
    let started = Instant::now();
    let replay = rt
        .block_on(ReplayRun::build(dir.path()))
        .expect("building the run to replay");
    println!(
        "replay: built a {RECORDS}-record journal in {:.2} s",
        started.elapsed().as_secs_f64()
    );

    let mut g = c.benchmark_group("replay");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(RECORDS));
    g.bench_function("resume_until_suspended", |b| {
        let _rt = rt.enter();
        b.iter_custom(|iters| (0..iters).map(|_| replay.resume_until_suspended()).sum())
    });
    g.bench_function("read_journal", |b| {
        b.iter_custom(|iters| {
            (0..iters)
                .map(|_| replay.read_decode().expect("read_journal"))
                .sum()
        })
    });
    g.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
