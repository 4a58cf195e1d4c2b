//! The code pipeline on about 10 KB of the TypeScript a model writes for `execute`.

use std::hint::black_box;

use capabilities_core::code::{DEFAULT_MAX_BYTES, prepare};
use criterion::{Criterion, criterion_group, criterion_main};

/// One triage step, repeated under new names until the program is about 10 KB.
const STEP: &str = r#"
interface Issue{N} {
  number: number;
  title: string;
  labels: { name: string }[];
  assignee?: { login: string } | null;
  updated_at: string;
}

enum Priority{N} { Low, Medium, High }

function priorityOf{N}(issue: Issue{N}): Priority{N} {
  const names = issue.labels.map((l) => l.name.toLowerCase());
  if (names.includes("p0") || names.includes("security")) return Priority{N}.High;
  if (names.some((n) => n.startsWith("bug"))) return Priority{N}.Medium;
  return Priority{N}.Low;
}

const found{N} = (await github.searchIssues({
  q: `repo:acme/app is:open label:bug updated:>2024-01-01 sort:updated-desc`,
  perPage: 50,
})) as { items: Issue{N}[]; total_count: number };

const ranked{N} = found{N}.items
  .map((issue) => ({ issue, priority: priorityOf{N}(issue) }))
  .filter(({ issue }) => !issue.assignee)
  .sort((a, b) => b.priority - a.priority || a.issue.updated_at.localeCompare(b.issue.updated_at));

const lines{N}: string[] = ranked{N}.slice(0, 5).map(
  ({ issue, priority }) => `• [${Priority{N}[priority]}] ${issue.title} (#${issue.number})`,
);
const summary{N} = new Map<string, number>();
for (const { priority } of ranked{N}) {
  const key = Priority{N}[priority]!;
  summary{N}.set(key, (summary{N}.get(key) ?? 0) + 1);
}
"#;

fn typescript_program() -> String {
    let mut program = String::new();
    let mut n = 0;
    while program.len() < 10 * 1024 {
        program.push_str(&STEP.replace("{N}", &n.to_string()));
        n += 1;
    }
    program.push_str(
        "\n({ lines: lines0, total: found0.total_count, summary: Object.fromEntries(summary0) })\n",
    );
    program
}

/// The same program with the types taken out by hand: the plain JavaScript path.
fn javascript_program() -> String {
    let prepared = prepare(&typescript_program(), DEFAULT_MAX_BYTES).expect("the bench program prepares");
    prepared.body
}

fn bench(c: &mut Criterion) {
    let typescript = typescript_program();
    let javascript = javascript_program();
    let fenced = format!("Here is the code:\n\n```ts\n{typescript}```\n");
    let mut group = c.benchmark_group("prepare");
    group.bench_function(format!("typescript_{}b", typescript.len()), |b| {
        b.iter(|| prepare(black_box(&typescript), DEFAULT_MAX_BYTES))
    });
    group.bench_function(format!("typescript_fenced_{}b", fenced.len()), |b| {
        b.iter(|| prepare(black_box(&fenced), DEFAULT_MAX_BYTES))
    });
    group.bench_function(format!("javascript_{}b", javascript.len()), |b| {
        b.iter(|| prepare(black_box(&javascript), DEFAULT_MAX_BYTES))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
