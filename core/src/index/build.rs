//! Building the index: every tool's fields become words, words become terms (folded, stemmed,
//! interned), and term frequencies become postings weighted once, at build time, by BM25F.

use std::collections::HashMap;
use std::ops::Range;

use serde_json::Value;

use super::intern::{FxBuild, PackedMap};
use super::text::{self, Word};
use super::{FIELD_COUNT, FIELDS, Field, Index, K1, MAX_FIELD_BYTES, clip, to_u32};
use crate::address::{Namespace, ToolAddress};
use crate::catalog::Catalog;
use crate::manifest::Tool;

pub(super) fn build(catalog: &Catalog) -> Index {
    let mut builder = Builder::default();
    let tools: usize = catalog.sources.iter().map(|s| s.manifest.tools.len()).sum();
    builder.addresses.reserve(tools);
    builder.lengths.reserve(tools);
    let mut namespaces: Vec<(Namespace, Range<u32>)> = Vec::with_capacity(catalog.sources.len());
    let mut texts = Vec::new();
    for source in &catalog.sources {
        let ns = &source.manifest.namespace;
        let start = to_u32(builder.addresses.len());
        for tool in &source.manifest.tools {
            builder.add(ns, tool, &mut texts);
        }
        namespaces.push((ns.clone(), start..to_u32(builder.addresses.len())));
    }
    builder.finish(namespaces)
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
        self.words(ns.as_str(), Field::Namespace, &mut len, false);

        // Gather the texts first, then read them: the gathering chases pointers through the
        // schema, and with nothing between one property and the next the processor can have
        // several of those reads in flight at once.
        texts.clear();
        texts.push((&record.description, Field::Description));
        if let Some(Value::Object(props)) = member(&record.input_schema, "properties") {
            for (name, schema) in props {
                texts.push((name, Field::ParamNames));
                if let Some(Value::String(d)) = member(schema, "description") {
                    texts.push((d, Field::ParamDescriptions));
                }
            }
        }
        for &(text, field) in texts.iter() {
            self.words(text, field, &mut len, false);
        }

        for term in self.touched.drain(..) {
            let tf = std::mem::take(&mut self.current[term as usize]);
            self.postings.push((term, doc, tf));
            self.df[term as usize] += 1;
        }
        self.lengths.push(len);
    }

    fn words(&mut self, text: &str, field: Field, len: &mut [u16; FIELD_COUNT], once: bool) {
        let f = field as usize;
        let mut buf = std::mem::take(&mut self.buf);
        text::for_each_word(clip(text, MAX_FIELD_BYTES), &mut buf, |word| {
            let Some(term) = self.term(word) else { return };
            let tf = &mut self.current[term as usize];
            if *tf == [0; FIELD_COUNT] {
                self.touched.push(term);
            }
            if once && tf[f] > 0 {
                return;
            }
            tf[f] = tf[f].saturating_add(1);
            len[f] = len[f].saturating_add(1);
        });
        self.buf = buf;
    }

    /// The term id of a word; `None` for a stopword.
    #[inline]
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
            match self.terms.get(stemmed.as_str()) {
                Some(&id) => id,
                None => {
                    let id = to_u32(self.texts.len());
                    let stemmed: Box<str> = stemmed.into();
                    self.terms.insert(stemmed.clone(), id);
                    self.texts.push(stemmed);
                    self.df.push(0);
                    self.current.push([0; FIELD_COUNT]);
                    id
                }
            }
        };
        match word {
            Word::Packed(key) => self.packed_surface.insert(key, id),
            Word::Text(_) => {
                self.surface.insert(folded.into(), id);
            }
        }
        id
    }

    fn finish(self, namespaces: Vec<(Namespace, Range<u32>)>) -> Index {
        let n = self.addresses.len();
        let norms = length_norms(&self.lengths, n);
        let (offsets, docs, weights) = lay_out(&self.df, &self.postings, &norms, n);
        let address_rank = address_ranks(&self.addresses, &namespaces);
        let mut sorted_terms: Vec<(Box<str>, u32)> =
            self.texts.into_iter().enumerate().map(|(id, t)| (t, to_u32(id))).collect();
        sorted_terms.sort_unstable();

        Index {
            addresses: self.addresses,
            address_rank,
            namespaces,
            terms: self.terms,
            sorted_terms,
            offsets,
            docs,
            weights,
        }
    }
}

/// BM25F's length normalisation, weighted: `weight / (1 - b + b * len / avg)` per document
/// and field, for `n` documents.
fn length_norms(lengths: &[[u16; FIELD_COUNT]], n: usize) -> Vec<[f32; FIELD_COUNT]> {
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
                let (weight, b) = FIELDS[f];
                out[f] = weight / (1.0 - b + b * f32::from(len[f]) / avg[f]);
            }
            out
        })
        .collect()
}

/// Lays postings out term by term, each weighted by its finished score; within a term they stay
/// in document order. Returns each term's first slot (and one past the last), then the document
/// and the weight of each slot.
fn lay_out(
    df: &[u32],
    postings: &[(u32, u32, [u16; FIELD_COUNT])],
    norms: &[[f32; FIELD_COUNT]],
    n: usize,
) -> (Vec<u32>, Vec<u32>, Vec<f32>) {
    let mut offsets = Vec::with_capacity(df.len() + 1);
    offsets.push(0u32);
    for &df in df {
        offsets.push(offsets[offsets.len() - 1] + df);
    }
    let idf: Vec<f32> = df
        .iter()
        .map(|&df| {
            let df = df as f32;
            (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    let mut next: Vec<u32> = offsets[..df.len()].to_vec();
    let mut docs = vec![0u32; postings.len()];
    let mut weights = vec![0f32; postings.len()];
    for &(term, doc, tf) in postings {
        let norm = &norms[doc as usize];
        let pseudo: f32 = (0..FIELD_COUNT).map(|f| f32::from(tf[f]) * norm[f]).sum();
        let slot = &mut next[term as usize];
        docs[*slot as usize] = doc;
        // Never 0: a search counts a tool as matched once its score leaves 0.
        weights[*slot as usize] = (idf[term as usize] * pseudo / (K1 + pseudo)).max(f32::MIN_POSITIVE);
        *slot += 1;
    }
    (offsets, docs, weights)
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
