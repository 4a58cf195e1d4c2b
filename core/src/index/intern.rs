//! Hash tables for interning words: a deterministic fast hasher for string keys, and an
//! open-addressing map for words packed into a `u64`.

use std::hash::{BuildHasherDefault, Hasher};

/// The Fx hash (as in rustc): fast on short keys, and the same on every run and target, which
/// also keeps core free of the random keys the default hasher asks the platform for.
#[derive(Default, Clone, Copy)]
pub(super) struct FxHasher(u64);

pub(super) type FxBuild = BuildHasherDefault<FxHasher>;

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.mix(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.mix(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.mix(n as u64);
    }

    /// The Fx state's low bits mix poorly, and the table picks buckets by them: finish with
    /// the MurmurHash3 avalanche.
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

/// Packed word → value. Open addressing with linear probing; key 0 marks an empty slot, and no
/// packed word is 0 (a word has at least one byte, and none is NUL).
#[derive(Debug, Default, Clone)]
pub(super) struct PackedMap {
    slots: Vec<(u64, u32)>,
    len: usize,
    /// `64 - log2(slots.len())`: the slot of a key is the top bits of its product.
    shift: u32,
}

impl PackedMap {
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    pub(super) fn get(&self, key: u64) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let (k, v) = self.slots[i];
            if k == key {
                return Some(v);
            }
            if k == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts or replaces. Keys must not be 0.
    pub(super) fn insert(&mut self, key: u64, value: u32) {
        debug_assert_ne!(key, 0);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let (k, _) = self.slots[i];
            if k == key {
                self.slots[i].1 = value;
                return;
            }
            if k == 0 {
                self.slots[i] = (key, value);
                self.len += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
        self.shift = 64 - size.trailing_zeros();
        self.len = 0;
        for (k, v) in old {
            if k != 0 {
                self.insert(k, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::PackedMap;

    #[test]
    fn packed_map_grows_and_replaces() {
        let mut map = PackedMap::default();
        assert_eq!(map.get(7), None);
        for k in 1..5_000u64 {
            map.insert(k * 0x1_0001, u32::try_from(k).unwrap());
        }
        map.insert(0x1_0001, 42);
        assert_eq!(map.get(0x1_0001), Some(42));
        assert_eq!(map.get(4_999 * 0x1_0001), Some(4_999));
        assert_eq!(map.get(3), None);
        assert_eq!(map.len, 4_999);
    }
}
