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
    let mut namespaces: Vec<(Namespace, Range<u32>)> = Vec::with_capacity(catalog.sources.len());
    for source in &catalog.sources {
        let ns = &source.manifest.namespace;
        let start = to_u32(builder.addresses.len());
        for tool in &source.manifest.tools {
            builder.add(ns, tool);
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
    /// Per term, `(document, frequency per field)`.
    postings: Vec<Vec<(u32, [u16; FIELD_COUNT])>>,
    /// Per document, tokens per field.
    lengths: Vec<[u16; FIELD_COUNT]>,
    /// Frequencies of the document being added, by term id, and the terms it touched.
    current: Vec<[u16; FIELD_COUNT]>,
    touched: Vec<u32>,
    buf: String,
}

impl Builder {
    fn add(&mut self, ns: &Namespace, tool: &Tool) {
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
        self.words(&record.description, Field::Description, &mut len, false);
        if let Some(Value::Object(props)) = member(&record.input_schema, "properties") {
            for (name, schema) in props {
                self.words(name, Field::ParamNames, &mut len, false);
                if let Some(Value::String(d)) = member(schema, "description") {
                    self.words(d, Field::ParamDescriptions, &mut len, false);
                }
            }
        }

        for term in self.touched.drain(..) {
            let tf = std::mem::take(&mut self.current[term as usize]);
            self.postings[term as usize].push((doc, tf));
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
                    self.postings.push(Vec::new());
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
        let mut avg = [0f32; FIELD_COUNT];
        for len in &self.lengths {
            for (a, &l) in avg.iter_mut().zip(len) {
                *a += f32::from(l);
            }
        }
        for a in &mut avg {
            *a = if n == 0 || *a == 0.0 { 1.0 } else { *a / n as f32 };
        }
        // 1 / (1 - b + b * len / avg) per document and field.
        let norms: Vec<[f32; FIELD_COUNT]> = self
            .lengths
            .iter()
            .map(|len| {
                let mut out = [0f32; FIELD_COUNT];
                for f in 0..FIELD_COUNT {
                    let (weight, b) = FIELDS[f];
                    out[f] = weight / (1.0 - b + b * f32::from(len[f]) / avg[f]);
                }
                out
            })
            .collect();

        let total: usize = self.postings.iter().map(Vec::len).sum();
        let mut offsets = Vec::with_capacity(self.postings.len() + 1);
        let mut docs = Vec::with_capacity(total);
        let mut weights = Vec::with_capacity(total);
        offsets.push(0);
        for list in &self.postings {
            let df = list.len() as f32;
            let idf = (1.0 + (n as f32 - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let norm = &norms[doc as usize];
                let pseudo: f32 = (0..FIELD_COUNT).map(|f| f32::from(tf[f]) * norm[f]).sum();
                docs.push(doc);
                // Never 0: a search counts a tool as matched once its score leaves 0.
                weights.push((idf * pseudo / (K1 + pseudo)).max(f32::MIN_POSITIVE));
            }
            offsets.push(to_u32(docs.len()));
        }

        // Rank by address: namespaces in order, then tools within each, which is cheaper than
        // sorting all addresses at once.
        let mut address_rank = vec![0u32; n];
        let mut by_namespace: Vec<&(Namespace, Range<u32>)> = namespaces.iter().collect();
        by_namespace.sort_by(|a, b| a.0.cmp(&b.0));
        let mut rank = 0;
        let mut docs_of_namespace: Vec<u32> = Vec::new();
        for (_, range) in by_namespace {
            docs_of_namespace.clear();
            docs_of_namespace.extend(range.clone());
            docs_of_namespace.sort_unstable_by(|&a, &b| {
                self.addresses[a as usize].tool.cmp(&self.addresses[b as usize].tool)
            });
            for &doc in &docs_of_namespace {
                address_rank[doc as usize] = rank;
                rank += 1;
            }
        }

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

/// `value[key]` for an object, found by a scan: schema objects have a handful of keys, and a
/// scan is cheaper than hashing the key.
fn member<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object()?.iter().find_map(|(k, v)| (k == key).then_some(v))
}
