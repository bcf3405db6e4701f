//! The library's threads: the default thread count, the process-wide pool behind it, and
//! the loops that spread rows over that pool (the encoders and validators; the products
//! take their own thread setting, `linear::cpu::engine`).
//!
//! The library keeps its own pool rather than rayon's global one: once the global pool's
//! creation has failed (no thread could be started, e.g. under an address-space limit),
//! every later use of it panics for the rest of the process. Here a pool that cannot be
//! made means the work runs on the calling thread alone, with the same results (every loop
//! below writes each item's result in its own place, whatever thread computed it), and a
//! later call tries again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Threads of the default setting: `RAYON_NUM_THREADS` when it is a positive number, else
/// the logical CPUs this process may use (rayon's own default), at most 1024.
pub(crate) fn default_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::env::var("RAYON_NUM_THREADS")
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .min(1024)
    })
}

/// The pool of the default setting, shared by every caller in the process: the
/// [`default_threads`] − 1 threads beside the calling one, made on first use. `None`: one
/// thread by the setting, or the pool could not be made (the work then runs on the calling
/// thread alone, and a later call tries again).
pub(crate) fn default_pool() -> Option<Arc<rayon::ThreadPool>> {
    static POOL: OnceLock<Arc<rayon::ThreadPool>> = OnceLock::new();
    if let Some(p) = POOL.get() {
        return Some(p.clone());
    }
    let threads = default_threads().checked_sub(1).filter(|&n| n > 0)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .ok()?;
    // Two first calls may both build one; the second is dropped.
    Some(POOL.get_or_init(|| Arc::new(pool)).clone())
}

/// Runs `run` on the calling thread and, spawned on the scope's pool, on `t − 1` more.
pub(crate) fn spread<'s>(s: &rayon::Scope<'s>, t: usize, run: &'s (dyn Fn() + Sync)) {
    for _ in 1..t {
        s.spawn(move |_| run());
    }
    run();
}

/// Calls `f(state, item)` for every item of `items`, on the calling thread and the
/// default pool's threads, which take the items one at a time from one shared iterator
/// (so at most one thread per item runs); each taking part makes its own `state` with
/// `init` once. On the calling thread alone where the pool cannot be made.
pub(crate) fn for_each<I, S>(
    items: I,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, I::Item) + Sync,
) where
    I: Iterator + Send,
    I::Item: Send,
{
    let t = default_threads().min(items.size_hint().1.unwrap_or(usize::MAX));
    let items = Mutex::new(items);
    let run = || {
        let mut state = None;
        loop {
            let next = items.lock().unwrap_or_else(PoisonError::into_inner).next();
            let Some(item) = next else { break };
            f(state.get_or_insert_with(&init), item);
        }
    };
    match if t > 1 { default_pool() } else { None } {
        Some(pool) => pool.in_place_scope(|s| spread(s, t, &run)),
        None => run(),
    }
}

/// Items per chunk of [`map_slice`] (and so [`map_rows`]) and rows per item of
/// [`first_error`]: about eight chunks per thread.
fn rows_per_item(rows: usize) -> usize {
    rows.div_ceil(default_threads() * 8).max(1)
}

/// `f(state, r)` for every row r < `rows`, in row order ([`for_each`]'s threads, `state`
/// made by `init` once per thread).
pub(crate) fn map_rows<T: Send, S>(
    rows: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> T + Sync,
) -> Vec<T> {
    map_slice(&mut vec![(); rows], init, |state, r, _| f(state, r))
}

/// `f(state, i, &mut items[i])` for every item, the results in index order ([`for_each`]'s
/// threads, `state` made by `init` once per thread).
pub(crate) fn map_slice<T: Send, U: Send, S>(
    items: &mut [T],
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize, &mut T) -> U + Sync,
) -> Vec<U> {
    let mut out: Vec<Option<U>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    let per = rows_per_item(items.len());
    let work = items.chunks_mut(per).zip(out.chunks_mut(per)).enumerate();
    for_each(work, init, |state, (i, (items, slots))| {
        for (j, (item, slot)) in items.iter_mut().zip(slots).enumerate() {
            *slot = Some(f(state, i * per + j, item));
        }
    });
    // Every slot was written: each chunk is one item, and every item runs.
    let mut all = Vec::with_capacity(out.len());
    all.extend(out.into_iter().flatten());
    all
}

/// The error of the lowest row r < `rows` for which `f(state, r)` returns one, as
/// [`map_rows`] runs them; rows above a failing row already found are skipped.
pub(crate) fn first_error<E: Send, S>(
    rows: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Option<E> + Sync,
) -> Option<E> {
    let lowest = AtomicUsize::new(usize::MAX);
    let found: Mutex<Option<(usize, E)>> = Mutex::new(None);
    let per = rows_per_item(rows);
    for_each((0..rows).step_by(per), init, |state, start| {
        for r in start..(start + per).min(rows) {
            if r > lowest.load(Ordering::Relaxed) {
                return;
            }
            if let Some(e) = f(state, r) {
                lowest.fetch_min(r, Ordering::Relaxed);
                let mut g = found.lock().unwrap_or_else(PoisonError::into_inner);
                if g.as_ref().is_none_or(|(at, _)| r < *at) {
                    *g = Some((r, e));
                }
                return;
            }
        }
    });
    found
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .map(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_rows_keeps_row_order() {
        for rows in [0, 1, 7, 64, 1000] {
            let got = map_rows(rows, || 0usize, |_, r| r * 3);
            assert_eq!(got, (0..rows).map(|r| r * 3).collect::<Vec<_>>());
        }
    }

    #[test]
    fn first_error_is_the_lowest_failing_row() {
        for rows in [1, 9, 100, 5000] {
            for bad in [0, rows / 3, rows - 1] {
                // Every row from `bad` on fails: the lowest must win whatever thread
                // reaches a higher one first.
                let got = first_error(rows, || (), |_, r| (r >= bad).then_some(r));
                assert_eq!(got, Some(bad));
            }
            assert_eq!(first_error(rows, || (), |_, _| None::<usize>), None);
        }
    }

    #[test]
    fn for_each_visits_every_item_once() {
        let seen: Vec<AtomicUsize> = (0..500).map(|_| AtomicUsize::new(0)).collect();
        for_each(
            0..500usize,
            || (),
            |_, i| {
                seen[i].fetch_add(1, Ordering::Relaxed);
            },
        );
        assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
    }
}
