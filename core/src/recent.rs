//! The last few answers of a pure function, by input: what a model sends again (a retry, the
//! same call made in a loop, a direct-mode tool whose every call runs one body) is not worked
//! out again. A short list, newest first, searched in order; kept per thread by its users.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::thread::LocalKey;

/// Inputs longer than this are worked out every time, so what is kept stays small.
pub(crate) const MAX_KEPT_INPUT_BYTES: usize = 16 * 1024;

/// `work()`'s answer for `key`: the one kept in this thread's `recent` when `key` is there,
/// else worked out and, when it is `Ok`, kept.
pub(crate) fn remembered<K: PartialEq, V: Clone, E>(
    recent: &'static LocalKey<RefCell<Recent<K, V>>>,
    key: K,
    work: impl FnOnce() -> Result<V, E>,
) -> Result<V, E> {
    if let Some(value) = recent.with(|recent| recent.try_borrow_mut().ok()?.get(&key)) {
        return Ok(value);
    }
    let value = work()?;
    recent.with(|recent| recent.try_borrow_mut().map(|mut recent| recent.put(key, value.clone())).ok());
    Ok(value)
}

/// Up to `capacity` inputs and their answers, the most recently used first.
pub(crate) struct Recent<K, V> {
    entries: VecDeque<(K, V)>,
    capacity: usize,
}

impl<K: PartialEq, V: Clone> Recent<K, V> {
    pub(crate) const fn new(capacity: usize) -> Recent<K, V> {
        Recent { entries: VecDeque::new(), capacity }
    }

    /// The answer for `key`, if it is one of the last few; it becomes the most recent.
    pub(crate) fn get<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: PartialEq + ?Sized,
    {
        let at = self.entries.iter().position(|(k, _)| k.borrow() == key)?;
        let entry = self.entries.remove(at)?;
        let value = entry.1.clone();
        self.entries.push_front(entry);
        Some(value)
    }

    /// Keeps `value` as the answer for `key`, letting the least recent go when full.
    pub(crate) fn put(&mut self, key: K, value: V) {
        self.entries.retain(|(k, _)| *k != key);
        if self.entries.len() >= self.capacity {
            self.entries.pop_back();
        }
        self.entries.push_front((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recently_used_few() {
        let mut recent = Recent::new(2);
        recent.put("a".to_owned(), 1);
        recent.put("b".to_owned(), 2);
        assert_eq!(recent.get("a"), Some(1));
        // `b` is now the least recent: it goes.
        recent.put("c".to_owned(), 3);
        assert_eq!(recent.get("b"), None);
        assert_eq!(recent.get("a"), Some(1));
        assert_eq!(recent.get("c"), Some(3));
        // Put again: replaced, not kept twice.
        recent.put("c".to_owned(), 4);
        assert_eq!(recent.get("c"), Some(4));
        assert_eq!(recent.entries.len(), 2);
    }
}
