//! I1: a secret never reaches the sandbox, a result, an error, a journal, a run, a log or the
//! serving process's stderr — raw or encoded — even when the upstream echoes it.

use capabilities_invariants::Kind;
use serde_json::json;

use crate::support::{CANARY, leaks, on_each_target, upstream_hub};

/// Code that looks for the secret everywhere the sandbox could reach.
const SNOOP: &str = r#"
const seen = [];
const walk = (value, depth) => {
  if (depth > 2 || value === null || value === undefined) return;
  for (const key of Object.getOwnPropertyNames(value)) {
    let inner;
    try { inner = value[key]; } catch (e) { seen.push(key + ":" + e); continue; }
    seen.push(key + "=" + (typeof inner === "function" ? "fn" : String(inner)).slice(0, 200));
    if (typeof inner === "object") walk(inner, depth + 1);
  }
};
walk(globalThis, 0);
for (const name of ["process", "Deno", "Bun", "require", "env", "secrets", "credentials"]) {
  seen.push(name + ":" + typeof globalThis[name]);
}
return seen.join("\n");
"#;

fn secret_never_leaks(kind: Kind) {
    let mut target = kind.start(capabilities_invariants::Home::new());
    let _upstream = upstream_hub(&mut *target);
    let mut seen: Vec<(String, Vec<u8>)> = Vec::new();
    let mut record =
        |what: &str, value: &serde_json::Value| seen.push((what.to_owned(), value.to_string().into()));

    // The upstream really echoes the secret, in every form; the hub must scrub each.
    for encoding in ["raw", "base64", "hex", "url"] {
        let envelope =
            target.execute(&format!(r#"return await up.env({{name: "CANARY", encoding: "{encoding}"}})"#));
        assert_eq!(envelope["status"], json!("completed"), "{encoding}: {envelope}");
        assert!(envelope["result"].to_string().contains("[secret]"), "{encoding} is scrubbed: {envelope}");
        record(encoding, &envelope);
    }
    let cases = [
        // An upstream error that carries it.
        r#"return await up.env({name: "CANARY", fail: true})"#,
        r#"try { await up.env({name: "CANARY", fail: true}) } catch (e) { return [String(e), e.message, JSON.stringify(e)] }"#,
        // The sandbox rethrows what it got, and builds its own encodings of it.
        r#"const v = await up.env({name: "CANARY"}); throw new Error("leak " + v)"#,
        r#"const v = await up.env({name: "CANARY"}); return [btoa(v), encodeURIComponent(v), v.split("").reverse().join("")]"#,
        // Every global and the usual places a runtime keeps the environment.
        SNOOP,
        r#"throw new Error(Object.getOwnPropertyNames(globalThis).join(","))"#,
    ];
    for code in cases {
        let envelope = target.execute(code);
        record(code, &envelope);
    }
    for (tool, arguments) in [
        ("search", json!({"query": "environment variable secret"})),
        ("describe", json!({"targets": ["up.env"]})),
        ("describe", json!({"targets": ["up"]})),
        ("execute", json!({"code": "return 1", "resume": "run_0123456789abcdef"})),
        ("execute", json!({"resume": "run_0123456789abcdef"})),
    ] {
        let result = target.call(tool, arguments);
        record(tool, &result);
    }

    // What a person sees: the runs, each run shown, and the rest of the person's channel.
    let listed = target.runs();
    let ids = capabilities_invariants::run_ids(&listed);
    assert!(ids.len() >= 10, "{}: the runs are listed: {listed}", target.name());
    for (i, text) in target.person_views().into_iter().enumerate() {
        seen.push((format!("person's view #{i}"), text.into_bytes()));
    }
    seen.push(("serving stderr".to_owned(), target.stderr().into_bytes()));

    // Every file the hub keeps at rest (a hosted tenant's credentials are sealed there).
    let files = target.stored_files();
    assert!(!files.is_empty(), "{}: the hub keeps files", target.name());
    for (path, bytes) in files {
        seen.push((path.display().to_string(), bytes));
    }

    let leaked: Vec<String> = seen
        .iter()
        .filter_map(|(what, bytes)| {
            let forms = leaks(bytes);
            (!forms.is_empty()).then(|| format!("{what}: {forms:?}"))
        })
        .collect();
    assert!(leaked.is_empty(), "{} leaked the canary {CANARY}:\n{}", target.name(), leaked.join("\n"));
    eprintln!(
        "I1 {}: {} places checked for {} forms",
        target.name(),
        seen.len(),
        crate::support::canary_forms().len()
    );
}
on_each_target!(secret_never_leaks);
