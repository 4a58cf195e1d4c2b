//! Building the index: every tool's fields become words, words become terms (folded, stemmed,
//! interned), and term frequencies become postings weighted once, at build time, by BM25F.
//! Source descriptions get postings of their own, by source.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use super::bits::TermBits;
use super::intern::{FxBuild, PackedMap};
use super::text::{self, Word};
use super::vocabulary;
use super::{FIELD_COUNT, Field, FieldWeight, Index, MAX_FIELD_BYTES, Ranking, clip, to_u32};
use crate::address::{Namespace, ToolAddress};
use crate::catalog::Catalog;
use crate::manifest::Tool;

pub(super) fn build(catalog: &Catalog, ranking: Ranking) -> Index {
    let mut builder = Builder::default();
    let tools: usize = catalog.sources.iter().map(|s| s.manifest.tools.len()).sum();
    builder.addresses.reserve(tools);
    builder.lengths.reserve(tools);
    let mut namespaces: Vec<(Namespace, Range<u32>)> = Vec::with_capacity(catalog.sources.len());
    let mut doc_source = Vec::with_capacity(tools);
    let mut texts = Vec::new();
    for (position, source) in catalog.sources.iter().enumerate() {
        let ns = &source.manifest.namespace;
        let start = to_u32(builder.addresses.len());
        for tool in &source.manifest.tools {
            builder.add(ns, tool, &mut texts);
            doc_source.push(to_u32(position));
        }
        namespaces.push((ns.clone(), start..to_u32(builder.addresses.len())));
        if let Some(description) = &source.manifest.description {
            builder.add_source(to_u32(position), description);
        }
    }
    builder.finish(namespaces, doc_source, ranking)
}

/// Marks a stopword in the surface maps.
const STOPWORD: u32 = u32::MAX;

/// Collects term frequencies document by document, then turns them into weighted postings.
#[derive(Default)]
struct Builder {
    addresses: Vec<ToolAddress>,
    /// Folded surface word → term id, or [`STOPWORD`], so each distinct word is stemmed once.
    /// Packed words have their own map.
    packed_surface: PackedMap,
    surface: HashMap<Box<str>, u32, FxBuild>,
    /// The same for words of enum values and examples, which are not stemmed.
    packed_values: PackedMap,
    values: HashMap<Box<str>, u32, FxBuild>,
    terms: HashMap<Box<str>, u32, FxBuild>,
    texts: Vec<Box<str>>,
    /// `(term, document, frequency per field)`, in document order; one flat list is cheaper
    /// to grow than a list per term.
    postings: Vec<(u32, u32, [u16; FIELD_COUNT])>,
    /// Documents per term.
    df: Vec<u32>,
    /// Per document, tokens per field.
    lengths: Vec<[u16; FIELD_COUNT]>,
    /// Frequencies of the document being added, by term id, and the terms it touched.
    current: Vec<[u16; FIELD_COUNT]>,
    touched: Vec<u32>,
    buf: String,
    /// `(term, source, frequency)` for source descriptions, and each description's length.
    source_postings: Vec<(u32, u32, u16)>,
    source_lengths: Vec<(u32, u16)>,
    /// Each document's action term (see [`Builder::action`]).
    actions: Vec<u32>,
}

impl Builder {
    /// Adds one tool; `texts` is scratch space kept across tools.
    fn add<'a>(&mut self, ns: &Namespace, tool: &'a Tool, texts: &mut Vec<(&'a str, Field)>) {
        let doc = to_u32(self.addresses.len());
        self.addresses.push(ToolAddress::new(ns.clone(), tool.ident.clone()));
        let mut len = [0u16; FIELD_COUNT];

        // Name words count once each, wherever they come from.
        let record = &tool.record;
        let title = record.title.as_deref().or(record.annotations.title.as_deref()).unwrap_or("");
        for source in [record.name.as_str(), tool.ident.as_str(), title] {
            self.words(source, Field::Name, &mut len, true);
        }
        let action = self.action(&tool.ident);
        self.actions.push(action);
        self.words(ns.as_str(), Field::Namespace, &mut len, false);

        // Gather the texts first, then read them: the gathering chases pointers through the
        // schema, and with nothing between one property and the next the processor can have
        // several of those reads in flight at once.
        texts.clear();
        texts.push((&record.description, Field::Description));
        if let Some(Value::Object(props)) = member(&record.input_schema, "properties") {
            for (name, schema) in props {
                texts.push((name, Field::ParamNames));
                let Value::Object(schema) = schema else { continue };
                for (key, value) in schema {
                    match (key.as_str(), value) {
                        ("description", Value::String(d)) => texts.push((d, Field::ParamDescriptions)),
                        ("enum" | "examples", Value::Array(values)) => push_strings(texts, values),
                        ("items", Value::Object(items)) => {
                            for (key, value) in items {
                                if let ("enum" | "examples", Value::Array(values)) = (key.as_str(), value) {
                                    push_strings(texts, values);
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        for &(text, field) in texts.iter() {
            match field {
                Field::Values => self.values(text, &mut len),
                _ => self.words(text, field, &mut len, false),
            }
        }

        for term in self.touched.drain(..) {
            let tf = std::mem::take(&mut self.current[term as usize]);
            self.postings.push((term, doc, tf));
            self.df[term as usize] += 1;
        }
        self.lengths.push(len);
    }

    /// The term of the first word of an identifier (`list` of `listIssues`), or `u32::MAX`.
    fn action(&mut self, ident: &str) -> u32 {
        let mut first: Option<(u32, bool)> = None;
        let mut buf = std::mem::take(&mut self.buf);
        text::for_each_word_and_part(ident, &mut buf, |word, part| match first {
            // The whole identifier first, then its first part if it has parts.
            None => first = Some((self.term(word).unwrap_or(u32::MAX), false)),
            Some((_, false)) if part => first = Some((self.term(word).unwrap_or(u32::MAX), true)),
            _ => {}
        });
        self.buf = buf;
        first.map_or(u32::MAX, |(term, _)| term)
    }

    /// Adds the description of the source at `position` in the catalog.
    fn add_source(&mut self, position: u32, description: &str) {
        let mut tf: Vec<(u32, u16)> = Vec::new();
        let mut len = 0u16;
        let mut buf = std::mem::take(&mut self.buf);
        text::for_each_word(clip(description, MAX_FIELD_BYTES), &mut buf, |word| {
            let Some(term) = self.term(word) else { return };
            len = len.saturating_add(1);
            match tf.iter_mut().find(|(t, _)| *t == term) {
                Some((_, n)) => *n = n.saturating_add(1),
                None => tf.push((term, 1)),
            }
        });
        self.buf = buf;
        if len > 0 {
            self.source_lengths.push((position, len));
            self.source_postings.extend(tf.into_iter().map(|(term, n)| (term, position, n)));
        }
    }

    fn words(&mut self, text: &str, field: Field, len: &mut [u16; FIELD_COUNT], once: bool) {
        let mut buf = std::mem::take(&mut self.buf);
        text::for_each_word(clip(text, MAX_FIELD_BYTES), &mut buf, |word| {
            if let Some(term) = self.term(word) {
                self.count(term, field, len, once);
            }
        });
        self.buf = buf;
    }

    /// [`Builder::words`] for enum values and examples, whose terms are their own.
    fn values(&mut self, text: &str, len: &mut [u16; FIELD_COUNT]) {
        let mut buf = std::mem::take(&mut self.buf);
        text::for_each_word(clip(text, MAX_FIELD_BYTES), &mut buf, |word| {
            if let Some(term) = self.value_term(word) {
                self.count(term, Field::Values, len, false);
            }
        });
        self.buf = buf;
    }

    /// Counts one more of `term` in `field` of the document being added; with `once`, only
    /// its first.
    #[inline]
    fn count(&mut self, term: u32, field: Field, len: &mut [u16; FIELD_COUNT], once: bool) {
        let f = field as usize;
        let tf = &mut self.current[term as usize];
        if *tf == [0; FIELD_COUNT] {
            self.touched.push(term);
        }
        if once && tf[f] > 0 {
            return;
        }
        tf[f] = tf[f].saturating_add(1);
        len[f] = len[f].saturating_add(1);
    }

    /// The term id of a word; `None` for a stopword.
    #[inline(always)]
    fn term(&mut self, word: Word<'_>) -> Option<u32> {
        let known = match word {
            Word::Packed(key) => self.packed_surface.get(key),
            Word::Text(text) => self.surface.get(text).copied(),
        };
        let id = match known {
            Some(id) => id,
            None => self.intern(word),
        };
        (id != STOPWORD).then_some(id)
    }

    /// The term of a word of an enum value or example: the word as it is, unstemmed, marked
    /// apart from prose terms (`=open`), so the value `created` does not answer the verb
    /// `create`. `None` for a stopword.
    fn value_term(&mut self, word: Word<'_>) -> Option<u32> {
        let known = match word {
            Word::Packed(key) => self.packed_values.get(key),
            Word::Text(text) => self.values.get(text).copied(),
        };
        let id = match known {
            Some(id) => id,
            None => {
                let mut folded = String::new();
                word.write_into(&mut folded);
                let id =
                    if text::is_stopword(&folded) { STOPWORD } else { self.intern_term(value_term(&folded)) };
                match word {
                    Word::Packed(key) => self.packed_values.insert(key, id),
                    Word::Text(_) => {
                        self.values.insert(folded.into(), id);
                    }
                }
                id
            }
        };
        (id != STOPWORD).then_some(id)
    }

    /// The id of a term, interned if it is new.
    fn intern_term(&mut self, term: String) -> u32 {
        if let Some(&id) = self.terms.get(term.as_str()) {
            return id;
        }
        let id = to_u32(self.texts.len());
        let term: Box<str> = term.into();
        self.terms.insert(term.clone(), id);
        self.texts.push(term);
        self.df.push(0);
        self.current.push([0; FIELD_COUNT]);
        id
    }

    /// Stems a word seen for the first time and interns its stem; [`STOPWORD`] for a stopword.
    #[cold]
    #[inline(never)]
    fn intern(&mut self, word: Word<'_>) -> u32 {
        let mut folded = String::new();
        word.write_into(&mut folded);
        let id = if text::is_stopword(&folded) {
            STOPWORD
        } else {
            let mut stemmed = folded.clone();
            text::stem(&mut stemmed);
            self.intern_term(stemmed)
        };
        match word {
            Word::Packed(key) => self.packed_surface.insert(key, id),
            Word::Text(_) => {
                self.surface.insert(folded.into(), id);
            }
        }
        id
    }

    fn finish(
        self,
        namespaces: Vec<(Namespace, Range<u32>)>,
        doc_source: Vec<u32>,
        ranking: Ranking,
    ) -> Index {
        let n = self.addresses.len();
        let norms = length_norms(&self.lengths, n, &ranking.fields());
        let idf: Vec<f32> = self.df.iter().map(|&df| idf(df, n)).collect();
        let (offsets, docs, weights) =
            lay_out(&self.df, &idf, &self.postings, &norms, &self.actions, &ranking);
        let (source_offsets, sources, source_weights) = lay_out_sources(
            self.texts.len(),
            &self.source_postings,
            &self.source_lengths,
            namespaces.len(),
            &ranking,
        );
        let bits = TermBits::build(n, &offsets, &docs, &weights);
        let address_rank = address_ranks(&self.addresses, &namespaces);
        let namespace_terms: Vec<Box<[Box<str>]>> = namespaces
            .iter()
            .map(|(ns, _)| {
                vocabulary::terms(ns.as_str()).into_iter().filter(|t| !text::is_stopword(t)).collect()
            })
            .collect();
        let mut namespace_words: HashMap<Box<str>, Vec<u32>, FxBuild> = HashMap::default();
        for (position, terms) in namespace_terms.iter().enumerate() {
            for term in terms.iter() {
                let list = namespace_words.entry(term.clone()).or_default();
                if list.last() != Some(&to_u32(position)) {
                    list.push(to_u32(position));
                }
            }
        }
        let listing_terms = ["list"].iter().filter_map(|t| self.terms.get(*t).copied()).collect();
        let get_term = self.terms.get("get").copied();
        let mut sorted_terms: Vec<(Box<str>, u32)> =
            self.texts.into_iter().enumerate().map(|(id, t)| (t, to_u32(id))).collect();
        sorted_terms.sort_unstable();

        Index {
            ranking,
            addresses: self.addresses,
            address_rank,
            namespaces,
            doc_source,
            namespace_terms,
            namespace_words,
            listing_terms,
            get_term,
            actions: self.actions,
            terms: self.terms,
            idf,
            sorted_terms,
            offsets,
            docs,
            weights,
            source_offsets,
            sources,
            source_weights,
            bits,
        }
    }
}

/// BM25F's length normalisation, weighted: `weight / (1 - b + b * len / avg)` per document
/// and field, for `n` documents.
fn length_norms(
    lengths: &[[u16; FIELD_COUNT]],
    n: usize,
    fields: &[FieldWeight; FIELD_COUNT],
) -> Vec<[f32; FIELD_COUNT]> {
    let mut avg = [0f32; FIELD_COUNT];
    for len in lengths {
        for (a, &l) in avg.iter_mut().zip(len) {
            *a += f32::from(l);
        }
    }
    for a in &mut avg {
        *a = if n == 0 || *a == 0.0 { 1.0 } else { *a / n as f32 };
    }
    lengths
        .iter()
        .map(|len| {
            let mut out = [0f32; FIELD_COUNT];
            for f in 0..FIELD_COUNT {
                let FieldWeight { weight, b } = fields[f];
                out[f] = weight / (1.0 - b + b * f32::from(len[f]) / avg[f]);
            }
            out
        })
        .collect()
}

/// Lays postings out term by term, each weighted by its finished score (the BM25F of the term
/// in the tool, times [`Ranking::action`] when it is the tool's action); within a term they
/// stay in document order. Returns each term's first slot (and one past the last), then the document
/// and the weight of each slot.
fn lay_out(
    df: &[u32],
    idf: &[f32],
    postings: &[(u32, u32, [u16; FIELD_COUNT])],
    norms: &[[f32; FIELD_COUNT]],
    actions: &[u32],
    ranking: &Ranking,
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let mut offsets = Vec::with_capacity(df.len() + 1);
    offsets.push(0u32);
    for &df in df {
        offsets.push(offsets[offsets.len() - 1] + df);
    }
    let mut next: Vec<u32> = offsets[..df.len()].to_vec();
    let mut docs = vec![0u32; postings.len()];
    let mut weights = vec![0f32; postings.len()];
    for &(term, doc, tf) in postings {
        let norm = &norms[doc as usize];
        let pseudo: f32 = (0..FIELD_COUNT).map(|f| f32::from(tf[f]) * norm[f]).sum();
        let slot = &mut next[term as usize];
        docs[*slot as usize] = doc;
        // A tool's action (the first word of its name) counts more.
        let action = if actions[doc as usize] == term { ranking.action } else { 1.0 };
        let weight = action * idf[term as usize] * pseudo / (ranking.k1 + pseudo);
        // Never 0: a search counts a tool as matched once its score leaves 0.
        weights[*slot as usize] = weight.max(f32::MIN_POSITIVE);
        *slot += 1;
    }
    (offsets, docs, weights)
}

/// BM25's inverse document frequency of a term in `df` of `n` documents.
fn idf(df: u32, n: usize) -> f32 {
    // In f64, then rounded: `ln` comes from a different library on each target, and the
    // rounding hides their last-bit differences, so both hubs rank alike.
    let df = f64::from(df);
    (1.0 + (n as f64 - df + 0.5) / (df + 0.5)).ln() as f32
}

/// Source descriptions' postings, laid out like the tools' (see [`lay_out`]) for `terms` terms:
/// one field, its documents the `n` sources (those without a description are empty).
fn lay_out_sources(
    terms: usize,
    postings: &[(u32, u32, u16)],
    lengths: &[(u32, u16)],
    n: usize,
    ranking: &Ranking,
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    if postings.is_empty() {
        return (Vec::new(), Vec::new(), Vec::new());
    }
    let avg = lengths.iter().map(|&(_, l)| f32::from(l)).sum::<f32>() / lengths.len() as f32;
    let FieldWeight { weight, b } = ranking.source;
    let norm: HashMap<u32, f32, FxBuild> = lengths
        .iter()
        .map(|&(source, len)| (source, weight / (1.0 - b + b * f32::from(len) / avg)))
        .collect();
    let mut df = vec![0u32; terms];
    for &(term, _, _) in postings {
        df[term as usize] += 1;
    }
    let mut sorted = postings.to_vec();
    sorted.sort_unstable_by_key(|&(term, source, _)| (term, source));
    let mut offsets = Vec::with_capacity(terms + 1);
    offsets.push(0u32);
    for &df in &df {
        offsets.push(offsets[offsets.len() - 1] + df);
    }
    let sources = sorted.iter().map(|&(_, source, _)| source).collect();
    let weights = sorted
        .iter()
        .map(|&(term, source, tf)| {
            let pseudo = f32::from(tf) * norm[&source];
            idf(df[term as usize], n) * pseudo / (ranking.k1 + pseudo)
        })
        .collect();
    (offsets, sources, weights)
}

/// Each document's rank by address: namespaces in order, then tools within each, which is
/// cheaper than sorting all addresses at once.
fn address_ranks(addresses: &[ToolAddress], namespaces: &[(Namespace, Range<u32>)]) -> Vec<u32> {
    let mut address_rank = vec![0u32; addresses.len()];
    let mut by_namespace: Vec<&(Namespace, Range<u32>)> = namespaces.iter().collect();
    by_namespace.sort_by(|a, b| a.0.cmp(&b.0));
    let mut rank = 0;
    let mut docs_of_namespace: Vec<u32> = Vec::new();
    for (_, range) in by_namespace {
        docs_of_namespace.clear();
        docs_of_namespace.extend(range.clone());
        docs_of_namespace
            .sort_unstable_by(|&a, &b| addresses[a as usize].tool.cmp(&addresses[b as usize].tool));
        for &doc in &docs_of_namespace {
            address_rank[doc as usize] = rank;
            rank += 1;
        }
    }
    address_rank
}

/// `value[key]` for an object, found by a scan: schema objects have a handful of keys, and a
/// scan is cheaper than hashing the key.
fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object()?.iter().find_map(|(k, v)| (k == key).then_some(v))
}

/// The term of a folded word of an enum value or example: `=` and the word. No prose term
/// starts with `=`, which is never part of a word.
pub(super) fn value_term(folded: &str) -> String {
    format!("={folded}")
}

/// The string values of an `enum` or `examples` list, for the values field.
fn push_strings<'a>(texts: &mut Vec<(&'a str, Field)>, values: &'a [Value]) {
    texts.extend(values.iter().filter_map(Value::as_str).map(|v| (v, Field::Values)));
}
