//! How the log bench times what it measures: the appender threads every
//! side's appends run through (started together, timed from the moment all
//! are ready), a timed read of a whole store, and events per second — one
//! definition of each, so that the sled log, SQLite and JetStream are
//! timed alike.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Runs `append` on one thread per element of `work` — each thread first
/// runs `prepare` (connections, buffers), then waits until all are ready —
/// and returns the wall time from that moment until the last one finished.
/// Both sides of the append benchmarks run through this one harness.
pub fn timed_appenders<W: Send, P>(
    work: Vec<W>,
    prepare: impl Fn() -> anyhow::Result<P> + Sync,
    append: impl Fn(&mut P, W) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<Duration> {
    let barrier = Barrier::new(work.len() + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = work
            .into_iter()
            .map(|w| {
                let (barrier, prepare, append) = (&barrier, &prepare, &append);
                s.spawn(move || -> anyhow::Result<()> {
                    let state = prepare();
                    barrier.wait();
                    append(&mut state?, w)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("an appender panicked"))??;
        }
        Ok(start.elapsed())
    })
}

/// Times `f` on a store opened just before (not timed); returns events per
/// second, checking it saw `expected` events.
pub(super) fn timed_read(
    expected: usize,
    what: &str,
    f: impl FnOnce() -> anyhow::Result<usize>,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    let n = f()?;
    let d = start.elapsed();
    anyhow::ensure!(n == expected, "{what} read {n} of {expected} events");
    Ok(eps(n, d))
}

/// `n` events in `d`, per second.
pub(super) fn eps(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}
