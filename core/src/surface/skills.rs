//! Skills in `search` and `describe`. A skill is text for the model — how to do something with
//! the hub's tools — never permission: showing one grants nothing, and its `allowed-tools`
//! means nothing to policy.
//!
//! `search` adds the skills whose name or description share a word (stemmed, stopwords out)
//! with the query after the tools, each as `skill:<name>` with its description;
//! `describe("skill:<name>")` gives the skill's `SKILL.md` and its file list within the describe
//! budget. The host hands the library over as [`SkillDoc`]s; the surface reads no files.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::index::text::{for_each_word, is_stopword, stem};
use crate::record::ToolFailure;

/// How a describe target names a skill.
pub const PREFIX: &str = "skill:";
/// The most skills one search shows.
const MAX_SHOWN: usize = 5;
/// The largest file `hub.skill` returns; the Skills extension serves larger ones whole.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// One skill as the surface shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillDoc {
    pub name: String,
    pub description: String,
    /// `SKILL.md` as written, front matter included.
    pub skill_md: String,
    /// Every file of the skill (`SKILL.md` too), `/`-separated, with its size in bytes.
    pub files: Vec<(String, u64)>,
    /// The words of its name and description, stemmed once here rather than on every search.
    words: BTreeSet<String>,
    /// Its line in `search`, made once here too.
    line: String,
}

impl SkillDoc {
    pub fn new(name: String, description: String, skill_md: String, files: Vec<(String, u64)>) -> SkillDoc {
        let words = words(&format!("{name} {description}"));
        let line = format!("  {PREFIX}{name} — {}", one_line(&description));
        SkillDoc { name, description, skill_md, files, words, line }
    }
}

/// The stemmed words of `text`, stopwords left out.
fn words(text: &str) -> BTreeSet<String> {
    let mut buf = String::new();
    let mut word = String::new();
    let mut out = BTreeSet::new();
    for_each_word(text, &mut buf, |w| {
        w.write_into(&mut word);
        if !is_stopword(&word) {
            stem(&mut word);
            out.insert(word.clone());
        }
    });
    out
}

/// Which skills each word is in: built once per library, so a search looks only at the skills
/// that share a word with it rather than at every skill.
#[derive(Debug, Default)]
pub struct SkillIndex {
    by_word: std::collections::BTreeMap<String, Vec<u32>>,
}

impl SkillIndex {
    pub fn new(skills: &[SkillDoc]) -> SkillIndex {
        let mut by_word: std::collections::BTreeMap<String, Vec<u32>> = std::collections::BTreeMap::new();
        for (i, skill) in skills.iter().enumerate() {
            for word in &skill.words {
                by_word.entry(word.clone()).or_default().push(i as u32);
            }
        }
        SkillIndex { by_word }
    }

    /// The skills sharing words with `query`, most shared first (then by name); none for an
    /// empty query. `skills` is the library the index was built from.
    pub fn matching<'s>(&self, skills: &'s [SkillDoc], query: &str) -> Vec<&'s SkillDoc> {
        let mut shared = vec![0u16; skills.len()];
        let mut hit = Vec::new();
        for word in words(query) {
            for &i in self.by_word.get(&word).into_iter().flatten() {
                let Some(count) = shared.get_mut(i as usize) else { continue };
                if *count == 0 {
                    hit.push(i as usize);
                }
                *count = count.saturating_add(1);
            }
        }
        let order = |a: &usize, b: &usize| {
            shared[*b].cmp(&shared[*a]).then_with(|| skills[*a].name.cmp(&skills[*b].name))
        };
        // Only the first few are shown: put them in front, then sort just those.
        if hit.len() > MAX_SHOWN {
            hit.select_nth_unstable_by(MAX_SHOWN - 1, order);
            hit.truncate(MAX_SHOWN);
        }
        hit.sort_by(order);
        hit.into_iter().map(|i| &skills[i]).collect()
    }
}

/// The skills sharing words with `query`, most shared first (then by name); none for an empty
/// query. Builds the index each time: a host that searches often keeps a [`SkillIndex`].
pub fn matching<'s>(skills: &'s [SkillDoc], query: &str) -> Vec<&'s SkillDoc> {
    SkillIndex::new(skills).matching(skills, query)
}

/// The lines `search` adds for `shown`; none when there are none.
pub fn search_lines(shown: &[&SkillDoc]) -> Vec<String> {
    if shown.is_empty() {
        return Vec::new();
    }
    let mut lines =
        vec!["Skills (instructions to read, not tools to call; describe one to read it):".to_owned()];
    lines.extend(shown.iter().map(|s| s.line.clone()));
    lines
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `describe` of one skill within `budget` tokens: its name, file list and `SKILL.md`, cut at a
/// line when it does not fit (saying so).
pub fn describe(skill: &SkillDoc, budget: usize) -> String {
    let mut head = format!(
        "{PREFIX}{} — a skill: instructions to read, not a tool to call\nfiles (read one inside \
         execute with `await hub.skill(\"{}\", path)`):",
        skill.name, skill.name
    );
    for (path, size) in &skill.files {
        head.push_str(&format!("\n  {path} ({size} bytes)"));
    }
    head.push_str("\n\n");
    let whole = format!("{head}{}", skill.skill_md);
    if crate::tokens::count(&whole) <= budget {
        return whole;
    }
    let note = "\n… SKILL.md is cut here to fit the describe budget.";
    let mut text = head;
    for line in skill.skill_md.split_inclusive('\n') {
        let next = format!("{text}{line}");
        if crate::tokens::count(&next) + crate::tokens::count(note) > budget {
            break;
        }
        text = next;
    }
    text.push_str(note);
    text
}

/// The skill `target` names (`skill:<name>`), if it names one.
pub fn target<'s>(skills: &'s [SkillDoc], target: &str) -> Option<Result<&'s SkillDoc, String>> {
    let name = target.strip_prefix(PREFIX)?;
    Some(skills.iter().find(|s| s.name == name).ok_or_else(|| {
        let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        if known.is_empty() {
            format!("the hub has no skill `{name}`: it has no skills")
        } else {
            format!("the hub has no skill `{name}`; its skills are {}", known.join(", "))
        }
    }))
}

fn failure(code: &str, message: String, hint: &str) -> ToolFailure {
    ToolFailure {
        code: code.to_owned(),
        message,
        hint: Some(hint.to_owned()),
        status: None,
        retryable: false,
    }
}

/// Why `hub.skill` has nothing to read on a hub without skills.
pub fn no_skills() -> ToolFailure {
    failure(
        "unknown_skill",
        "this hub has no skills to read".to_owned(),
        "a person adds skills to the hub; search lists the ones there are",
    )
}

/// `hub.skill`'s arguments checked against the library: the skill and one of its own files
/// (`SKILL.md` when no path is given). Anything else is refused before a file is opened.
pub fn request<'s>(skills: &'s [SkillDoc], args: &Value) -> Result<(&'s SkillDoc, String), ToolFailure> {
    let invalid = |message: String| {
        failure(
            "invalid_arguments",
            message,
            "hub.skill(\"<skill name>\", \"SKILL.md\") reads a skill's file",
        )
    };
    let Some(name) = args.get("name").and_then(Value::as_str) else {
        return Err(invalid("hub.skill takes a skill's name as its first argument".to_owned()));
    };
    let path = match args.get("path") {
        None | Some(Value::Null) => "SKILL.md",
        Some(Value::String(path)) => path.as_str(),
        Some(other) => {
            let shown: String = other.to_string().chars().take(60).collect();
            return Err(invalid(format!("hub.skill's path is {shown}: it takes a file's path as a string")));
        }
    };
    if skills.is_empty() {
        return Err(no_skills());
    }
    let shown = |text: &str| text.chars().take(120).collect::<String>();
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).take(20).collect();
        return Err(failure(
            "unknown_skill",
            format!("the hub has no skill `{}`; its skills include {}", shown(name), known.join(", ")),
            "search finds skills by what they are for",
        ));
    };
    // Only a path the library lists: `../`, absolute paths and folders never match one.
    let path = path.strip_prefix("./").unwrap_or(path);
    let Some((path, size)) = skill.files.iter().find(|(p, _)| p == path) else {
        let known: Vec<&str> = skill.files.iter().map(|(p, _)| p.as_str()).take(20).collect();
        return Err(failure(
            "unknown_file",
            format!(
                "skill `{}` has no file `{}`; its files include {}",
                skill.name,
                shown(path),
                known.join(", ")
            ),
            "describe(\"skill:<name>\") lists a skill's files",
        ));
    };
    if *size > MAX_FILE_BYTES {
        return Err(failure(
            "file_too_large",
            format!(
                "`{path}` of skill `{}` is {size} bytes; hub.skill returns files up to {MAX_FILE_BYTES}",
                skill.name
            ),
            "the MCP client can read it whole as the resource skill://<name>/<path>",
        ));
    }
    Ok((skill, path.clone()))
}

/// The file's text as `hub.skill` returns it: a string, or why it is not one.
pub fn answer(skill: &str, path: &str, bytes: Vec<u8>) -> Result<Value, ToolFailure> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(failure(
            "file_too_large",
            format!("`{path}` of skill `{skill}` has grown past {MAX_FILE_BYTES} bytes"),
            "the MCP client can read it whole as the resource skill://<name>/<path>",
        ));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Value::String(text)),
        Err(_) => Err(failure(
            "not_text",
            format!("`{path}` of skill `{skill}` is not UTF-8 text"),
            "hub.skill returns text files; the MCP client can read binary ones as resources",
        )),
    }
}

/// A file the library lists that the host could not read.
pub fn unreadable(err: &dyn std::fmt::Display) -> ToolFailure {
    ToolFailure {
        retryable: true,
        ..failure(
            "store_failed",
            format!("the hub could not read the skill's file: {err}"),
            "the hub's skill list says whether a skill changed or lost files since it was added",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, description: &str) -> SkillDoc {
        SkillDoc::new(
            name.to_owned(),
            description.to_owned(),
            format!("---\nname: {name}\ndescription: {description}\n---\nStep one.\nStep two.\n"),
            vec![("SKILL.md".to_owned(), 60)],
        )
    }

    #[test]
    fn skills_are_found_by_the_words_of_their_name_and_description() {
        let skills = [
            skill("release-notes", "Write release notes from merged pull requests."),
            skill("triage", "Label new issues."),
        ];
        let names = |q: &str| matching(&skills, q).iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names("writing the release notes"), ["release-notes"]);
        assert_eq!(names("labelling issues"), ["triage"]);
        assert!(names("the").is_empty());
        assert!(names("").is_empty());
        assert_eq!(
            search_lines(&matching(&skills, "notes")),
            [
                "Skills (instructions to read, not tools to call; describe one to read it):",
                "  skill:release-notes — Write release notes from merged pull requests."
            ]
        );
    }

    #[test]
    fn hub_skill_reads_only_a_file_the_library_lists() {
        let mut triage = skill("triage", "Label new issues.");
        triage.files.push(("scripts/label.sh".to_owned(), 12));
        triage.files.push(("big.txt".to_owned(), MAX_FILE_BYTES + 1));
        let skills = [triage];
        let asked = |args: Value| request(&skills, &args).map(|(s, p)| format!("{}/{p}", s.name));
        assert_eq!(asked(serde_json::json!({ "name": "triage" })).unwrap(), "triage/SKILL.md");
        assert_eq!(
            asked(serde_json::json!({ "name": "triage", "path": "./scripts/label.sh" })).unwrap(),
            "triage/scripts/label.sh"
        );
        let code = |args: Value| asked(args).unwrap_err().code;
        assert_eq!(code(serde_json::json!({ "name": "nope" })), "unknown_skill");
        for path in ["../triage/SKILL.md", "/etc/passwd", "scripts", "scripts/../SKILL.md", ""] {
            assert_eq!(code(serde_json::json!({ "name": "triage", "path": path })), "unknown_file", "{path}");
        }
        assert_eq!(code(serde_json::json!({ "name": "triage", "path": 7 })), "invalid_arguments");
        assert_eq!(code(serde_json::json!({ "path": "SKILL.md" })), "invalid_arguments");
        assert_eq!(code(serde_json::json!({ "name": "triage", "path": "big.txt" })), "file_too_large");
        assert_eq!(request(&[], &serde_json::json!({ "name": "triage" })).unwrap_err().code, "unknown_skill");
        assert_eq!(answer("triage", "SKILL.md", b"hi".to_vec()).unwrap(), "hi");
        assert_eq!(answer("triage", "x.bin", vec![0xff, 0xfe]).unwrap_err().code, "not_text");
    }

    #[test]
    fn describe_fits_the_budget_and_names_unknown_skills() {
        let mut skills = [skill("triage", "Label new issues.")];
        let whole = describe(&skills[0], 1000);
        assert!(whole.ends_with("Step two.\n") && whole.contains("SKILL.md (60 bytes)"), "{whole}");
        skills[0].skill_md.push_str(&(1..200).map(|n| format!("Step {n} of many.\n")).collect::<String>());
        let cut = describe(&skills[0], 100);
        assert!(cut.ends_with("cut here to fit the describe budget."), "{cut}");
        assert!(crate::tokens::count(&cut) <= 100 && cut.contains("Step one."), "{cut}");
        assert!(target(&skills, "github.createIssue").is_none());
        assert_eq!(
            target(&skills, "skill:nope").unwrap().unwrap_err(),
            "the hub has no skill `nope`; its skills are triage"
        );
    }
}
