//! The index: BM25F over every tool in a catalog, so `search` can rank tools by what the model
//! wants to do.
//!
//! Six fields are scored per tool, each with its own weight and length normalisation: the
//! tool's name (words of the upstream name, the identifier and the title), its namespace, its
//! description, its parameter names, its parameter descriptions, and its parameters' enum
//! values and examples. A seventh, the source's own description (its server instructions), is
//! shared by the source's tools: it is scored once per source and added to each of its tools
//! that matches the query on its own. Connection names are never indexed: they are a person's
//! labels for credentials and say nothing about what a tool does.
//!
//! Words are folded and stemmed (Snowball English) on both sides. A query word also brings in
//! the words that stand in for it (`vocabulary.txt`), at a smaller factor, and an unknown word
//! the terms it is a prefix of. The weights are tuned on the query sets in `evals/queries/`.
//!
//! Everything that does not depend on the query is computed at build time: each posting holds
//! its term's finished contribution to a tool's score, so a query is a few additions per
//! matching tool. Order is deterministic: score descending, ties by address ascending.
//!
//! Over many tools most of a query's matches cannot reach the top, and `rank.rs` leaves them
//! unscored: terms many tools have are also kept as bitsets (`bits.rs`), which find and count
//! the matches, and a bound on what each can still score skips the rest. It scores the tools
//! it keeps exactly as the plain way does, so the answers are the same to the last bit
//! (`tests.rs` holds the two ways equal over the query sets).

mod bits;
mod build;
mod intern;
mod rank;
#[cfg(test)]
mod tests;
pub(crate) mod text;
mod vocabulary;

use std::collections::HashMap;
use std::ops::Range;

use crate::address::{Namespace, ToolAddress};
use crate::catalog::Catalog;
use intern::FxBuild;
use vocabulary::{Kind, vocabulary};

/// The per-tool fields, in the order of [`Ranking::fields`].
#[derive(Debug, Clone, Copy)]
enum Field {
    Name = 0,
    Namespace = 1,
    Description = 2,
    ParamNames = 3,
    ParamDescriptions = 4,
    Values = 5,
}

const FIELD_COUNT: usize = 6;

/// How much a field counts and how much a long one is discounted (BM25's `b`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeight {
    pub weight: f32,
    pub b: f32,
}

const fn field(weight: f32, b: f32) -> FieldWeight {
    FieldWeight { weight, b }
}

/// Everything that sets how tools rank. Hubs use [`Ranking::DEFAULT`]; other values are for
/// tuning it against the query sets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranking {
    pub name: FieldWeight,
    pub namespace: FieldWeight,
    pub description: FieldWeight,
    pub param_names: FieldWeight,
    pub param_descriptions: FieldWeight,
    /// Parameters' enum values and examples.
    pub values: FieldWeight,
    /// The source's description, shared by its tools.
    pub source: FieldWeight,
    /// BM25 saturation: how quickly repeated matches stop adding to a score.
    pub k1: f32,
    /// How much a term found only by prefix (`screensh` → `screenshot`) counts.
    pub prefix: f32,
    /// How much a synonym from the vocabulary (`bug` for `issue`) counts.
    pub synonym: f32,
    /// How much a broader word's stand-in (`find` for `list`) counts.
    pub broader: f32,
    /// A stand-in that more than this share of the tools have is left out.
    pub common: f32,
    /// How much more a tool whose action is `list` or `search` counts for a query with a
    /// plural noun (`open bugs`), which asks for many things: its score is multiplied by
    /// `1 + plural`.
    pub plural: f32,
    /// The factor on the score of a tool whose namespace the query names (`github issues`).
    pub named: f32,
    /// The same for a tool whose action is `get` when the query has a number in it
    /// (`ticket 42`), which asks for one thing.
    pub specific: f32,
    /// The factor on a term that is the first word of a tool's name, its action (`list` of
    /// `listIssues`), so the query's verb tells apart tools about the same things.
    pub action: f32,
    /// How much matching more of the query's words counts beyond the words' own scores: a
    /// tool's score is multiplied by `1 - c + c * share`, for the share of the query's words
    /// it matches (0 leaves scores alone, 1 scales them by the share).
    pub coordination: f32,
}

impl Ranking {
    /// Tuned on `evals/queries/tuning.txt`.
    pub const DEFAULT: Ranking = Ranking {
        name: field(3.499, 0.75),
        namespace: field(4.0, 0.0),
        description: field(0.84, 0.5),
        param_names: field(0.3, 0.5),
        param_descriptions: field(0.36, 0.5),
        values: field(0.72, 0.0),
        source: field(0.5, 0.75),
        k1: 2.4,
        prefix: 0.75,
        synonym: 0.75,
        broader: 0.4,
        common: 0.5,
        plural: 0.2,
        named: 1.3,
        specific: 0.25,
        action: 1.3,
        coordination: 1.0,
    };

    fn fields(&self) -> [FieldWeight; FIELD_COUNT] {
        [self.name, self.namespace, self.description, self.param_names, self.param_descriptions, self.values]
    }
}

impl Default for Ranking {
    fn default() -> Ranking {
        Ranking::DEFAULT
    }
}

/// At most this many vocabulary terms stand in for one unknown query word.
const PREFIX_EXPANSIONS: usize = 8;
/// Shorter query words are not expanded by prefix.
const PREFIX_MIN_CHARS: usize = 3;
/// Words of a query beyond this many are ignored, so a huge query costs no more than a long one.
const MAX_QUERY_WORDS: usize = 16;
/// At most this many concepts (a word or phrase with what stands in for it) per query.
const MAX_CONCEPTS: usize = 1024;
/// Text of one field beyond this many bytes is not indexed.
const MAX_FIELD_BYTES: usize = 16 * 1024;
/// Query text beyond this many bytes is ignored.
const MAX_QUERY_BYTES: usize = 4 * 1024;

/// One ranked tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub address: ToolAddress,
    /// BM25F score; 0 when a namespace is listed without a query.
    pub score: f32,
}

/// The best hits of a query and how many tools matched in all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOutcome {
    /// At most `limit` hits, best first.
    pub hits: Vec<Hit>,
    /// Tools that matched and were kept, `hits` included.
    pub total_matches: usize,
    /// Tools that matched but the caller's filter removed (for example, denied by policy).
    pub hidden: usize,
    /// The query had no words to search for, so a namespace was listed in listing order.
    pub listing: bool,
    /// Even the best hit matches fewer than half of the query's words, by itself or through
    /// words that stand in for them: nothing matches well.
    pub weak: bool,
}

/// A BM25F index over a catalog's tools. Build it again when the catalog changes.
#[derive(Debug, Clone, Default)]
pub struct Index {
    ranking: Ranking,
    /// Tool addresses by document id; documents follow the catalog's order.
    addresses: Vec<ToolAddress>,
    /// Position of each document when sorted by address, for tie-breaking.
    address_rank: Vec<u32>,
    /// Each namespace's documents, in catalog order (sorted by namespace).
    namespaces: Vec<(Namespace, Range<u32>)>,
    /// Each document's source, as a position in `namespaces`.
    doc_source: Vec<u32>,
    /// Each namespace's words as terms: a query with all of them names the namespace.
    namespace_terms: Vec<Box<[Box<str>]>>,
    /// The namespaces with each of those terms.
    namespace_words: HashMap<Box<str>, Vec<u32>, FxBuild>,
    /// Each document's action: the term of the first word of its name (`list` of
    /// `listIssues`), or `u32::MAX`.
    actions: Vec<u32>,
    /// The terms for `list` and `search`, and for `get`, as actions lean on them.
    listing_terms: Vec<u32>,
    get_term: Option<u32>,
    terms: HashMap<Box<str>, u32, FxBuild>,
    /// Each term's inverse document frequency among the tools.
    idf: Vec<f32>,
    /// Term ids sorted by their text, for prefix lookups.
    sorted_terms: Vec<(Box<str>, u32)>,
    /// Postings of term `t` are `docs[offsets[t]..offsets[t + 1]]`, with matching `weights`.
    offsets: Vec<u32>,
    docs: Vec<u32>,
    weights: Vec<f32>,
    /// The same for source descriptions: term `t` is in the sources
    /// `sources[source_offsets[t]..source_offsets[t + 1]]`, with matching `source_weights`.
    /// Empty when no source has a description.
    source_offsets: Vec<u32>,
    sources: Vec<u32>,
    source_weights: Vec<f32>,
    /// Terms many tools have as bitsets, and every term's largest weight.
    bits: bits::TermBits,
}

impl Index {
    /// Indexes every tool of `catalog`.
    pub fn build(catalog: &Catalog) -> Index {
        build::build(catalog, Ranking::DEFAULT)
    }

    /// Indexes every tool of `catalog`, ranking them by `ranking` instead of the default: for
    /// tuning.
    pub fn build_with(catalog: &Catalog, ranking: Ranking) -> Index {
        build::build(catalog, ranking)
    }

    /// Number of tools indexed.
    pub fn len(&self) -> usize {
        self.addresses.len()
    }

    pub fn is_empty(&self) -> bool {
        self.addresses.is_empty()
    }

    /// The namespaces indexed, in catalog order.
    pub fn namespaces(&self) -> impl Iterator<Item = &Namespace> {
        self.namespaces.iter().map(|(ns, _)| ns)
    }

    /// Ranks tools for `query`, optionally within one namespace, and returns the best `limit`.
    ///
    /// A query without searchable words (empty, punctuation, only stopwords) lists the
    /// namespace's tools in listing order when a namespace is given, and matches nothing
    /// otherwise. An unknown namespace matches nothing.
    pub fn search(&self, query: &str, namespace: Option<&Namespace>, limit: usize) -> SearchOutcome {
        self.search_with(query, namespace, limit, None::<fn(&ToolAddress) -> bool>)
    }

    /// Like [`Index::search`], but only tools for which `keep` holds are ranked and counted;
    /// the others are counted in [`SearchOutcome::hidden`]. `keep` is called only for tools
    /// that match.
    pub fn search_where(
        &self,
        query: &str,
        namespace: Option<&Namespace>,
        limit: usize,
        keep: impl Fn(&ToolAddress) -> bool,
    ) -> SearchOutcome {
        self.search_with(query, namespace, limit, Some(keep))
    }

    /// [`Index::search_where`], or with `None` every tool kept (then the matches are counted
    /// without a call per tool).
    fn search_with<K: Fn(&ToolAddress) -> bool>(
        &self,
        query: &str,
        namespace: Option<&Namespace>,
        limit: usize,
        keep: Option<K>,
    ) -> SearchOutcome {
        let range = match namespace {
            Some(ns) => match self.namespace_range(ns) {
                Some(range) => range,
                None => return SearchOutcome::default(),
            },
            None => 0..to_u32(self.addresses.len()),
        };
        let plan = self.plan(query);
        if plan.words == 0 {
            return match namespace {
                Some(_) => self.list(range, limit, |a| keep.as_ref().is_none_or(|keep| keep(a))),
                None => SearchOutcome::default(),
            };
        }
        // A plan whose terms reach few tools costs less in full than its bitsets would.
        let postings: usize =
            plan.concepts.iter().flat_map(|c| &c.terms).map(|&(t, _)| self.postings(t).0.len()).sum();
        if postings * 16 < self.addresses.len() {
            return self.rank_every(&plan, range, limit, keep.as_ref());
        }
        self.rank_pruned(&plan, range.clone(), limit, keep.as_ref())
            .unwrap_or_else(|| self.rank_every(&plan, range, limit, keep.as_ref()))
    }

    /// How `query` is searched, for tuning: each concept's words (as bits) and terms, with
    /// each term's factor and how many tools have it.
    #[doc(hidden)]
    pub fn explain(&self, query: &str) -> String {
        let plan = self.plan(query);
        let mut text_of: Vec<&str> = vec![""; self.idf.len()];
        for (t, id) in &self.sorted_terms {
            text_of[*id as usize] = t;
        }
        let mut out = format!("{} words\n", plan.words);
        for concept in &plan.concepts {
            let terms: Vec<String> = concept
                .terms
                .iter()
                .map(|&(t, f)| format!("{}×{f:.2}({})", text_of[t as usize], self.postings(t).0.len()))
                .collect();
            out.push_str(&format!(
                "  {:b}{}: {}\n",
                concept.words,
                if concept.sum { " sum" } else { "" },
                terms.join(" ")
            ));
        }
        out
    }

    /// Each source's score from its description and the query words it matches, by position
    /// in `namespaces`; empty when no source's description matches. The best term of a
    /// concept counts, as for tools.
    fn source_scores(&self, plan: &Plan) -> Vec<(f32, u16)> {
        let mut source_scores: Vec<(f32, u16)> = Vec::new();
        for concept in &plan.concepts {
            // Few sources have a description, so no staging.
            let mut shared: Vec<(u32, f32)> = Vec::new();
            for &(term, factor) in &concept.terms {
                let (sources, weights) = self.source_postings(term);
                for (&source, &weight) in sources.iter().zip(weights) {
                    match shared.iter_mut().find(|(s, _)| *s == source) {
                        Some((_, w)) => *w = concept.combine(*w, weight * factor),
                        None => shared.push((source, weight * factor)),
                    }
                }
            }
            for (source, weight) in shared {
                if source_scores.is_empty() {
                    source_scores = vec![(0f32, 0u16); self.namespaces.len()];
                }
                let (score, matched) = &mut source_scores[source as usize];
                *score += weight;
                *matched |= concept.words;
            }
        }
        source_scores
    }

    /// The namespaces the query's words name: all of a namespace's words are among them.
    fn named(&self, stems: &[String]) -> Vec<u32> {
        let mut named: Vec<u32> = stems
            .iter()
            .filter_map(|s| self.namespace_words.get(s.as_str()))
            .flatten()
            .copied()
            .filter(|&ns| self.namespace_terms[ns as usize].iter().all(|t| stems.iter().any(|s| s == &**t)))
            .collect();
        named.sort_unstable();
        named.dedup();
        named
    }

    fn postings(&self, term: u32) -> (&[u32], &[f32]) {
        let span = self.offsets[term as usize] as usize..self.offsets[term as usize + 1] as usize;
        (&self.docs[span.clone()], &self.weights[span])
    }

    fn source_postings(&self, term: u32) -> (&[u32], &[f32]) {
        let Some(&end) = self.source_offsets.get(term as usize + 1) else { return (&[], &[]) };
        let span = self.source_offsets[term as usize] as usize..end as usize;
        (&self.sources[span.clone()], &self.source_weights[span])
    }

    fn list(&self, range: Range<u32>, limit: usize, keep: impl Fn(&ToolAddress) -> bool) -> SearchOutcome {
        let mut outcome = SearchOutcome { listing: true, ..SearchOutcome::default() };
        for address in &self.addresses[range.start as usize..range.end as usize] {
            if !keep(address) {
                outcome.hidden += 1;
                continue;
            }
            outcome.total_matches += 1;
            if outcome.hits.len() < limit {
                outcome.hits.push(Hit { address: address.clone(), score: 0.0 });
            }
        }
        outcome
    }

    fn namespace_range(&self, ns: &Namespace) -> Option<Range<u32>> {
        self.namespaces.iter().find(|(n, _)| n == ns).map(|(_, r)| r.clone())
    }

    /// The query's terms with their factors: each searchable word's own term, what the
    /// vocabulary has stand in for it (and for phrases of it), and for a word the index does
    /// not know, the terms it is a prefix of.
    fn plan(&self, query: &str) -> Plan {
        let mut plan = Plan::default();
        // Every whole word, stemmed, with its bit among the searchable words (0 for a
        // stopword); and the parts of words that change case inside (`createIssue`), each with
        // the bit of its word, so matching a part matches the word.
        let mut words: Vec<(String, u16)> = Vec::new();
        let mut parts: Vec<(String, u16)> = Vec::new();
        // Each searchable word as enum values hold it, unstemmed.
        let mut values: Vec<(String, u16)> = Vec::new();
        let mut buf = String::new();
        text::for_each_word_and_part(clip(query, MAX_QUERY_BYTES), &mut buf, |word, part| {
            let mut text = String::new();
            word.write_into(&mut text);
            if part {
                let bit = words.last().map_or(0, |(_, bit)| *bit);
                if bit != 0 && !text::is_stopword(&text) {
                    text::stem(&mut text);
                    parts.push((text, bit));
                }
                return;
            }
            if plan.words >= MAX_QUERY_WORDS {
                return;
            }
            if text::is_stopword(&text) {
                words.push((text, 0));
                return;
            }
            // A number is a value (`ticket 42`), not a word tools use.
            if text.bytes().all(|b| b.is_ascii_digit()) {
                plan.specific = true;
                words.push((text, 0));
                return;
            }
            let folded = text.clone();
            text::stem(&mut text);
            plan.plural |= is_plural(&folded, &text);
            values.push((build::value_term(&folded), 1 << plan.words));
            words.push((text, 1 << plan.words));
            plan.words += 1;
        });
        plan.stems =
            words.iter().chain(&parts).filter(|(_, bit)| *bit != 0).map(|(w, _)| w.clone()).collect();
        // Each word's own term; the parts of a word that changes case count together.
        let mut unknown: Vec<(&str, u16)> = Vec::new();
        for (word, bit) in &words {
            if *bit == 0 {
                continue;
            }
            match self.terms.get(word.as_str()) {
                Some(&term) => plan.add(*bit, false, term, 1.0),
                None => unknown.push((word, *bit)),
            }
        }
        for (word, bit) in &parts {
            if let Some(&term) = self.terms.get(word.as_str()) {
                plan.add(*bit, true, term, 1.0);
            }
        }
        for (value, bit) in &values {
            if let Some(&term) = self.terms.get(value.as_str()) {
                plan.add(*bit, false, term, 1.0);
            }
        }

        // What the vocabulary has stand in for each word and phrase. A stand-in never counts
        // for more than the words it stands for would: its rarity is capped at theirs.
        let vocabulary = vocabulary();
        let n = self.addresses.len();
        for start in 0..words.len() {
            let longest = vocabulary.longest.min(words.len() - start);
            for len in 1..=longest {
                let span = &words[start..start + len];
                let mask = span.iter().fold(0, |m, (_, bit)| m | bit);
                if mask == 0 {
                    continue;
                }
                let phrase: Vec<&str> = span.iter().map(|(w, _)| w.as_str()).collect();
                let stand_ins = vocabulary.stand_ins(&phrase);
                if stand_ins.is_empty() {
                    continue;
                }
                let rarity = span
                    .iter()
                    .filter_map(|(w, _)| self.terms.get(w.as_str()))
                    .map(|&t| self.idf[t as usize])
                    .fold(None, |m: Option<f32>, idf| Some(m.map_or(idf, |m| m.max(idf))));
                for stand_in in stand_ins {
                    let factor = match stand_in.kind {
                        Kind::Synonym => self.ranking.synonym,
                        Kind::Broader => self.ranking.broader,
                    };
                    // Every term of a phrase, or the phrase is not there.
                    let Some(terms) = stand_in
                        .terms
                        .iter()
                        .map(|t| self.terms.get(&**t).copied())
                        .collect::<Option<Vec<u32>>>()
                    else {
                        continue;
                    };
                    // A stand-in most tools have says little and costs the most to add up.
                    if terms.iter().any(|&t| self.postings(t).0.len() as f32 > self.ranking.common * n as f32)
                    {
                        continue;
                    }
                    let group = plan.concept(mask, terms.len() > 1);
                    for term in terms {
                        let idf = self.idf[term as usize];
                        let capped = match rarity {
                            Some(rarity) if idf > rarity => factor * rarity / idf,
                            _ => factor,
                        };
                        plan.add_to(group, term, capped);
                    }
                }
            }
        }

        // A word no tool uses: the terms it is a prefix of.
        for (word, bit) in unknown {
            if word.chars().count() < PREFIX_MIN_CHARS {
                continue;
            }
            let from = self.sorted_terms.partition_point(|(t, _)| **t < *word);
            for (t, term) in self.sorted_terms[from..].iter().take(PREFIX_EXPANSIONS) {
                if !t.starts_with(word) {
                    break;
                }
                plan.add(bit, false, *term, self.ranking.prefix);
            }
        }
        plan.concepts.retain(|c| !c.terms.is_empty());
        // Concepts are counted in 16 bits while scoring; a query has far fewer.
        plan.concepts.truncate(MAX_CONCEPTS);
        plan
    }
}

/// What a query asks for, after normalisation.
#[derive(Default)]
struct Plan {
    /// Searchable words in the query, known or not.
    words: usize,
    /// The searchable words, stemmed.
    stems: Vec<String>,
    /// A word is a plural noun.
    plural: bool,
    /// A word is a number.
    specific: bool,
    concepts: Vec<Concept>,
}

/// Terms that stand for the same query words: a word's own term, its stand-ins and prefix
/// matches. A tool scores the best of them, or, for the terms of one phrase, their sum.
struct Concept {
    /// The query words it stands for, as bits.
    words: u16,
    sum: bool,
    /// Distinct terms with the factor they count with.
    terms: Vec<(u32, f32)>,
}

impl Concept {
    fn combine(&self, so_far: f32, more: f32) -> f32 {
        if self.sum { so_far + more } else { so_far.max(more) }
    }
}

impl Plan {
    /// The concept for `words`: the one already there, unless its terms are to be summed,
    /// which always makes a new one.
    fn concept(&mut self, words: u16, sum: bool) -> usize {
        if !sum {
            if let Some(i) = self.concepts.iter().position(|c| c.words == words && !c.sum) {
                return i;
            }
        }
        self.concepts.push(Concept { words, sum, terms: Vec::new() });
        self.concepts.len() - 1
    }

    fn add(&mut self, words: u16, sum: bool, term: u32, factor: f32) {
        let concept = self.concept(words, sum);
        self.add_to(concept, term, factor);
    }

    fn add_to(&mut self, concept: usize, term: u32, factor: f32) {
        let terms = &mut self.concepts[concept].terms;
        match terms.iter_mut().find(|(t, _)| *t == term) {
            Some((_, f)) => *f = f.max(factor),
            None => terms.push((term, factor)),
        }
    }
}

/// Whether a folded word looks like a plural noun (`bugs`, `issues`, not `status` or `access`):
/// it ends in `s` and the stemmer took something off.
fn is_plural(folded: &str, stemmed: &str) -> bool {
    folded.len() > 3
        && folded.ends_with('s')
        && !["ss", "us", "is"].iter().any(|end| folded.ends_with(end))
        && stemmed.len() < folded.len()
}

/// Document and term counts stay far below `u32::MAX`; saturate rather than wrap if not.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
