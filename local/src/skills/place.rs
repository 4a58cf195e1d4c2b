//! Native install: the hub's skills placed in each harness's own skill folder, as its descriptor
//! says (the files copied, or a link to the hub's copy), through the backup set, so `disconnect`
//! and `rollback` take back exactly what was placed. A skill the hub placed and that changed in
//! the hub is updated; one gone from the hub is removed where the hub placed it; a person's own
//! skill of the same name is never touched, only reported as a conflict.
//!
//! A harness reading several folders (Codex: `~/.agents/skills`, then `~/.codex/skills`) gets a
//! skill in its first, and none when another of them already holds one of that name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Library, Scanned, Status, scan};
use crate::harness::backup::{BackupSet, ChangedMeanwhile, Placement, SkillChange};
use crate::harness::skill_files::{self, New, NewFile, Tree};
use crate::harness::{Descriptor, SkillsAs};

/// What placing did in one harness (or, for `harness: "hub"`, with one of the hub's skills).
#[derive(Debug, Clone)]
pub struct Step {
    pub harness: &'static str,
    pub path: PathBuf,
    /// `skills` (placed, updated or removed some), `unchanged`, `conflict`, `skipped`, `failed`.
    pub action: &'static str,
    pub detail: String,
}

/// What [`place`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Every skill of the hub in place (`connect`, `skills sync`).
    Sync,
    /// Every skill the hub placed taken back (`disconnect`).
    RemoveAll,
}

/// One of the hub's skills, read from its store folder and matching the lock file.
struct HubSkill {
    dir: PathBuf,
    scanned: Scanned,
}

/// How many times a harness's batch starts again when a folder changed while it was read.
const ATTEMPTS: usize = 5;

/// Places (or takes back) the hub's skills in each of `harnesses` that keeps skills.
pub fn place(
    library: &Library,
    set: &mut BackupSet,
    harnesses: &[&'static Descriptor],
    home: &Path,
    goal: Goal,
) -> Result<Vec<Step>> {
    let harnesses: Vec<&'static Descriptor> =
        harnesses.iter().copied().filter(|h| !h.skills.is_empty()).collect();
    let mut steps = Vec::new();
    if harnesses.is_empty() {
        return Ok(steps);
    }
    // The skills to place, and the names not to remove (a hub skill whose files are off is kept
    // where it was placed).
    let mut skills = Vec::new();
    let mut keep: BTreeSet<String> = BTreeSet::new();
    if goal == Goal::Sync && library.dir().is_dir() {
        for (name, locked, status) in library.list()? {
            keep.insert(name.clone());
            let dir = library.dir().join(&name);
            // Links point at the real folder, whatever way the store was named.
            let dir = dir.canonicalize().unwrap_or(dir);
            let scanned = match (&locked, &status) {
                (Some(locked), Status::Ok) => scan(&dir).ok().filter(|s| s.digest == locked.digest),
                _ => None,
            };
            match scanned {
                Some(scanned) => skills.push(HubSkill { dir, scanned }),
                None => steps.push(Step {
                    harness: "hub",
                    path: dir,
                    action: "skipped",
                    detail: format!(
                        "the hub's skill `{name}` is {} against {}, so it was not placed: `capabilities hub \
                         skills list` says why",
                        status.word(),
                        super::LOCK_FILE
                    ),
                }),
            }
        }
    }
    for harness in harnesses {
        let preferred = home.join(harness.skills[0]);
        for attempt in 1.. {
            let placements = set.placements()?;
            match place_one(harness, home, &skills, &keep, &placements, set, goal) {
                Ok(mut done) => steps.append(&mut done),
                Err(err) if err.is::<ChangedMeanwhile>() && attempt < ATTEMPTS => continue,
                Err(err) => steps.push(Step {
                    harness: harness.id,
                    path: preferred.clone(),
                    action: "failed",
                    detail: format!("{err:#}"),
                }),
            }
            break;
        }
    }
    Ok(steps)
}

/// What the harness gets for `skill`.
fn wanted<'a>(harness: &Descriptor, skill: &'a HubSkill) -> New<'a> {
    match harness.skills_as {
        SkillsAs::Link => New::Link(skill.dir.clone()),
        _ => New::Files(
            skill
                .scanned
                .files
                .iter()
                .map(|f| NewFile {
                    path: &f.path,
                    bytes: &f.bytes,
                    sha256: &f.sha256,
                    executable: f.executable,
                })
                .collect(),
        ),
    }
}

/// Whether `tree`, found at `path`, is the hub's skill already (its files, or a link to it).
fn is_hub_skill(tree: &Tree, path: &Path, skill: &HubSkill) -> bool {
    match tree {
        Tree::Link { .. } => {
            matches!((path.canonicalize(), skill.dir.canonicalize()), (Ok(a), Ok(b)) if a == b)
        }
        Tree::Files { files } => {
            files.len() == skill.scanned.files.len()
                && skill
                    .scanned
                    .files
                    .iter()
                    .all(|f| files.get(&f.path).is_some_and(|m| m.sha256 == f.sha256))
        }
    }
}

fn place_one(
    harness: &'static Descriptor,
    home: &Path,
    skills: &[HubSkill],
    keep: &BTreeSet<String>,
    placements: &BTreeMap<PathBuf, Placement>,
    set: &mut BackupSet,
    goal: Goal,
) -> Result<Vec<Step>> {
    let folders: Vec<PathBuf> = harness.skills.iter().map(|d| home.join(d)).collect();
    let preferred = &folders[0];
    let mut changes: Vec<SkillChange> = Vec::new();
    let (mut placed, mut updated, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    let mut unchanged = 0;
    let mut steps = Vec::new();
    let mut conflict = |path: PathBuf, detail: String| {
        steps.push(Step { harness: harness.id, path, action: "conflict", detail });
    };
    'skills: for skill in skills {
        let name = skill.scanned.name();
        for other in &folders[1..] {
            let path = other.join(name);
            if placements.contains_key(&path) {
                continue;
            }
            let Some(tree) = skill_files::read_tree(&path)? else { continue };
            if is_hub_skill(&tree, &path, skill) {
                unchanged += 1;
            } else {
                conflict(
                    path.clone(),
                    format!(
                        "{} reads a skill `{name}` of yours from {}, so the hub did not place its own (the \
                         harness would see two): rename yours to have both, or remove it to get the hub's",
                        harness.name,
                        path.display()
                    ),
                );
            }
            continue 'skills;
        }
        let path = preferred.join(name);
        let new = wanted(harness, skill);
        let want = new.tree();
        match (skill_files::read_tree(&path)?, placements.get(&path)) {
            (None, _) => {
                placed.push(name.to_owned());
                changes.push(SkillChange { skill: name.to_owned(), path, expected: None, new: Some(new) });
            }
            (Some(now), Some(placement)) if now.same(&placement.tree) => {
                if now.same(&want) {
                    unchanged += 1;
                } else {
                    updated.push(name.to_owned());
                    changes.push(SkillChange {
                        skill: name.to_owned(),
                        path,
                        expected: Some(now),
                        new: Some(new),
                    });
                }
            }
            (Some(now), Some(placement)) => conflict(
                path.clone(),
                format!(
                    "the skill `{name}` at {} was changed since the hub placed it ({}), so the hub left it as \
                     it is: remove it and run `capabilities hub skills sync` to get the hub's, or keep yours \
                     with `capabilities hub skills add {} --replace`",
                    path.display(),
                    now.changes_from(&placement.tree),
                    path.display()
                ),
            ),
            (Some(now), None) if is_hub_skill(&now, &path, skill) => unchanged += 1,
            (Some(_), None) => conflict(
                path.clone(),
                format!(
                    "a skill of yours named `{name}` is at {}; the hub never overwrites it, so {} keeps yours: \
                     rename one of them to have both",
                    path.display(),
                    harness.name
                ),
            ),
        }
    }
    // What the hub placed here before and should no longer be here.
    for (path, placement) in placements {
        let in_folder = path.parent().is_some_and(|p| folders.iter().any(|f| f == p));
        if placement.harness != harness.id || !in_folder {
            continue;
        }
        if goal == Goal::Sync && keep.contains(&placement.skill) {
            continue;
        }
        let Some(now) = skill_files::read_tree(path)? else { continue };
        if now.same(&placement.tree) {
            removed.push(placement.skill.clone());
            changes.push(SkillChange {
                skill: placement.skill.clone(),
                path: path.clone(),
                expected: Some(now),
                new: None,
            });
        } else {
            conflict(
                path.clone(),
                format!(
                    "the skill `{}` at {} was changed since the hub placed it ({}), so the hub left it there: \
                     remove it yourself if you no longer want it",
                    placement.skill,
                    path.display(),
                    now.changes_from(&placement.tree)
                ),
            );
        }
    }
    set.change_skills(harness.id, changes)?;
    let mut what = Vec::new();
    for (word, names) in [("placed", &placed), ("updated", &updated), ("removed", &removed)] {
        if !names.is_empty() {
            what.push(format!("{word} {}", names_line(names)));
        }
    }
    if !what.is_empty() {
        let how = match harness.skills_as {
            SkillsAs::Link => " (as links to the hub's copies)",
            _ => "",
        };
        let detail = format!("{}{how}", what.join("; "));
        steps.insert(0, Step { harness: harness.id, path: preferred.clone(), action: "skills", detail });
    } else if unchanged > 0 {
        let detail = format!("{unchanged} skill{} already in place", if unchanged == 1 { "" } else { "s" });
        steps.insert(0, Step { harness: harness.id, path: preferred.clone(), action: "unchanged", detail });
    }
    Ok(steps)
}

/// `3 skills: a, b, c`, naming at most eight.
fn names_line(names: &[String]) -> String {
    let count = format!("{} skill{}", names.len(), if names.len() == 1 { "" } else { "s" });
    let shown: Vec<&str> = names.iter().take(8).map(String::as_str).collect();
    let more = if names.len() > 8 { format!(" and {} more", names.len() - 8) } else { String::new() };
    format!("{count}: {}{more}", shown.join(", "))
}
