//! A `SKILL.md`'s front matter: the YAML between its opening `---` lines, with the `name` and
//! `description` every harness reads, checked against the limits the skills format sets.

use serde_norway::Value;

/// The longest skill name (in characters).
pub const MAX_NAME_LEN: usize = 64;
/// The longest description (in characters).
pub const MAX_DESCRIPTION_LEN: usize = 1024;

/// What a `SKILL.md` says about its skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    pub name: String,
    pub description: String,
    /// The Markdown after the closing `---` line.
    pub body: String,
}

/// Why a `SKILL.md`'s front matter was refused. Each message says what the file should hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error(
        "SKILL.md has no front matter: it must start with a `---` line, then `name: …` and \
         `description: …`, then a `---` line"
    )]
    Missing,
    #[error("SKILL.md's front matter has no closing `---` line: end the YAML block with a line `---`")]
    Unclosed,
    #[error("SKILL.md's front matter is not valid YAML ({0}): fix the block between the `---` lines")]
    Yaml(String),
    #[error(
        "SKILL.md's front matter is not a YAML mapping: write it as `name: …` and `description: …` lines"
    )]
    NotMapping,
    #[error("SKILL.md's front matter has no `{0}`: add a line `{0}: …`")]
    MissingField(&'static str),
    #[error("`{0}` in SKILL.md's front matter is not a string: write it as plain text")]
    NotString(&'static str),
    #[error(transparent)]
    Name(#[from] NameError),
    #[error("the description in SKILL.md is empty: say in a sentence what the skill does and when to use it")]
    EmptyDescription,
    #[error(
        "the description in SKILL.md has {0} characters, more than {MAX_DESCRIPTION_LEN}: shorten it \
         and move the detail into the body"
    )]
    LongDescription(usize),
}

/// Why a skill name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("a skill name cannot be empty")]
    Empty,
    #[error("the skill name `{0}…` is longer than {MAX_NAME_LEN} characters: shorten it")]
    TooLong(String),
    #[error(
        "`{0}` is not a skill name: use lowercase letters, digits and single hyphens, not at the \
         start or end (`release-notes`)"
    )]
    Invalid(String),
}

/// Checks a skill name: 1 to 64 lowercase ASCII letters, digits and hyphens, no hyphen first,
/// last or twice in a row. A name that passes is safe as one path component.
pub fn check_name(name: &str) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Err(NameError::TooLong(name.chars().take(MAX_NAME_LEN).collect()));
    }
    let allowed = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !allowed || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(NameError::Invalid(name.to_owned()));
    }
    Ok(())
}

/// Reads the front matter of a `SKILL.md` and checks its `name` and `description`. Other keys
/// (`license`, `allowed-tools`, `metadata`) are allowed and left alone.
pub fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::Missing)?;
    if first.trim_end() != "---" {
        return Err(FrontMatterError::Missing);
    }
    let mut yaml_len = 0;
    let mut closed = None;
    for line in lines {
        if line.trim_end() == "---" {
            closed = Some(line.len());
            break;
        }
        yaml_len += line.len();
    }
    let close_len = closed.ok_or(FrontMatterError::Unclosed)?;
    let yaml = &text[first.len()..first.len() + yaml_len];
    let body = &text[first.len() + yaml_len + close_len..];
    let value: Value = if yaml.trim().is_empty() {
        Value::Null
    } else {
        serde_norway::from_str(yaml).map_err(|e| FrontMatterError::Yaml(e.to_string()))?
    };
    let map = match value {
        Value::Mapping(map) => map,
        Value::Null => serde_norway::Mapping::new(),
        _ => return Err(FrontMatterError::NotMapping),
    };
    let field = |key: &'static str| -> Result<String, FrontMatterError> {
        match map.get(key) {
            None | Some(Value::Null) => Err(FrontMatterError::MissingField(key)),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(FrontMatterError::NotString(key)),
        }
    };
    let name = field("name")?;
    check_name(&name)?;
    let description = field("description")?;
    if description.trim().is_empty() {
        return Err(FrontMatterError::EmptyDescription);
    }
    let count = description.chars().count();
    if count > MAX_DESCRIPTION_LEN {
        return Err(FrontMatterError::LongDescription(count));
    }
    Ok(FrontMatter { name, description, body: body.to_owned() })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(text: &str, expect: Expect) {
        let shown = match parse(text) {
            Ok(fm) => format!("name={:?} description={:?} body={:?}", fm.name, fm.description, fm.body),
            Err(err) => format!("error: {err}"),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn skill_front_matter_is_read() {
        check(
            "---\nname: release-notes\ndescription: Write release notes.\n---\nNotes\n",
            expect![[r#"name="release-notes" description="Write release notes." body="Notes\n""#]],
        );
        check(
            "\u{feff}---\r\nname: a1\r\ndescription: >\r\n  Folded\r\n  text.\r\nlicense: MIT\r\n---\r\nBody",
            expect![[r#"name="a1" description="Folded text.\n" body="Body""#]],
        );
        check(
            "---\nname: x\ndescription: \"Quoted: with a colon\"\nallowed-tools: [Bash]\nmetadata:\n  v: 1\n---\n",
            expect![[r#"name="x" description="Quoted: with a colon" body="""#]],
        );
    }

    #[test]
    fn skill_front_matter_is_refused_with_what_to_write() {
        check(
            "# Just Markdown\n",
            expect![
                "error: SKILL.md has no front matter: it must start with a `---` line, then `name: …` and `description: …`, then a `---` line"
            ],
        );
        check(
            "",
            expect![
                "error: SKILL.md has no front matter: it must start with a `---` line, then `name: …` and `description: …`, then a `---` line"
            ],
        );
        check(
            "---\nname: x\ndescription: y\n",
            expect![
                "error: SKILL.md's front matter has no closing `---` line: end the YAML block with a line `---`"
            ],
        );
        check(
            "---\n---\nbody",
            expect!["error: SKILL.md's front matter has no `name`: add a line `name: …`"],
        );
        check(
            "---\nname: x\n---\n",
            expect!["error: SKILL.md's front matter has no `description`: add a line `description: …`"],
        );
        check(
            "---\nname: x\ndescription: \"  \"\n---\n",
            expect![
                "error: the description in SKILL.md is empty: say in a sentence what the skill does and when to use it"
            ],
        );
        check(
            "---\nname: 12\ndescription: y\n---\n",
            expect!["error: `name` in SKILL.md's front matter is not a string: write it as plain text"],
        );
        check(
            "---\n- a\n- b\n---\n",
            expect![
                "error: SKILL.md's front matter is not a YAML mapping: write it as `name: …` and `description: …` lines"
            ],
        );
        check(
            "---\nname: [x\n---\n",
            expect![
                "error: SKILL.md's front matter is not valid YAML (did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence at line 1 column 7): fix the block between the `---` lines"
            ],
        );
        check(
            "---\nname: Release_Notes\ndescription: y\n---\n",
            expect![
                "error: `Release_Notes` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)"
            ],
        );
        check(
            "---\nname: ../evil\ndescription: y\n---\n",
            expect![
                "error: `../evil` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)"
            ],
        );
        let long = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1025));
        check(
            &long,
            expect![
                "error: the description in SKILL.md has 1025 characters, more than 1024: shorten it and move the detail into the body"
            ],
        );
        let exactly = format!("---\nname: {}\ndescription: {}\n---\n", "a".repeat(64), "é".repeat(1024));
        assert!(parse(&exactly).is_ok());
    }

    #[test]
    fn skill_names_are_single_safe_path_components() {
        let checked: Vec<String> =
            ["ok-name", "a", "-lead", "trail-", "two--hyphens", "UPPER", "dot.s", "", "ünï"]
                .iter()
                .map(|name| {
                    format!("{name:?}: {}", check_name(name).map_or_else(|e| e.to_string(), |()| "ok".into()))
                })
                .collect();
        expect![[r#"
            [
                "\"ok-name\": ok",
                "\"a\": ok",
                "\"-lead\": `-lead` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
                "\"trail-\": `trail-` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
                "\"two--hyphens\": `two--hyphens` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
                "\"UPPER\": `UPPER` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
                "\"dot.s\": `dot.s` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
                "\"\": a skill name cannot be empty",
                "\"ünï\": `ünï` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)",
            ]
        "#]]
        .assert_debug_eq(&checked);
        assert!(check_name(&"a".repeat(65)).is_err());
    }
}
