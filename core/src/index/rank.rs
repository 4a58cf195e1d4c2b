//! Ranking a query's plan: every matching tool's score, the best `limit` of them in order, and
//! how many tools matched.
//!
//! Two ways give the same answer. [`Index::rank_every`] adds up every posting of the query's
//! terms, for every tool they reach. [`Index::rank_pruned`] first finds the matching tools as
//! bitsets, which also counts them, then scores them class by class, from the tools that match
//! the most query words down, and stops at the first class whose best possible score cannot
//! reach the top: a tool scores at most the sum of each concept's largest contribution, times
//! the coordination factor of the words it matches (and the largest leans). The tools it does
//! score go through the same additions in the same order as in `rank_every`, so their scores
//! are equal bit for bit, and so are the hits and their order.

use std::ops::Range;

use super::bits::{self, BLOCK};
use super::{Hit, Index, Plan, SearchOutcome};

/// What one document has scored so far in a search, kept as three words so a zeroed buffer
/// is a fresh one (the allocator hands those out without a loop): the score of every concept
/// before the current one, the current concept's best term (or sum, for a phrase), and the
/// query words matched (low 16 bits) with the current concept (high 16 bits; counted from 1,
/// 0 before the first, [`NO_CONCEPT`] after single terms only), each as bits.
type Tally = [u32; 3];

const NO_CONCEPT: u32 = (u16::MAX as u32) << 16;
const CONCEPT: u32 = !0xffff;

/// Adds a concept of one term to a tally: straight into the score. Whether the document was
/// reached for the first time.
#[inline(always)]
fn add_single(tally: &mut Tally, value: f32, words: u32) -> bool {
    let state = tally[2];
    let current = if state & CONCEPT == 0 { NO_CONCEPT } else { state & CONCEPT };
    tally[0] = (f32::from_bits(tally[0]) + value).to_bits();
    tally[2] = current | (state & 0xffff) | words;
    state == 0
}

/// Adds one term of concept `id` (in the high bits) to a tally. A concept's terms meet in the
/// tally's best, which counts once the document is reached by another concept: the best of a
/// word's stand-ins counts, not their sum (a phrase's terms, `sum`, do add up). Whether the
/// document was reached for the first time.
#[inline(always)]
fn add_term(tally: &mut Tally, value: f32, id: u32, sum: bool, words: u32) -> bool {
    let state = tally[2];
    let best = f32::from_bits(tally[1]);
    if state & CONCEPT != id {
        tally[0] = (f32::from_bits(tally[0]) + best).to_bits();
        tally[1] = value.to_bits();
        tally[2] = id | (state & 0xffff) | words;
    } else if sum {
        tally[1] = (best + value).to_bits();
    } else {
        tally[1] = best.max(value).to_bits();
    }
    state == 0
}

/// The query-wide parts of a tool's score: source descriptions, coordination and the leans.
struct Finish<'a> {
    index: &'a Index,
    plan: &'a Plan,
    /// Each source's score and words from its description; empty when none matched.
    sources: Vec<(f32, u16)>,
    /// By words matched: `1 - c + c * share`.
    coordination: Vec<f32>,
    /// The namespaces the query names.
    named: Vec<u32>,
    by_source: bool,
    by_action: bool,
}

impl<'a> Finish<'a> {
    fn new(index: &'a Index, plan: &'a Plan) -> Finish<'a> {
        let sources = index.source_scores(plan);
        // Plain arithmetic, so both targets compute the same bits.
        let c = index.ranking.coordination;
        let coordination = (0..=plan.words).map(|k| 1.0 - c + c * (k as f32 / plan.words as f32)).collect();
        let named = index.named(&plan.stems);
        // Only read what a query needs: a tool's source for source descriptions and named
        // namespaces, its action for the leans of plural nouns and numbers.
        let by_source = !sources.is_empty() || !named.is_empty();
        let by_action = plan.plural || plan.specific;
        Finish { index, plan, sources, coordination, named, by_source, by_action }
    }

    /// A tool's score and how many query words it matches, from its tally.
    #[inline(always)]
    fn score(&self, doc: u32, tally: &Tally) -> (f32, u32) {
        let index = self.index;
        let mut score = f32::from_bits(tally[0]) + f32::from_bits(tally[1]);
        let mut matched = tally[2] as u16;
        let mut factor = 1.0;
        if self.by_source {
            let source = index.doc_source[doc as usize];
            if let Some(&(shared, words)) = self.sources.get(source as usize) {
                score += shared;
                matched |= words;
            }
            if self.named.contains(&source) {
                factor *= index.ranking.named;
            }
        }
        if self.by_action {
            let action = index.actions[doc as usize];
            if self.plan.plural && index.listing_terms.contains(&action) {
                factor *= 1.0 + index.ranking.plural;
            } else if self.plan.specific && index.get_term == Some(action) {
                factor *= 1.0 + index.ranking.specific;
            }
        }
        let matched = matched.count_ones();
        (score * self.coordination[matched as usize] * factor, matched)
    }

    /// The most a tool's factor (named namespace, plural, number) can multiply its score by.
    fn most_factor(&self) -> f32 {
        let ranking = &self.index.ranking;
        let mut most = 1.0f32;
        if !self.named.is_empty() {
            most *= ranking.named.max(1.0);
        }
        if self.by_action {
            let mut lean = 1.0f32;
            if self.plan.plural {
                lean = lean.max(1.0 + ranking.plural);
            }
            if self.plan.specific {
                lean = lean.max(1.0 + ranking.specific);
            }
            most *= lean;
        }
        most
    }

    /// Whether every factor a score is multiplied by is at least 0, as bounds need.
    fn factors_are_positive(&self) -> bool {
        let ranking = &self.index.ranking;
        ranking.named >= 0.0
            && ranking.plural >= -1.0
            && ranking.specific >= -1.0
            && self.sources.iter().all(|&(score, _)| score >= 0.0)
            && self.plan.concepts.iter().flat_map(|c| &c.terms).all(|&(_, factor)| factor >= 0.0)
    }
}

/// The best `limit` so far, best first: (score, address rank, document, words matched).
struct Top {
    limit: usize,
    hits: Vec<(f32, u32, u32, u32)>,
}

impl Top {
    fn new(limit: usize) -> Top {
        Top { limit, hits: Vec::with_capacity(limit + 1) }
    }

    fn full(&self) -> bool {
        self.hits.len() == self.limit
    }

    /// The score a tool must reach to enter, once the top is full.
    fn threshold(&self) -> Option<f32> {
        if self.full() { self.hits.last().map(|h| h.0) } else { None }
    }

    #[inline(always)]
    fn offer(&mut self, index: &Index, doc: u32, (score, matched): (f32, u32)) {
        let better = |a: &(f32, u32, u32, u32), b: &(f32, u32, u32, u32)| {
            a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)) == std::cmp::Ordering::Greater
        };
        // Most tools fall short of a full top's last: leave them before reading their rank.
        if self.full() && self.hits.last().is_none_or(|last| score.total_cmp(&last.0).is_lt()) {
            return;
        }
        let hit = (score, index.address_rank[doc as usize], doc, matched);
        if self.full() && self.hits.last().is_none_or(|last| !better(&hit, last)) {
            return;
        }
        let at = self.hits.partition_point(|t| better(t, &hit));
        self.hits.insert(at, hit);
        self.hits.truncate(self.limit);
    }

    fn outcome(self, index: &Index, plan: &Plan, total_matches: usize, hidden: usize) -> SearchOutcome {
        let weak = self.hits.first().is_some_and(|&(_, _, _, matched)| 2 * (matched as usize) < plan.words);
        let hits = self
            .hits
            .into_iter()
            .map(|(score, _, doc, _)| Hit { address: index.addresses[doc as usize].clone(), score })
            .collect();
        SearchOutcome { hits, total_matches, hidden, listing: false, weak }
    }
}

/// A bound on a score, raised a little so the rounding of a sum taken in another order never
/// puts a real score above it.
const SLACK: f32 = 1.001;

impl Index {
    /// Scores every tool the plan's terms reach: the reference [`Index::rank_pruned`] must
    /// match, and the way for plans it does not take.
    pub(super) fn rank_every<K: Fn(&super::ToolAddress) -> bool>(
        &self,
        plan: &Plan,
        range: Range<u32>,
        limit: usize,
        keep: Option<K>,
    ) -> SearchOutcome {
        let n = self.addresses.len();
        let mut scores: Vec<Tally> = vec![[0; 3]; n];
        let mut touched: Vec<u32> = Vec::new();
        for (id, concept) in (1u32..).zip(&plan.concepts) {
            let words = u32::from(concept.words);
            if let [(term, factor)] = concept.terms[..] {
                let (docs, weights) = self.postings(term);
                for (&doc, &weight) in docs.iter().zip(weights) {
                    if add_single(&mut scores[doc as usize], weight * factor, words) {
                        touched.push(doc);
                    }
                }
            } else {
                for &(term, factor) in &concept.terms {
                    let (docs, weights) = self.postings(term);
                    for (&doc, &weight) in docs.iter().zip(weights) {
                        if add_term(&mut scores[doc as usize], weight * factor, id << 16, concept.sum, words)
                        {
                            touched.push(doc);
                        }
                    }
                }
            }
        }
        let finish = Finish::new(self, plan);
        let (mut hidden, mut total_matches) = (0, 0);
        let mut top = Top::new(limit);
        for doc in touched {
            if !range.contains(&doc) {
                continue;
            }
            if keep.as_ref().is_some_and(|keep| !keep(&self.addresses[doc as usize])) {
                hidden += 1;
                continue;
            }
            total_matches += 1;
            top.offer(self, doc, finish.score(doc, &scores[doc as usize]));
        }
        top.outcome(self, plan, total_matches, hidden)
    }

    /// Like [`Index::rank_every`], scoring only the tools that might reach the top (see the
    /// module's note). `None` for a plan it does not take: more than 64 concepts, or a
    /// ranking with a negative factor, which bounds cannot hold.
    pub(super) fn rank_pruned<K: Fn(&super::ToolAddress) -> bool>(
        &self,
        plan: &Plan,
        range: Range<u32>,
        limit: usize,
        keep: Option<K>,
    ) -> Option<SearchOutcome> {
        let concepts = &plan.concepts;
        let blocks = self.bits.blocks;
        if concepts.len() > 64 || blocks == 0 {
            return None;
        }
        let finish = Finish::new(self, plan);
        if !finish.factors_are_positive() {
            return None;
        }

        // Each term's tools (a term of two concepts counts twice), and the most it can add to
        // a score; each concept's tools, and the most it can add.
        let entries: Vec<(usize, u32, f32)> = (concepts.iter().enumerate())
            .flat_map(|(c, concept)| concept.terms.iter().map(move |&(term, factor)| (c, term, factor)))
            .map(|(c, term, factor)| (c, term, self.bits.max_weight[term as usize] * factor))
            .collect();
        let mut entry_bits = vec![0u64; entries.len() * blocks];
        let mut concept_bits = vec![0u64; concepts.len() * blocks];
        let mut concept_most = vec![0f32; concepts.len()];
        for (&(c, term, most), bits) in entries.iter().zip(entry_bits.chunks_exact_mut(blocks)) {
            self.bits.add_to(term, self.postings(term).0, bits);
            for (o, b) in concept_bits[c * blocks..(c + 1) * blocks].iter_mut().zip(bits.iter()) {
                *o |= b;
            }
            concept_most[c] = concepts[c].combine(concept_most[c], most);
        }
        // Terms by what they can add, least first, for leaving out the tools that have only
        // terms which together cannot reach the top.
        let mut by_most: Vec<usize> = (0..entries.len()).collect();
        by_most.sort_by(|&a, &b| entries[a].2.total_cmp(&entries[b].2).then(a.cmp(&b)));
        let most_shared = finish.sources.iter().map(|&(score, _)| score).fold(0.0, f32::max);
        let most = concept_most.iter().sum::<f32>() + most_shared;

        // The tools that match, within the range, kept: counted here, scored below.
        let mut matching = vec![0u64; blocks];
        for bits in concept_bits.chunks_exact(blocks) {
            for (m, b) in matching.iter_mut().zip(bits) {
                *m |= b;
            }
        }
        bits::keep_range(&mut matching, range.start, range.end);
        let mut total_matches = 0;
        let mut hidden = 0;
        match &keep {
            None => total_matches = matching.iter().map(|w| w.count_ones() as usize).sum(),
            Some(keep) => {
                let mut dropped = Vec::new();
                bits::for_each(&matching, |doc| {
                    if keep(&self.addresses[doc as usize]) {
                        total_matches += 1;
                    } else {
                        hidden += 1;
                        dropped.push(doc);
                    }
                });
                for doc in dropped {
                    matching[doc as usize / BLOCK] &= !(1 << (doc as usize % BLOCK));
                }
            }
        }
        let mut top = Top::new(limit);
        if limit == 0 || total_matches == 0 {
            return Some(top.outcome(self, plan, total_matches, hidden));
        }

        // `at_least[k]`: the matching tools that match at least `k` of the query's words, by
        // themselves or through their source's description.
        let words = plan.words;
        let mut at_least = vec![0u64; (words + 2) * blocks];
        at_least[..blocks].copy_from_slice(&matching);
        let mut plane = vec![0u64; blocks];
        for word in 0..words {
            let bit = 1u16 << word;
            plane.fill(0);
            for (concept, bits) in concepts.iter().zip(concept_bits.chunks_exact(blocks)) {
                if concept.words & bit != 0 {
                    for (p, b) in plane.iter_mut().zip(bits) {
                        *p |= b;
                    }
                }
            }
            for (source, &(_, source_words)) in finish.sources.iter().enumerate() {
                if source_words & bit != 0 {
                    let docs = &self.namespaces[source].1;
                    bits::set_range(&mut plane, docs.start, docs.end);
                }
            }
            for k in (1..=word + 1).rev() {
                let (below, from) = at_least.split_at_mut(k * blocks);
                let below = &below[(k - 1) * blocks..];
                for ((a, b), p) in from[..blocks].iter_mut().zip(below).zip(&plane) {
                    *a |= b & p;
                }
            }
        }

        // Class by class, most words first, while a class can still reach the top.
        let most_factor = finish.most_factor();
        let mut scores: Vec<Tally> = vec![[0; 3]; self.addresses.len()];
        let mut class = vec![0u64; blocks];
        for k in (0..=words).rev() {
            let bound = most * finish.coordination[k].max(0.0) * most_factor * SLACK;
            if top.threshold().is_some_and(|threshold| bound < threshold) {
                continue;
            }
            let (this, above) = at_least[k * blocks..].split_at(blocks);
            let mut size = 0;
            for ((c, t), a) in class.iter_mut().zip(this).zip(&above[..blocks]) {
                *c = t & !a;
                size += c.count_ones() as usize;
            }
            if size == 0 {
                continue;
            }
            // What each tool's score can still be, times this: below the top's last, it is
            // left out.
            let scale = finish.coordination[k].max(0.0) * most_factor * SLACK;
            if let Some(threshold) = top.threshold() {
                // The terms that together cannot reach the top, least first: a tool with no
                // other term is left out.
                let mut low = vec![0f32; concepts.len()];
                let mut lows = 0;
                for &e in &by_most {
                    let (c, _, most) = entries[e];
                    let before = low[c];
                    low[c] = concepts[c].combine(low[c], most);
                    if (most_shared + low.iter().sum::<f32>()) * scale >= threshold {
                        low[c] = before;
                        break;
                    }
                    lows += 1;
                }
                let mut essential = vec![0u64; blocks];
                for &e in &by_most[lows..] {
                    for (o, b) in essential.iter_mut().zip(&entry_bits[e * blocks..(e + 1) * blocks]) {
                        *o |= b;
                    }
                }
                size = 0;
                for (c, e) in class.iter_mut().zip(&essential) {
                    *c &= e;
                    size += c.count_ones() as usize;
                }
                for (b, word) in class.iter_mut().enumerate() {
                    let mut left = *word;
                    while left != 0 {
                        let j = left.trailing_zeros();
                        left &= left - 1;
                        let mut can = most_shared;
                        for (c, &most) in concept_most.iter().enumerate() {
                            if concept_bits[c * blocks + b] >> j & 1 != 0 {
                                can += most;
                            }
                        }
                        if can * scale < threshold {
                            *word &= !(1 << j);
                            size -= 1;
                        }
                    }
                }
            }
            self.tally(plan, &class, size, &mut scores);
            bits::for_each(&class, |doc| {
                let tally = &scores[doc as usize];
                // Cheaper than the score, and enough to leave most tools out.
                let most = f32::from_bits(tally[0]) + f32::from_bits(tally[1]) + most_shared;
                if top.threshold().is_some_and(|threshold| most * scale < threshold) {
                    return;
                }
                top.offer(self, doc, finish.score(doc, tally));
            });
        }
        Some(top.outcome(self, plan, total_matches, hidden))
    }

    /// The tallies of the documents in `class` (`size` of them), as [`Index::rank_every`]
    /// adds them up: concept by concept, term by term, a term's documents in order.
    fn tally(&self, plan: &Plan, class: &[u64], size: usize, scores: &mut [Tally]) {
        for (id, concept) in (1u32..).zip(&plan.concepts) {
            let words = u32::from(concept.words);
            let single = concept.terms.len() == 1;
            for &(term, factor) in &concept.terms {
                let (docs, weights) = self.postings(term);
                let mut add = |doc: u32, weight: f32| {
                    let tally = &mut scores[doc as usize];
                    if single {
                        add_single(tally, weight * factor, words);
                    } else {
                        add_term(tally, weight * factor, id << 16, concept.sum, words);
                    }
                };
                match self.bits.dense(term) {
                    // Few of the term's tools are in the class: find them by their bits.
                    Some((term_bits, before)) if size * 4 < docs.len() => {
                        for (b, (&c, &t)) in class.iter().zip(term_bits).enumerate() {
                            let mut both = c & t;
                            while both != 0 {
                                let j = both.trailing_zeros();
                                both &= both - 1;
                                let below = (t & ((1u64 << j) - 1)).count_ones();
                                let at = (before[b] + below) as usize;
                                add(docs[at], weights[at]);
                            }
                        }
                    }
                    _ => {
                        for (&doc, &weight) in docs.iter().zip(weights) {
                            if bits::has(class, doc) {
                                add(doc, weight);
                            }
                        }
                    }
                }
            }
        }
    }
}
