//! I5: tenants of one hosted hub are isolated. Tenant B cannot find, describe, call, resume or
//! list tenant A's sources, tools, runs or credentials, A's canary never appears in anything B
//! is answered, and the Worker's admin token acts only on the tenant its request path names.
//! A local hub serves one person: it says the invariant does not apply.

use capabilities_invariants::{ADMIN_TOKEN, Applicability, Home, Kind, Need, SourceSpec, Target, Transport};
use serde_json::{Value, json};

use crate::support::{leaks, on_each_target, upstream_hub};

fn tenants_are_isolated(kind: Kind) {
    let mut a = kind.start(Home::new());
    if let Applicability::NotApplicable(reason) = a.applies(Need::TenantIsolation) {
        assert!(reason.contains("hosted"), "{}: a local target serves one person", a.name());
        eprintln!("I5 {}: not applicable: {reason}", a.name());
        return;
    }
    let hosted = a.as_hosted().expect("a target with tenants is hosted");
    let mut b = hosted.other_tenant("beta");
    let upstream = upstream_hub(&mut *a);
    let url = match a.as_hosted().map(|h| h.source_url("up")) {
        Some(url) => url,
        None => unreachable!(),
    };

    // A's runs: one read of its credential, one write waiting for a person.
    let read = a.execute(r#"return await up.env({name: "CANARY"})"#);
    assert_eq!(read["status"], json!("completed"), "{read}");
    let waiting = a.execute(r#"await up.write({key: "a-only"}); return "wrote""#);
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    let a_runs: Vec<String> =
        [&read, &waiting].iter().map(|e| e["runId"].as_str().unwrap().to_owned()).collect();

    // Everything B is answered, kept to look for A's canary and A's names.
    let mut answers: Vec<Value> = Vec::new();
    let mut checks = 0;
    for query in ["environment variable", "write key", "up", "CANARY"] {
        let found = b.call("search", json!({"query": query}));
        assert!(!found.to_string().contains("up.env"), "B's search finds A's tool: {found}");
        answers.push(found);
        checks += 1;
    }
    for targets in [json!(["up"]), json!(["up.env"]), json!(["up.write"])] {
        let described = b.call("describe", json!({"targets": targets}));
        assert!(
            !described.to_string().contains("Returns one environment variable"),
            "B describes A's tool: {described}"
        );
        answers.push(described);
        checks += 1;
    }
    for code in [
        r#"return await up.env({name: "CANARY"})"#,
        r#"return typeof up"#,
        r#"await up.write({key: "from-b"}); return 1"#,
    ] {
        let envelope = b.execute(code);
        assert_ne!(envelope["status"], json!("awaiting_approval"), "B reached A's tool: {envelope}");
        assert!(
            envelope["status"] == json!("failed") || envelope["result"] == json!("undefined"),
            "B's `{code}` ran against A's source: {envelope}"
        );
        answers.push(envelope);
        checks += 1;
    }
    for run in &a_runs {
        let resumed = b.resume(run);
        assert_ne!(resumed["status"], json!("completed"), "B resumed A's run {run}: {resumed}");
        assert_ne!(resumed["status"], json!("awaiting_approval"), "B sees A's run {run}: {resumed}");
        answers.push(resumed);
        checks += 1;
    }
    let b_runs = b.runs();
    for run in &a_runs {
        assert!(!b_runs.to_string().contains(run.as_str()), "B's runs list A's {run}: {b_runs}");
    }
    answers.push(b_runs);
    checks += 1;

    // B adds the same upstream with its own (empty) connection: A's credential stays A's.
    b.add_source(&SourceSpec {
        namespace: "up".to_owned(),
        transport: Transport::Http { url },
        slots: vec!["CANARY".to_owned()],
    });
    let own = b.execute(r#"return await up.env({name: "CANARY"})"#);
    answers.push(own.clone());
    assert!(
        own["result"].is_null() || own["status"] == json!("failed"),
        "B's call carried A's credential: {own}"
    );
    assert_ne!(
        b.resume(&a_runs[1])["status"],
        json!("awaiting_approval"),
        "with a source of the same name B still cannot resume A's run"
    );
    checks += 2;

    // The admin token acts on the tenant in the path, and only with the token.
    let (status, listed) = b.admin("GET", "runs", None);
    assert_eq!(status, 200, "{listed}");
    assert!(
        a_runs.iter().all(|run| !listed.contains(run.as_str())),
        "B's admin listing shows A's runs: {listed}"
    );
    answers.push(json!(listed));
    for (path, token) in [
        ("/t/acme/admin/runs", None),
        ("/t/acme/admin/runs", Some("wrong-token")),
        ("/t/beta%2F..%2Facme/admin/runs", Some(ADMIN_TOKEN)),
        ("/t/beta/admin/runs/../../acme", Some(ADMIN_TOKEN)),
        ("/t/beta/admin/load/acme", Some(ADMIN_TOKEN)),
        ("/t/acme/admin/runs?tenant=beta", None),
    ] {
        let (status, body) = b.http("GET", path, token, None);
        assert!(
            status != 200 || a_runs.iter().all(|run| !body.contains(run.as_str())),
            "{path} with {token:?}: HTTP {status}: {body}"
        );
        answers.push(json!(body));
        checks += 1;
    }
    let (status, body) = b.http("POST", "/t/acme/admin/load", None, Some(&json!({})));
    assert_eq!(status, 401, "a load without the token is refused: {body}");
    // B's load changed nothing of A's: A still finds its tool and its run still waits.
    let found = a.call("search", json!({"query": "environment variable"}));
    assert!(found.to_string().contains("up.env"), "A lost its source: {found}");
    assert_eq!(a.resume(&a_runs[1])["status"], json!("awaiting_approval"));
    assert!(
        !upstream.calls().iter().any(|c| c.starts_with("write")),
        "a write reached the upstream: {:?}",
        upstream.calls()
    );
    checks += 3;

    let seen: String = answers.iter().map(Value::to_string).collect::<Vec<_>>().join("\n");
    let leaked = leaks(seen.as_bytes());
    assert!(leaked.is_empty(), "B's answers hold A's canary as {leaked:?}");
    eprintln!("I5 {}: {checks} checks across two tenants, A's canary in none of B's answers", a.name());
}
on_each_target!(tenants_are_isolated);
