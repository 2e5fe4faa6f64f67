//! Decisions remembered per problem: choosing asks every kernel's `supports` and estimates every
//! way, tens to hundreds of microseconds; a training or serving loop repeats the same few problems,
//! so each is decided once. One memo type for every operation: the key is everything a decision
//! depends on (the operation builds it); a memo holds at most [`CAPACITY`] decisions and starts over
//! when full. A panic elsewhere while the lock was held does not poison it: a decision is written
//! whole or not at all.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

/// Decisions a memo holds before it starts over.
pub const CAPACITY: usize = 4096;

/// A bounded map from problem keys to decisions, shared by threads.
pub struct Memo<K, V> {
    map: Mutex<Option<HashMap<K, V>>>,
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    pub const fn new() -> Self {
        Memo {
            map: Mutex::new(None),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<HashMap<K, V>>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The decision remembered for `key`.
    pub fn get(&self, key: &K) -> Option<V> {
        self.lock().as_ref()?.get(key).cloned()
    }

    /// Remembers `value` for `key`.
    pub fn put(&self, key: K, value: V) {
        let mut guard = self.lock();
        let map = guard.get_or_insert_with(HashMap::new);
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, value);
    }

    /// The decision for `key`, made by `decide` the first time.
    pub fn get_or_try<E>(&self, key: K, decide: impl FnOnce() -> Result<V, E>) -> Result<V, E> {
        if let Some(value) = self.get(&key) {
            return Ok(value);
        }
        let value = decide()?;
        self.put(key, value.clone());
        Ok(value)
    }
}

impl<K: Hash + Eq, V: Clone> Default for Memo<K, V> {
    fn default() -> Self {
        Self::new()
    }
}
