//! Deterministic parallel map used for hashing many files on all cores.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Applies `f` to every item, using up to `available_parallelism` threads
/// when there are enough items; results keep the input order.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    in_runs(items, |_| 1, || (), |(), t| f(t))
}

/// Items handed to a worker at a time by [`map_runs`].
const RUN: usize = 32;

/// Like [`map`], but each worker takes runs of consecutive items and keeps
/// its own state (`init()`) across them, so sorted items that share work
/// (siblings of one directory) stay on one worker. Results keep the input
/// order.
pub(crate) fn map_runs<T: Sync, R: Send, S>(
    items: &[T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    // Runs small enough that every worker gets some.
    let run = |threads: usize| RUN.min(items.len().div_ceil(threads)).max(1);
    in_runs(items, run, init, f)
}

/// The worker pool behind [`map`] and [`map_runs`]: up to
/// `available_parallelism` (at most 8) threads, each with its own state,
/// taking `run(threads)` consecutive items at a time; serial for fewer than
/// 8 items or one core.
fn in_runs<T: Sync, R: Send, S>(
    items: &[T],
    run: impl Fn(usize) -> usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads < 2 || items.len() < 8 {
        let mut state = init();
        return items.iter().map(|t| f(&mut state, t)).collect();
    }
    let run = run(threads);
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut state = init();
                    let mut out = Vec::new();
                    loop {
                        let first = next.fetch_add(run, Ordering::Relaxed);
                        if first >= items.len() {
                            break;
                        }
                        for (i, item) in items.iter().enumerate().skip(first).take(run) {
                            out.push((i, f(&mut state, item)));
                        }
                    }
                    out
                })
            })
            .collect();
        for h in handles {
            // A panic in a worker is re-raised here, on the caller's thread.
            for (i, r) in h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)) {
                slots[i] = Some(r);
            }
        }
    });
    slots
        .into_iter()
        .map(|s| s.expect("every index is processed once"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_keep_order_and_state_is_per_worker() {
        let items: Vec<u32> = (0..1000).collect();
        let out = super::map_runs(
            &items,
            || 0u32,
            |seen, x| {
                *seen += 1;
                x * 3
            },
        );
        assert_eq!(out, items.iter().map(|x| x * 3).collect::<Vec<_>>());
    }

    #[test]
    fn keeps_order() {
        let items: Vec<u32> = (0..1000).collect();
        let out = super::map(&items, |x| x * 2);
        assert_eq!(out, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }
}
