//! Benchmarks for the two checks on every tool call's path: the policy decision (target ≤ 1 µs
//! with ~200 rules) and scrubbing a 24 KB result with five secrets (target ≤ 100 µs).

use std::hint::black_box;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::manifest::{Annotations, ContractDigest};
use capabilities_core::policy::{Call, Effect, Policy, Rule};
use capabilities_core::scrub::Scrubber;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

const CURRENT: ContractDigest = ContractDigest([7; 32]);

/// 20 sources × (source rule, source+connection rule, 8 tool rules) = 200 rules.
fn policy() -> Policy {
    let effects = [Effect::Allow, Effect::Ask, Effect::Deny];
    let mut rules = Vec::new();
    for s in 0..20 {
        let ns = Namespace::new(&format!("source{s}")).unwrap();
        rules.push(Rule::on_source(ns.clone(), Effect::Ask));
        rules.push(Rule::on_source(ns.clone(), Effect::Allow).with_connection("work"));
        for t in 0..8 {
            let address = ToolAddress::new(ns.clone(), format!("tool{t}Action"));
            let rule = match t % 4 {
                0 => Rule::always_allow(address, Some("work".into()), CURRENT),
                1 => Rule::on_tool(address, effects[t % 3]),
                2 => Rule::on_tool(address, Effect::Allow).with_connection("personal"),
                _ => Rule::always_allow(address, None, ContractDigest([1; 32])),
            };
            rules.push(rule);
        }
    }
    assert_eq!(rules.len(), 200);
    Policy::new(rules).unwrap()
}

fn bench_policy(c: &mut Criterion) {
    let policy = policy();
    let write = Annotations { read_only_hint: Some(false), ..Annotations::default() };
    let read = Annotations { read_only_hint: Some(true), ..Annotations::default() };
    let cases = [
        ("tool+connection", "source13.tool4Action", Some("work"), &write),
        ("stale pin, falls to source", "source7.tool3Action", Some("personal"), &write),
        ("no rule, read-only", "other.searchThings", None, &read),
    ];
    for (name, address, connection, annotations) in cases {
        let address = ToolAddress::parse(address).unwrap();
        let call =
            Call { address: &address, connection, digest: &CURRENT, annotations, reviewed: Some(&CURRENT) };
        c.bench_function(&format!("policy decide ({name})"), |b| {
            b.iter(|| black_box(&policy).decide(black_box(&call)).effect)
        });
    }
}

const SECRETS: [&str; 5] = [
    "ghp_8fJq2LmZx0RtYb7KcW4nPe1sVd9HuA3oGi6T",
    "sk-live-51HqLmN2eZvKYlo2CzV7aBcDeFgHiJkLmNoP",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-2048-1234567890-AbCdEfGhIjKlMnOpQrStUv",
    "correct horse battery staple",
];

/// About 24 KB of issue-like JSON; with `plant`, secrets echoed in it (in a header, in base64).
fn result(plant: bool) -> Value {
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        let mut body = format!(
            "Steps to reproduce issue {i}: open the settings page, press save twice and watch the \
             request log. Expected a single request; got two, the second one rejected."
        );
        if plant && i % 13 == 5 {
            body.push_str(&format!(" Log: Authorization: Bearer {}", SECRETS[i % 5]));
        }
        if plant && i % 17 == 3 {
            body.push_str(&format!(" basic={}", STANDARD.encode(format!("user:{}", SECRETS[i % 5]))));
        }
        items.push(json!({
            "number": 1000 + i,
            "title": format!("Saving settings sends duplicate requests ({i})"),
            "url": format!("https://api.example.com/repos/acme/app/issues/{}", 1000 + i),
            "labels": ["bug", "settings"],
            "body": body,
        }));
        let value = Value::Array(items.clone());
        if serde_json::to_string(&value).unwrap().len() >= 24 * 1024 {
            return value;
        }
        i += 1;
    }
}

fn bench_scrub(c: &mut Criterion) {
    let scrubber = Scrubber::new(SECRETS).unwrap();
    let value = result(true);
    let text = serde_json::to_string(&value).unwrap();
    let no_secrets = serde_json::to_string(&result(false)).unwrap();
    assert!(scrubber.scrub_json_text(&text).contains("[secret]"));
    c.bench_function("scrub_json_text 24 KB, 5 secrets", |b| {
        b.iter(|| scrubber.scrub_json_text(black_box(&text)).len())
    });
    c.bench_function("scrub_str 24 KB, 5 secrets", |b| b.iter(|| scrubber.scrub_str(black_box(&text)).len()));
    c.bench_function("scrub_json value 24 KB, 5 secrets", |b| {
        b.iter_batched_ref(|| value.clone(), |v| scrubber.scrub_json(v), BatchSize::SmallInput)
    });
    c.bench_function("scrub_str 24 KB, nothing to scrub", |b| {
        b.iter(|| scrubber.scrub_str(black_box(&no_secrets)).len())
    });
    c.bench_function("Scrubber::new, 5 secrets", |b| {
        b.iter(|| Scrubber::new(black_box(SECRETS)).unwrap().secrets())
    });
}

criterion_group!(benches, bench_policy, bench_scrub);
criterion_main!(benches);
