//! The hub's skill library through the binary: `hub skills add|list|show|remove` on folders, a
//! `SKILL.md` path and a `file://` git repository made with the real `git`; the bad input the
//! skills format rules out, each refused with nothing installed; and `hub import` proposing the
//! skills in every harness's skill folders under a temporary `HOME`, merged by digest.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use expect_test::expect;
use serde_json::Value;

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Machine {
    fn new() -> Machine {
        let machine = Machine { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(machine.home()).unwrap();
        machine
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn hub(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    /// A scratch folder for skills to add.
    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn run(&self, args: &[&str]) -> Ran {
        self.run_in(&self.home(), args)
    }

    fn run_in(&self, dir: &Path, args: &[&str]) -> Ran {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(args)
            .env("HOME", self.home())
            .env("CAPABILITIES_HOME", self.hub())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let clean = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .replace(self.work().to_str().unwrap(), "$WORK")
                .replace(self.home().to_str().unwrap(), "$HOME")
                .replace(self.hub().to_str().unwrap(), "$HUB")
                .replace(self.dir.path().to_str().unwrap(), "$TMP")
        };
        Ran { code: out.status.code().unwrap_or(-1), stdout: clean(&out.stdout), stderr: clean(&out.stderr) }
    }

    fn json(&self, args: &[&str]) -> Value {
        let ran = ok(self.run(args));
        serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}", ran.stdout))
    }

    /// The names under the store's `skills/`, hidden ones too, and the lock file's skills.
    fn installed(&self) -> (Vec<String>, Vec<String>) {
        let mut names: Vec<String> = std::fs::read_dir(self.hub().join("skills"))
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
            .unwrap_or_default();
        names.sort();
        let locked = std::fs::read(self.hub().join("skills.lock.json"))
            .map(|bytes| {
                let lock: Value = serde_json::from_slice(&bytes).unwrap();
                lock["skills"].as_object().unwrap().keys().cloned().collect()
            })
            .unwrap_or_default();
        (names, locked)
    }
}

fn ok(ran: Ran) -> Ran {
    assert_eq!(ran.code, 0, "stdout:\n{}\nstderr:\n{}", ran.stdout, ran.stderr);
    ran
}

/// Writes a skill folder `dir` named `name` with a SKILL.md and the `files` given.
fn skill(dir: &Path, name: &str, description: &str, files: &[(&str, &[u8])]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nDo the thing.\n"),
    )
    .unwrap();
    for (path, bytes) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    dir.to_owned()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("`git` is on PATH");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn skills_add_list_show_and_remove_keep_the_lock_in_step_with_the_files() {
    let machine = Machine::new();
    let binary: &[u8] = &[0x89, b'P', b'N', b'G', 0, 0xff, 0xfe, 0, 1, 2];
    let dir = skill(
        &machine.work().join("release-notes"),
        "release-notes",
        "Write release notes from the merged pull requests.",
        &[
            ("scripts/collect.sh", b"#!/bin/sh\necho notes\n"),
            ("assets/logo.png", binary),
            ("docs/ref.md", b"ref\n"),
        ],
    );
    std::fs::set_permissions(dir.join("scripts/collect.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A link inside the skill to a file inside it is copied as that file.
    symlink("docs/ref.md", dir.join("ref-link.md")).unwrap();

    let added = ok(machine.run(&["hub", "skills", "add", dir.to_str().unwrap()]));
    expect![[r#"
        added skill `release-notes`: 5 files, 162 bytes, sha256:d1a68014cbc4d52fbb046f5a15fa98700e4e4311f8755e832ab954c91767d20c
    "#]]
    .assert_eq(&added.stdout);

    let stored = machine.hub().join("skills/release-notes");
    let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&stored), 0o700);
    assert_eq!(mode(&stored.join("SKILL.md")), 0o600);
    assert_eq!(mode(&stored.join("scripts/collect.sh")), 0o700, "the owner may still run a script");
    assert_eq!(std::fs::read(stored.join("assets/logo.png")).unwrap(), binary);
    assert!(!std::fs::symlink_metadata(stored.join("ref-link.md")).unwrap().file_type().is_symlink());
    assert_eq!(mode(&machine.hub().join("skills.lock.json")), 0o600);

    let list = ok(machine.run(&["hub", "skills", "list"]));
    expect![[r#"
        release-notes  ok          Write release notes from the merged pull requests.
    "#]]
    .assert_eq(&list.stdout);

    let shown = machine.json(&["hub", "skills", "show", "release-notes", "--json"]);
    let files: Vec<String> = shown["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!("{} {} {}", f["path"].as_str().unwrap(), f["bytes"], &f["sha256"].as_str().unwrap()[..12])
        })
        .collect();
    expect![[r#"
        [
            "SKILL.md 123 512dff5378c0",
            "assets/logo.png 10 a381a046adb2",
            "docs/ref.md 4 8e7bcfe346d6",
            "ref-link.md 4 8e7bcfe346d6",
            "scripts/collect.sh 21 df87577789fc",
        ]
    "#]]
    .assert_debug_eq(&files);
    assert_eq!(shown["status"], "ok");
    assert_eq!(shown["body"], "# release-notes\n\nDo the thing.\n");
    assert_eq!(shown["source"], "$WORK/release-notes", "where it came from, as a real path");
    let text = ok(machine.run(&["hub", "skills", "show", "release-notes"])).stdout;
    assert!(text.contains("Do the thing.") && text.contains("assets/logo.png  10 bytes"), "{text}");

    // The same files again change nothing; the SKILL.md path names the same skill.
    let again = ok(machine.run(&["hub", "skills", "add", dir.join("SKILL.md").to_str().unwrap()]));
    assert!(again.stdout.starts_with("unchanged skill `release-notes`"), "{}", again.stdout);

    // A file changed in the store is seen as changed.
    std::fs::write(stored.join("docs/ref.md"), "edited\n").unwrap();
    std::fs::write(stored.join("extra.txt"), "new\n").unwrap();
    let list = ok(machine.run(&["hub", "skills", "list"]));
    expect![[r#"
        release-notes  changed     Write release notes from the merged pull requests.
                       files differ from skills.lock.json: docs/ref.md changed, extra.txt added

        to record a skill's files as they are now, add its folder again with `capabilities hub skills add <folder> --replace`; or `capabilities hub skills remove <name>`
    "#]]
    .assert_eq(&list.stdout);
    assert_eq!(machine.json(&["hub", "skills", "list", "--json"])[0]["status"], "changed");

    // Other files under the same name need `--replace`.
    std::fs::write(dir.join("docs/ref.md"), "new ref\n").unwrap();
    let refused = machine.run(&["hub", "skills", "add", dir.to_str().unwrap()]);
    assert_eq!(refused.code, 1);
    expect![[r#"
        error: the hub has a skill `release-notes` already, with other files: pass `--replace` to put this one in its place, or `capabilities hub skills remove release-notes` first
    "#]]
    .assert_eq(&refused.stderr);
    let replaced = ok(machine.run(&["hub", "skills", "add", "--replace", dir.to_str().unwrap()]));
    assert!(replaced.stdout.starts_with("replaced skill `release-notes`"), "{}", replaced.stdout);
    assert_eq!(std::fs::read_to_string(stored.join("docs/ref.md")).unwrap(), "new ref\n");
    assert!(!stored.join("extra.txt").exists());
    assert_eq!(machine.json(&["hub", "skills", "list", "--json"])[0]["status"], "ok");

    // A folder under `skills/` the lock does not know is listed as such.
    std::fs::create_dir(machine.hub().join("skills/stray")).unwrap();
    let list = ok(machine.run(&["hub", "skills", "list"]));
    assert!(list.stdout.contains("stray          unrecorded"), "{}", list.stdout);
    std::fs::remove_dir(machine.hub().join("skills/stray")).unwrap();

    let removed = ok(machine.run(&["hub", "skills", "remove", "release-notes", "--json"]));
    assert_eq!(removed.stdout.trim(), r#"{"removed":"release-notes"}"#);
    assert_eq!(machine.installed(), (vec![], vec![]));
    let gone = machine.run(&["hub", "skills", "remove", "release-notes"]);
    assert_eq!(gone.code, 1);
    expect![[r#"
        error: the hub has no skill `release-notes`: `capabilities hub skills list` shows the skills it has
    "#]]
    .assert_eq(&gone.stderr);
    expect![[r#"
        no skills in the hub: add one with `capabilities hub skills add <folder>`
    "#]]
    .assert_eq(&ok(machine.run(&["hub", "skills", "list"])).stdout);
}

#[test]
fn skills_bad_input_is_refused_with_what_to_do_and_nothing_half_installed() {
    let machine = Machine::new();
    let work = machine.work();
    type Setup = fn(&Path) -> PathBuf;
    let cases: &[(&str, Setup)] = &[
        ("no-front-matter", |w| {
            let dir = w.join("plain");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("SKILL.md"), "# Plain\nNo front matter here.\n").unwrap();
            dir
        }),
        ("no-skill-md", |w| {
            let dir = w.join("empty");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("README.md"), "hi").unwrap();
            dir
        }),
        ("name-differs", |w| skill(&w.join("folder-name"), "other-name", "d", &[])),
        ("bad-name", |w| skill(&w.join("Bad_Name"), "Bad_Name", "d", &[])),
        ("twenty-megabytes", |w| {
            let dir = skill(&w.join("big"), "big", "d", &[]);
            let chunk = vec![b'x'; 5 * 1024 * 1024];
            for i in 0..4 {
                std::fs::write(dir.join(format!("part{i}.bin")), &chunk).unwrap();
            }
            dir
        }),
        ("a-thousand-files", |w| {
            let dir = skill(&w.join("many"), "many", "d", &[]);
            std::fs::create_dir_all(dir.join("files")).unwrap();
            for i in 0..1000 {
                std::fs::write(dir.join(format!("files/{i:04}.txt")), "x").unwrap();
            }
            dir
        }),
        ("symlink-outside", |w| {
            std::fs::create_dir_all(w).unwrap();
            std::fs::write(w.join("secret.txt"), "outside").unwrap();
            let dir = skill(&w.join("leaky"), "leaky", "d", &[]);
            symlink(w.join("secret.txt"), dir.join("secret.txt")).unwrap();
            dir
        }),
        ("symlink-to-parent", |w| {
            let dir = skill(&w.join("looping"), "looping", "d", &[]);
            symlink("..", dir.join("again")).unwrap();
            dir
        }),
        ("symlink-to-itself", |w| {
            let dir = skill(&w.join("selfish"), "selfish", "d", &[]);
            symlink(".", dir.join("me")).unwrap();
            dir
        }),
        ("folder-is-a-symlink-loop", |w| {
            std::fs::create_dir_all(w).unwrap();
            let dir = w.join("loop");
            symlink(&dir, &dir).unwrap();
            dir
        }),
        ("dangling-symlink", |w| {
            let dir = skill(&w.join("dangling"), "dangling", "d", &[]);
            symlink("nowhere.md", dir.join("gone.md")).unwrap();
            dir
        }),
        ("control-character-in-a-file-name", |w| skill(&w.join("odd"), "odd", "d", &[("a\nb.md", b"x")])),
        ("a-file-not-skill-md", |w| {
            skill(&w.join("notes"), "notes", "d", &[("README.md", b"x")]).join("README.md")
        }),
        ("missing", |w| w.join("does-not-exist")),
    ];
    let mut seen = Vec::new();
    for (case, setup) in cases {
        let path = setup(&work);
        let ran = machine.run(&["hub", "skills", "add", path.to_str().unwrap()]);
        assert_ne!(ran.code, 0, "{case} was accepted: {}", ran.stdout);
        seen.push(format!("{case}: {}", ran.stderr.trim_end().replace('\n', " / ")));
        // Nothing is left behind: no skill, no temporary folder, no lock entry.
        assert_eq!(machine.installed(), (vec![], vec![]), "{case} left something in the store");
    }
    expect![[r#"
        no-front-matter: error: nothing was added /   caused by: reading $WORK/plain/SKILL.md /   caused by: SKILL.md has no front matter: it must start with a `---` line, then `name: …` and `description: …`, then a `---` line
        no-skill-md: error: nothing was added /   caused by: $WORK/empty has no SKILL.md: a skill is a folder with a SKILL.md that starts with front matter (`name`, `description`)
        name-differs: error: nothing was added /   caused by: the skill in $WORK/folder-name is named `other-name` in its SKILL.md but its folder is `folder-name`: rename the folder to `other-name` or change `name:` to `folder-name`
        bad-name: error: nothing was added /   caused by: reading $WORK/Bad_Name/SKILL.md /   caused by: `Bad_Name` is not a skill name: use lowercase letters, digits and single hyphens, not at the start or end (`release-notes`)
        twenty-megabytes: error: nothing was added /   caused by: the skill at $WORK/big holds more than 16 MiB: a skill holds at most 16 MiB; move large files out
        a-thousand-files: error: nothing was added /   caused by: the skill at $WORK/many has more than 512 files: a skill holds at most 512; move the rest out (or into another skill)
        symlink-outside: error: nothing was added /   caused by: $WORK/leaky/secret.txt is a symlink to $WORK/secret.txt, outside the skill: copy what it points at into the skill folder instead
        symlink-to-parent: error: nothing was added /   caused by: $WORK/looping/again is a symlink to $WORK, outside the skill: copy what it points at into the skill folder instead
        symlink-to-itself: error: nothing was added /   caused by: $WORK/selfish/me is a symlink to a folder: replace it with the folder itself (a link to a folder above it would be a loop)
        folder-is-a-symlink-loop: error: nothing was added /   caused by: $WORK/loop is a symlink loop: point it at a real folder, or remove it
        dangling-symlink: error: nothing was added /   caused by: $WORK/dangling/gone.md is a symlink to nothing: remove it or point it at a file in the skill
        control-character-in-a-file-name: error: nothing was added /   caused by: "a\nb.md" in $WORK/odd has a control character or `\` in its name: rename it
        a-file-not-skill-md: error: $WORK/notes/README.md is a file but not a SKILL.md: give the skill's folder or its SKILL.md
        missing: error: $WORK/does-not-exist does not exist: give a skill's folder, its SKILL.md, or a git URL
    "#]]
    .assert_eq(&(seen.join("\n") + "\n"));

    // Names that would leave the library are refused before any file is touched.
    for args in [["show", "../hub"], ["remove", "../../home"], ["show", "a/b"]] {
        let ran = machine.run(&["hub", "skills", args[0], args[1]]);
        assert_eq!(ran.code, 1, "{args:?}");
        assert!(ran.stderr.contains("is not a skill name"), "{args:?}: {}", ran.stderr);
    }
    assert!(machine.hub().join("hub.json").is_file(), "the store is intact");

    // A collection with one bad skill installs none of them.
    let collection = work.join("collection");
    skill(&collection.join("good-one"), "good-one", "d", &[]);
    skill(&collection.join("bad-one"), "not-bad-one", "d", &[]);
    let ran = machine.run(&["hub", "skills", "add", collection.to_str().unwrap()]);
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("named `not-bad-one`"), "{}", ran.stderr);
    assert_eq!(machine.installed(), (vec![], vec![]));
}

#[test]
fn skills_add_from_a_git_url_clones_shallow_and_records_the_url() {
    let machine = Machine::new();
    let work = machine.work();
    // One skill at the root of its repository, which is named after it.
    let src = skill(&work.join("src-one"), "triage", "Sort new issues by area.", &[("notes.md", b"n\n")]);
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["add", "."]);
    git(&src, &["commit", "-q", "-m", "skill"]);
    git(&work, &["clone", "-q", "--bare", "src-one", "triage.git"]);
    let url = format!("file://{}", work.join("triage.git").display());
    let added = ok(machine.run(&["hub", "skills", "add", &url, "--json"]));
    let rows: Value = serde_json::from_str(&added.stdout).unwrap();
    assert_eq!(rows[0]["name"], "triage");
    assert_eq!(rows[0]["status"], "added");
    assert_eq!(rows[0]["files"], 2, "the repository's .git is not part of the skill");
    assert_eq!(rows[0]["source"], "file://$WORK/triage.git");
    assert!(!machine.hub().join("skills/triage/.git").exists());

    // A repository holding several skills under `skills/` adds each.
    let many = work.join("src-many");
    skill(&many.join("skills/alpha"), "alpha", "First.", &[]);
    skill(&many.join("skills/beta"), "beta", "Second.", &[]);
    git(&many, &["init", "-q", "-b", "main"]);
    git(&many, &["add", "."]);
    git(&many, &["commit", "-q", "-m", "skills"]);
    git(&work, &["clone", "-q", "--bare", "src-many", "collection.git"]);
    let url = format!("file://{}", work.join("collection.git").display());
    let added = ok(machine.run(&["hub", "skills", "add", &url]));
    assert_eq!(added.stdout.lines().filter(|l| l.starts_with("added skill")).count(), 2, "{}", added.stdout);
    let (names, locked) = machine.installed();
    assert_eq!(names, ["alpha", "beta", "triage"], "no clone is left in the library");
    assert_eq!(locked, ["alpha", "beta", "triage"]);

    // A URL git cannot clone fails with git's reason and leaves nothing.
    let bad = format!("file://{}", work.join("nothing-here.git").display());
    let ran = machine.run(&["hub", "skills", "add", &bad]);
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("`git clone file://$WORK/nothing-here.git` failed:"), "{}", ran.stderr);
    assert!(ran.stderr.contains("check the URL"), "{}", ran.stderr);
    assert_eq!(machine.installed().0, ["alpha", "beta", "triage"]);
}

#[test]
fn import_proposes_every_harness_skill_folder_merged_by_digest() {
    let machine = Machine::new();
    let home = machine.home();
    let notes = "Write release notes from the merged pull requests.";
    // The same skill in three harnesses' folders: one proposal.
    for dir in [".claude/skills", ".agents/skills", ".config/opencode/skills"] {
        skill(&home.join(dir).join("release-notes"), "release-notes", notes, &[("t.md", b"template\n")]);
    }
    // The same name with other files: a conflict; the first found is imported.
    skill(&home.join(".cursor/skills/release-notes"), "release-notes", notes, &[("t.md", b"other\n")]);
    skill(&home.join(".gemini/skills/triage"), "triage", "Sort new issues by area.", &[]);
    skill(&home.join(".codex/skills/old-codex"), "old-codex", "From the older Codex folder.", &[]);
    // Refused ones are named and left out.
    std::fs::create_dir_all(home.join(".copilot/skills/plain")).unwrap();
    std::fs::write(home.join(".copilot/skills/plain/SKILL.md"), "no front matter\n").unwrap();
    symlink(home.join(".copilot/skills/loop"), home.join(".copilot/skills/loop")).unwrap();

    // Without `--yes` and without a terminal, nothing is imported.
    let asked = machine.run(&["hub", "import"]);
    assert_eq!(asked.code, 2, "{}", asked.stderr);
    assert!(
        asked
            .stderr
            .contains("importing copies the skills listed above into the hub: check them and pass `--yes`")
    );
    assert_eq!(machine.installed(), (vec![], vec![]));
    expect![[r#"
        skills to import:
          release-notes  Write release notes from the merged pull requests.
            2 files, sha256:504ba8f9d6c2, from claude-code ~/.claude/skills/release-notes, codex ~/.agents/skills/release-notes, opencode ~/.config/opencode/skills/release-notes
            conflict: cursor ~/.cursor/skills/release-notes has other files (sha256:44f4bdb6ad58); importing the one from claude-code ~/.claude/skills/release-notes
          old-codex  From the older Codex folder.
            1 file, sha256:ac4cf23176eb, from codex ~/.codex/skills/old-codex
          triage  Sort new issues by area.
            1 file, sha256:7821ee93afc4, from gemini-cli ~/.gemini/skills/triage
        skipped skill copilot-cli ~/.copilot/skills/loop: $HOME/.copilot/skills/loop is a symlink loop: point it at a real folder, or remove it
        skipped skill copilot-cli ~/.copilot/skills/plain: reading $HOME/.copilot/skills/plain/SKILL.md: SKILL.md has no front matter: it must start with a `---` line, then `name: …` and `description: …`, then a `---` line
    "#]]
    .assert_eq(&asked.stdout);

    let plan = machine.json(&["hub", "import", "--json", "--yes"]);
    let proposed: Vec<String> = plan["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} seen {} conflicts {}",
                s["name"],
                s["seenIn"].as_array().unwrap().len(),
                s["conflicts"].as_array().unwrap().len()
            )
        })
        .collect();
    expect![[r#"
        [
            "\"release-notes\" seen 3 conflicts 1",
            "\"old-codex\" seen 1 conflicts 0",
            "\"triage\" seen 1 conflicts 0",
        ]
    "#]]
    .assert_debug_eq(&proposed);
    assert_eq!(plan["skillsSkipped"].as_array().unwrap().len(), 2);
    let (names, locked) = machine.installed();
    assert_eq!(names, ["old-codex", "release-notes", "triage"]);
    assert_eq!(locked, names);
    let stored = std::fs::read_to_string(machine.hub().join("skills/release-notes/t.md")).unwrap();
    assert_eq!(stored, "template\n", "the first one found was imported");
    assert_eq!(std::fs::read_to_string(home.join(".cursor/skills/release-notes/t.md")).unwrap(), "other\n");

    // Imported again: each is in the hub already; a changed one is left for `--replace`.
    std::fs::write(home.join(".gemini/skills/triage/extra.md"), "more\n").unwrap();
    let again = ok(machine.run(&["hub", "import", "--yes", "--from", "claude-code,gemini-cli"]));
    expect![[r#"
        no harness config found under $HOME
        skill already in the hub as `release-notes`: claude-code ~/.claude/skills/release-notes
        skipped skill gemini-cli ~/.gemini/skills/triage: the hub has a skill `triage` with other files; left as it is (`capabilities hub skills add $HOME/.gemini/skills/triage --replace` takes this one)
    "#]]
    .assert_eq(&again.stdout);
}

#[test]
fn import_proposes_the_skills_of_the_project_it_runs_in() {
    let machine = Machine::new();
    let project = machine.home().join("code/app");
    let deploy = "Deploy this app to staging.";
    // One skill kept for two harnesses in the project, another for Antigravity's workspace.
    for dir in [".claude/skills", ".github/skills"] {
        skill(&project.join(dir).join("deploy"), "deploy", deploy, &[]);
    }
    skill(&project.join(".agent/skills/lint"), "lint", "Lint the code the project's way.", &[]);
    skill(&machine.home().join(".claude/skills/triage"), "triage", "Sort new issues by area.", &[]);

    let plan = ok(machine.run_in(&project, &["hub", "import", "--json", "--yes"]));
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let seen: Vec<String> = plan["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{}: {}",
                s["name"].as_str().unwrap(),
                s["seenIn"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    expect![[r#"
        [
            "triage: claude-code ~/.claude/skills/triage",
            "deploy: claude-code ./.claude/skills/deploy, copilot-cli ./.github/skills/deploy",
            "lint: antigravity ./.agent/skills/lint",
        ]
    "#]]
    .assert_debug_eq(&seen);
    assert_eq!(machine.installed().0, ["deploy", "lint", "triage"]);
    // From the home folder the project's skills are not the person's to import.
    let elsewhere = machine.json(&["hub", "import", "--json"]);
    assert_eq!(elsewhere["skills"], serde_json::json!([]), "{elsewhere}");
}
