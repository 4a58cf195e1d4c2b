//! The vocabulary: words that stand in for each other in a query (`bug` for `issue`, `meeting`
//! for `event`, `PR` for `pull request`), read once from `vocabulary.txt`.
//!
//! Entries go through the index's own text rules, so they meet tool text as the index holds it.
//! A query word keeps its own weight; each stand-in is added with a smaller factor, synonyms
//! more than broader words, so a tool that says exactly what the query says still ranks first.

use std::collections::HashMap;
use std::sync::OnceLock;

use super::intern::FxBuild;
use super::text;

/// The terms of a phrase.
type Phrase = Box<[Box<str>]>;

/// How a stand-in is related to the word it stands in for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Same meaning (`bug`, `issue`, `ticket`).
    Synonym,
    /// A looser word standing in for a more precise one (`find` for `list`).
    Broader,
}

/// One stand-in: its terms (more than one for a phrase), and how it relates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct StandIn {
    pub(super) terms: Phrase,
    pub(super) kind: Kind,
}

/// Phrases (terms joined by a space) → what stands in for them.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
    entries: HashMap<Box<str>, Vec<StandIn>, FxBuild>,
    /// Most terms in an entry's phrase.
    pub(super) longest: usize,
}

const SOURCE: &str = include_str!("vocabulary.txt");

/// The vocabulary, read on first use.
pub(super) fn vocabulary() -> &'static Vocabulary {
    static VOCABULARY: OnceLock<Vocabulary> = OnceLock::new();
    VOCABULARY.get_or_init(|| Vocabulary::parse(SOURCE))
}

impl Vocabulary {
    /// What stands in for the phrase of `terms`.
    pub(super) fn stand_ins(&self, terms: &[&str]) -> &[StandIn] {
        if terms.is_empty() || terms.len() > self.longest {
            return &[];
        }
        let key = terms.join(" ");
        self.entries.get(key.as_str()).map_or(&[], Vec::as_slice)
    }

    /// Reads `a, b, c` (each stands in for the others) and `a > b, c` (a for b and c) lines;
    /// `#` starts a comment. An entry with no searchable words is skipped.
    pub(super) fn parse(source: &str) -> Vocabulary {
        let mut vocabulary = Vocabulary::default();
        for line in source.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            match line.split_once('>') {
                Some((from, to)) => {
                    let to: Vec<Phrase> = phrases(to);
                    for from in phrases(from) {
                        for to in &to {
                            vocabulary.add(&from, to, Kind::Broader);
                        }
                    }
                }
                None => {
                    let group = phrases(line);
                    for from in &group {
                        for to in &group {
                            vocabulary.add(from, to, Kind::Synonym);
                        }
                    }
                }
            }
        }
        vocabulary.close();
        vocabulary
    }

    /// One step of closure: a word also reaches the synonyms of what stands in for it
    /// (`kickoff > meeting` reaches `event`), as the kind of its first step.
    fn close(&mut self) {
        let mut reached: Vec<(Box<str>, Phrase, Kind)> = Vec::new();
        for (from, stand_ins) in &self.entries {
            for first in stand_ins {
                let Some(next) = self.entries.get(first.terms.join(" ").as_str()) else { continue };
                for second in next.iter().filter(|s| s.kind == Kind::Synonym) {
                    reached.push((from.clone(), second.terms.clone(), first.kind));
                }
            }
        }
        // In a fixed order, so which kind wins a tie does not depend on the map's.
        reached.sort_unstable_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        for (from, terms, kind) in reached {
            let from: Vec<Box<str>> = from.split(' ').map(Into::into).collect();
            self.add(&from, &terms, kind);
        }
    }

    fn add(&mut self, from: &[Box<str>], to: &[Box<str>], kind: Kind) {
        if from == to {
            return;
        }
        // A phrase keeps its stopwords (`set up`), so it still matches as written; a stand-in
        // needs at least one searchable term.
        let terms: Phrase = to.iter().filter(|t| !text::is_stopword(t)).cloned().collect();
        if terms.is_empty() {
            return;
        }
        self.longest = self.longest.max(from.len());
        let stand_ins = self.entries.entry(from.join(" ").into()).or_default();
        match stand_ins.iter_mut().find(|s| s.terms == terms) {
            // Said both ways, a synonym is the stronger claim.
            Some(known) => {
                if kind == Kind::Synonym {
                    known.kind = Kind::Synonym;
                }
            }
            None => stand_ins.push(StandIn { terms, kind }),
        }
    }
}

/// Comma-separated phrases, each as its terms: folded and stemmed like tool text.
fn phrases(list: &str) -> Vec<Phrase> {
    list.split(',').map(terms).filter(|t| !t.is_empty()).collect()
}

/// The terms of a phrase, stopwords kept; whole words only (`PRs` is `pr`, not `p` and `rs`).
pub(super) fn terms(phrase: &str) -> Phrase {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    text::for_each_word_and_part(phrase, &mut String::new(), |w, part| {
        if part {
            return;
        }
        w.write_into(&mut word);
        let mut term = word.clone();
        if !text::is_stopword(&term) {
            text::stem(&mut term);
        }
        out.push(term);
    });
    out.into_iter().map(String::into_boxed_str).collect()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(source: &str, phrase: &str, expect: Expect) {
        let vocabulary = Vocabulary::parse(source);
        let terms = terms(phrase);
        let terms: Vec<&str> = terms.iter().map(|t| &**t).collect();
        let out: Vec<String> = vocabulary
            .stand_ins(&terms)
            .iter()
            .map(|s| format!("{:?} {}", s.kind, s.terms.join(" ")))
            .collect();
        expect.assert_eq(&out.join("\n"));
    }

    #[test]
    fn groups_and_arrows() {
        let source = "issue, bug, ticket\nfind > search, list # a comment\npull request, PR\nset up > create";
        check(
            source,
            "bugs",
            expect![[r#"
            Synonym issu
            Synonym ticket"#]],
        );
        check(
            source,
            "find",
            expect![[r#"
            Broader search
            Broader list"#]],
        );
        // An arrow goes one way.
        check(source, "search", expect![""]);
        check(source, "PRs", expect!["Synonym pull request"]);
        check(source, "pull requests", expect!["Synonym pr"]);
        check(source, "set up", expect!["Broader creat"]);
    }

    #[test]
    fn the_shipped_vocabulary_reads() {
        let vocabulary = vocabulary();
        assert!(vocabulary.entries.len() > 300, "{} entries", vocabulary.entries.len());
        assert!(vocabulary.longest <= 4, "phrases of {} words", vocabulary.longest);
        check(
            SOURCE,
            "meeting",
            expect![[r#"
            Synonym event
            Synonym appoint
            Synonym book"#]],
        );
    }
}
