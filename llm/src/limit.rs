//! Bounded concurrency: a counting semaphore and an order-preserving bounded parallel map.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// A counting semaphore (a `Mutex` and a `Condvar`) bounding how many holders run at once.
///
/// A [`Client`](crate::Client) holds one and takes a permit for each HTTP attempt, so all
/// threads sharing a client (or its clones) together keep at most
/// [`Config::max_concurrency`](crate::Config::max_concurrency) requests in flight.
#[derive(Debug)]
pub struct ConcurrencyLimit {
    limit: usize,
    in_flight: Mutex<usize>,
    freed: Condvar,
}

/// A permit from [`ConcurrencyLimit::acquire`]; dropping it frees the slot.
#[derive(Debug)]
#[must_use = "the slot is freed as soon as the permit is dropped"]
pub struct Permit<'a> {
    owner: &'a ConcurrencyLimit,
}

impl ConcurrencyLimit {
    /// A semaphore with `limit` slots (a limit of 0 is treated as 1).
    pub fn new(limit: usize) -> Self {
        ConcurrencyLimit {
            limit: limit.max(1),
            in_flight: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The number of slots.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// The number of permits currently held.
    pub fn in_flight(&self) -> usize {
        *self.lock()
    }

    /// Waits until a slot is free and takes it.
    pub fn acquire(&self) -> Permit<'_> {
        let mut n = self.lock();
        while *n >= self.limit {
            n = self.freed.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
        *n += 1;
        Permit { owner: self }
    }

    // The counter is only ever incremented or decremented under the lock, so a poisoned lock
    // (a panic elsewhere while holding it, which cannot happen here) still holds a valid count.
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut n = self.owner.lock();
        *n = n.saturating_sub(1);
        drop(n);
        self.owner.freed.notify_one();
    }
}

/// Applies `f` to every item on at most `workers` threads (at least one, and no more than there
/// are items) and returns the results in the order of `items`.
///
/// Threads take the next unclaimed item as they become free, so slow items do not hold up the
/// rest. Runs on scoped standard threads (the calling thread waits for them), so it can be called
/// from plain code or from inside a rayon task alike. A panic in `f` is propagated once all
/// threads stop.
///
/// ```
/// let squares = mesa_llm::map_bounded(&[1, 2, 3, 4], 2, |x| x * x);
/// assert_eq!(squares, vec![1, 4, 9, 16]);
/// ```
pub fn map_bounded<T, R, F>(items: &[T], workers: usize, f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&T) -> R + Sync,
{
    let workers = workers.max(1).min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut indexed: Vec<(usize, R)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        done.push((i, f(item)));
                    }
                    done
                })
            })
            .collect();
        let mut all = Vec::with_capacity(items.len());
        for handle in handles {
            match handle.join() {
                Ok(part) => all.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    indexed.sort_unstable_by_key(|(i, _)| *i);
    indexed.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn map_bounded_preserves_order_and_bound() {
        let limit = ConcurrencyLimit::new(3);
        let peak = AtomicUsize::new(0);
        let items: Vec<u64> = (0..20).collect();
        let out = map_bounded(&items, 8, |x| {
            let _p = limit.acquire();
            peak.fetch_max(limit.in_flight(), Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2 * (20 - x)));
            x * 10
        });
        assert_eq!(out, items.iter().map(|x| x * 10).collect::<Vec<_>>());
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert_eq!(limit.in_flight(), 0);
    }

    #[test]
    fn map_bounded_edge_cases() {
        let empty: [u8; 0] = [];
        assert!(map_bounded(&empty, 4, |x| *x).is_empty());
        assert_eq!(map_bounded(&[7], 0, |x| x + 1), vec![8]);
    }

    #[test]
    fn semaphore_blocks_at_limit() {
        let limit = Arc::new(ConcurrencyLimit::new(2));
        let peak = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let limit = Arc::clone(&limit);
                let peak = Arc::clone(&peak);
                std::thread::spawn(move || {
                    let _p = limit.acquire();
                    peak.fetch_max(limit.in_flight(), Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                })
            })
            .collect();
        for t in threads {
            t.join().expect("worker thread");
        }
        assert_eq!(peak.load(Ordering::SeqCst), 2);
        assert_eq!(limit.in_flight(), 0);
    }
}
