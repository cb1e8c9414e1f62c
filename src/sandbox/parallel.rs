//! Deterministic parallel map used for hashing many files on all cores.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Applies `f` to every item, using up to `available_parallelism` threads
/// when there are enough items; results keep the input order.
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads < 2 || items.len() < 8 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= items.len() {
                            break;
                        }
                        out.push((i, f(&items[i])));
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
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads < 2 || items.len() < 8 {
        let mut state = init();
        return items.iter().map(|t| f(&mut state, t)).collect();
    }
    // Runs small enough that every worker gets some.
    let run = RUN.min(items.len().div_ceil(threads)).max(1);
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
