//! Term bitsets: for each term that many tools have, its tools as one bit per document, and for
//! every term its largest weight. Built once with the index; a search uses them to find and
//! count the tools a query matches without reading every posting, and to bound what a tool
//! can still score.

/// Documents per bitset word.
pub(super) const BLOCK: usize = 64;

/// A term gets a bitset when at least one in this many tools has it: then its bitset is no
/// bigger than about its postings (8 bytes per posting, 12 bytes per 64 tools).
const DENSE_SHARE: usize = 64;

#[derive(Debug, Clone, Default)]
pub(super) struct TermBits {
    /// Bitset words per term: documents rounded up to [`BLOCK`].
    pub(super) blocks: usize,
    /// Each term's largest posting weight.
    pub(super) max_weight: Vec<f32>,
    /// Where each term's bitset starts in `bits` (and its counts in `before`), or `u32::MAX`
    /// for a term few tools have, read from its postings instead.
    slot: Vec<u32>,
    bits: Vec<u64>,
    /// For each word of a bitset, how many of the term's postings come before it: the bits
    /// below a document, added to this, give its position among the term's postings.
    before: Vec<u32>,
}

impl TermBits {
    /// Bitsets for `n` documents from postings laid out as [`super::Index`] holds them.
    pub(super) fn build(n: usize, offsets: &[u32], docs: &[u32], weights: &[f32]) -> TermBits {
        let blocks = n.div_ceil(BLOCK);
        let terms = offsets.len().saturating_sub(1);
        let mut out = TermBits { blocks, max_weight: Vec::with_capacity(terms), ..TermBits::default() };
        out.slot.reserve(terms);
        for t in 0..terms {
            let span = offsets[t] as usize..offsets[t + 1] as usize;
            out.max_weight.push(weights[span.clone()].iter().copied().fold(0.0, f32::max));
            if span.len() * DENSE_SHARE < n {
                out.slot.push(u32::MAX);
                continue;
            }
            let start = out.bits.len();
            out.slot.push(super::to_u32(start));
            out.bits.resize(start + blocks, 0);
            out.before.resize(start + blocks, 0);
            for &doc in &docs[span] {
                out.bits[start + doc as usize / BLOCK] |= 1 << (doc as usize % BLOCK);
            }
            let mut count = 0;
            for b in 0..blocks {
                out.before[start + b] = count;
                count += out.bits[start + b].count_ones();
            }
        }
        out
    }

    /// The bitset of `term` and its counts, if it has one.
    pub(super) fn dense(&self, term: u32) -> Option<(&[u64], &[u32])> {
        let start = *self.slot.get(term as usize)?;
        if start == u32::MAX {
            return None;
        }
        let span = start as usize..start as usize + self.blocks;
        Some((&self.bits[span.clone()], &self.before[span]))
    }

    /// Sets the bits of `term`'s documents in `out`; `docs` are its postings.
    pub(super) fn add_to(&self, term: u32, docs: &[u32], out: &mut [u64]) {
        match self.dense(term) {
            Some((bits, _)) => {
                for (o, b) in out.iter_mut().zip(bits) {
                    *o |= b;
                }
            }
            None => {
                for &doc in docs {
                    set(out, doc);
                }
            }
        }
    }
}

pub(super) fn set(bits: &mut [u64], doc: u32) {
    bits[doc as usize / BLOCK] |= 1 << (doc as usize % BLOCK);
}

pub(super) fn has(bits: &[u64], doc: u32) -> bool {
    bits[doc as usize / BLOCK] >> (doc as usize % BLOCK) & 1 != 0
}

/// Clears every bit outside `start..end`.
pub(super) fn keep_range(bits: &mut [u64], start: u32, end: u32) {
    for (b, word) in bits.iter_mut().enumerate() {
        let from = (b * BLOCK) as u64;
        let below = u64::from(start).saturating_sub(from).min(64);
        let until = u64::from(end).saturating_sub(from).min(64);
        *word &= ones(until) & !ones(below);
    }
}

/// Sets every bit in `start..end`.
pub(super) fn set_range(bits: &mut [u64], start: u32, end: u32) {
    for (b, word) in bits.iter_mut().enumerate() {
        let from = (b * BLOCK) as u64;
        let below = u64::from(start).saturating_sub(from).min(64);
        let until = u64::from(end).saturating_sub(from).min(64);
        *word |= ones(until) & !ones(below);
    }
}

/// The low `k` bits set, for `k` ≤ 64.
fn ones(k: u64) -> u64 {
    if k >= 64 { u64::MAX } else { (1 << k) - 1 }
}

/// Calls `f` with each document whose bit is set, in order.
pub(super) fn for_each(bits: &[u64], mut f: impl FnMut(u32)) {
    for (b, &word) in bits.iter().enumerate() {
        let mut word = word;
        while word != 0 {
            let j = word.trailing_zeros();
            word &= word - 1;
            f(super::to_u32(b * BLOCK) + j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_positions() {
        let mut bits = vec![u64::MAX; 3];
        keep_range(&mut bits, 60, 130);
        let mut docs = Vec::new();
        for_each(&bits, |d| docs.push(d));
        assert_eq!(docs, (60..130).collect::<Vec<u32>>());
        let mut set = vec![0; 3];
        set_range(&mut set, 60, 130);
        assert_eq!(set, bits);

        // Term 0 in documents 1, 70, 71 (dense in 150), term 1 in 5 (not).
        let offsets = [0, 3, 4];
        let docs = [1, 70, 71, 5];
        let weights = [0.5, 2.0, 1.0, 3.0];
        let tb = TermBits::build(150, &offsets, &docs, &weights);
        assert_eq!(tb.max_weight, [2.0, 3.0]);
        let (bits, before) = tb.dense(0).unwrap();
        assert_eq!((bits[1], before), (0b1100_0000, &[0, 1, 3][..]));
        assert!(tb.dense(1).is_none());
        assert!(has(bits, 71) && !has(bits, 72));
    }
}
