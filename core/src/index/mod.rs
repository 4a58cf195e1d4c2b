//! The index: BM25F over every tool in a catalog, so `search` can rank tools by what the model
//! wants to do.
//!
//! Five fields are scored, each with its own weight and length normalisation: the tool's name
//! (words of the upstream name, the identifier and the title), its namespace, its description,
//! its parameter names and its parameter descriptions. Connection names are never indexed:
//! they are a person's labels for credentials and say nothing about what a tool does.
//!
//! Everything that does not depend on the query is computed at build time: each posting holds
//! its term's finished contribution to a tool's score, so a query is a few additions per
//! matching tool. Order is deterministic: score descending, ties by address ascending.

mod build;
mod intern;
mod text;

use std::collections::HashMap;
use std::ops::Range;

use crate::address::{Namespace, ToolAddress};
use crate::catalog::Catalog;
use intern::FxBuild;

/// The indexed fields, in the order of [`FIELDS`].
#[derive(Debug, Clone, Copy)]
enum Field {
    Name = 0,
    Namespace = 1,
    Description = 2,
    ParamNames = 3,
    ParamDescriptions = 4,
}

const FIELD_COUNT: usize = 5;

/// `(weight, b)` per field: how much a match counts and how much a long field is discounted.
const FIELDS: [(f32, f32); FIELD_COUNT] = [
    (3.0, 0.3),  // name
    (1.0, 0.0),  // namespace
    (1.0, 0.75), // description
    (1.2, 0.5),  // parameter names
    (0.3, 0.75), // parameter descriptions
];

/// BM25 saturation: how quickly repeated matches stop adding to a score.
const K1: f32 = 1.2;

/// How much a term found only by prefix (`screensh` → `screenshot`) counts.
const PREFIX_FACTOR: f32 = 0.5;
/// At most this many vocabulary terms stand in for one unknown query word.
const PREFIX_EXPANSIONS: usize = 8;
/// Shorter query words are not expanded by prefix.
const PREFIX_MIN_CHARS: usize = 3;
/// Words of a query beyond this many are ignored, so a huge query costs no more than a long one.
const MAX_QUERY_WORDS: usize = 32;
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
}

/// A BM25F index over a catalog's tools. Build it again when the catalog changes.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Tool addresses by document id; documents follow the catalog's order.
    addresses: Vec<ToolAddress>,
    /// Position of each document when sorted by address, for tie-breaking.
    address_rank: Vec<u32>,
    /// Each namespace's documents, in catalog order (sorted by namespace).
    namespaces: Vec<(Namespace, Range<u32>)>,
    terms: HashMap<Box<str>, u32, FxBuild>,
    /// Term ids sorted by their text, for prefix lookups.
    sorted_terms: Vec<(Box<str>, u32)>,
    /// Postings of term `t` are `docs[offsets[t]..offsets[t + 1]]`, with matching `weights`.
    offsets: Vec<u32>,
    docs: Vec<u32>,
    weights: Vec<f32>,
}

impl Index {
    /// Indexes every tool of `catalog`.
    pub fn build(catalog: &Catalog) -> Index {
        build::build(catalog)
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
        self.search_where(query, namespace, limit, |_| true)
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
                Some(_) => self.list(range, limit, keep),
                None => SearchOutcome::default(),
            };
        }

        let mut scores = vec![0f32; self.addresses.len()];
        let mut touched: Vec<u32> = Vec::new();
        for &(term, factor) in &plan.terms {
            let span = self.offsets[term as usize] as usize..self.offsets[term as usize + 1] as usize;
            for (&doc, &weight) in self.docs[span.clone()].iter().zip(&self.weights[span]) {
                let score = &mut scores[doc as usize];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += weight * factor;
            }
        }

        let mut hidden = 0;
        let mut found: Vec<(f32, u32, u32)> = Vec::with_capacity(touched.len());
        for doc in touched {
            if !range.contains(&doc) {
                continue;
            }
            if keep(&self.addresses[doc as usize]) {
                found.push((scores[doc as usize], self.address_rank[doc as usize], doc));
            } else {
                hidden += 1;
            }
        }
        let total_matches = found.len();
        let order = |a: &(f32, u32, u32), b: &(f32, u32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if found.len() > limit {
            if limit == 0 {
                found.clear();
            } else {
                found.select_nth_unstable_by(limit - 1, order);
                found.truncate(limit);
            }
        }
        found.sort_unstable_by(order);
        let hits = found
            .into_iter()
            .map(|(score, _, doc)| Hit { address: self.addresses[doc as usize].clone(), score })
            .collect();
        SearchOutcome { hits, total_matches, hidden, listing: false }
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

    /// The query's terms with their factors; words the index does not know are looked up by
    /// prefix.
    fn plan(&self, query: &str) -> Plan {
        let mut plan = Plan::default();
        let mut buf = String::new();
        let mut unknown: Vec<String> = Vec::new();
        text::for_each_word(clip(query, MAX_QUERY_BYTES), &mut buf, |word| {
            if plan.words >= MAX_QUERY_WORDS {
                return;
            }
            let mut word = {
                let mut text = String::new();
                word.write_into(&mut text);
                text
            };
            if text::is_stopword(&word) {
                return;
            }
            text::stem(&mut word);
            plan.words += 1;
            match self.terms.get(word.as_str()) {
                Some(&term) => plan.add(term, 1.0),
                None => unknown.push(word),
            }
        });
        for word in unknown {
            if word.chars().count() < PREFIX_MIN_CHARS {
                continue;
            }
            let from = self.sorted_terms.partition_point(|(t, _)| **t < *word);
            for (t, term) in self.sorted_terms[from..].iter().take(PREFIX_EXPANSIONS) {
                if !t.starts_with(word.as_str()) {
                    break;
                }
                plan.add(*term, PREFIX_FACTOR);
            }
        }
        plan
    }
}

/// What a query asks for, after normalisation.
#[derive(Default)]
struct Plan {
    /// Searchable words in the query, known or not.
    words: usize,
    /// Distinct terms with the factor they count with.
    terms: Vec<(u32, f32)>,
}

impl Plan {
    fn add(&mut self, term: u32, factor: f32) {
        match self.terms.iter_mut().find(|(t, _)| *t == term) {
            Some((_, f)) => *f = f.max(factor),
            None => self.terms.push((term, factor)),
        }
    }
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
