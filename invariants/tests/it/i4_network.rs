//! I4: the sandbox has no network, and an upstream's credentials never follow a redirect to
//! another origin.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use capabilities_invariants::{Home, Kind, repo, sdk_dir};
use serde_json::{Value, json};

use crate::support::on_each_target;

fn sandbox_has_no_network(kind: Kind) {
    // A loopback listener counts every connection anything makes to it.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let url = format!("http://127.0.0.1:{port}/x.js");
    let mut target = kind.start(Home::new());
    let absent = target.execute(
        "return ['fetch','XMLHttpRequest','WebSocket','EventSource','Request','navigator','require','process',\
         'Deno','Bun','Worker','importScripts','module','__dirname']\
         .filter(n => typeof globalThis[n] !== 'undefined')",
    );
    assert_eq!(absent["result"], json!([]), "{}: network-capable globals: {absent}", target.name());
    let attempts = [
        format!("return await fetch('{url}')"),
        format!("const x = new XMLHttpRequest(); x.open('GET', '{url}'); x.send(); return 1"),
        format!("return new WebSocket('ws://127.0.0.1:{port}/')"),
        format!("return await import('{url}')"),
        "return await import('node:net')".to_owned(),
        "return await import('node:http')".to_owned(),
        "return await import('./x.js')".to_owned(),
        "return require('http')".to_owned(),
        "return process.binding('tcp_wrap')".to_owned(),
        format!("return Deno.connect({{port: {port}}})"),
        format!("return Bun.connect({{hostname: '127.0.0.1', port: {port}}})"),
        format!("return (0, eval)('fetch')('{url}')"),
        format!("return Function('return fetch')()('{url}')"),
        format!("return new Worker('{url}')"),
        format!("return importScripts('{url}')"),
    ];
    for code in &attempts {
        let envelope = target.execute(code);
        assert_eq!(
            envelope["status"],
            json!("failed"),
            "{}: `{code}` did not fail: {envelope}",
            target.name()
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(connections.load(Ordering::SeqCst), 0, "{}: the sandbox reached the network", target.name());
    eprintln!("I4 {}: {} network paths tried", target.name(), attempts.len() + 15);
}
on_each_target!(sandbox_has_no_network);

/// `hub add` and a run against an HTTP source whose URL answers 307 to another origin: the
/// other origin never sees the credential.
#[test]
fn credentials_never_follow_a_cross_origin_redirect() {
    let mut server = Command::new("node")
        .arg(repo().join("invariants/tests/fixtures/upstream.mjs"))
        .arg("http")
        .env("MCP_SDK_DIR", sdk_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let ports: Value = serde_json::from_str(&line).unwrap();
    let (port, other) = (ports["port"].as_u64().unwrap(), ports["other"].as_u64().unwrap());
    let secret = "redirect-canary-7f3a9c2e1d";

    let home = Home::new();
    let url = format!("http://127.0.0.1:{port}/redirect");
    let added = home
        .command(&[
            "hub",
            "add",
            "--yes",
            "--no-input",
            "--namespace",
            "red",
            "--header",
            "Authorization",
            &url,
        ])
        .env("AUTHORIZATION", secret)
        .output()
        .unwrap();
    eprintln!("I4 redirect: hub add exited {}: {}", added.status, String::from_utf8_lossy(&added.stderr));
    let said = String::from_utf8_lossy(&added.stderr);
    assert!(added.status.success() || said.contains("307"), "the source's URL was reached: {said}");
    if added.status.success() {
        let mut target = Kind::Stdio.start(home);
        target.execute("return await red.env({name: 'HOME'})");
        target.cli(&["auth", "red", "--stdin"], Some(&format!("{secret}\n")));
        target.execute("return await red.env({name: 'HOME'})");
    }
    let seen = reqwest_get(other as u16);
    let _ = server.kill();
    let _ = server.wait();
    assert!(!seen.contains(secret), "the other origin received the credential: {seen}");
    assert!(
        !seen.to_lowercase().contains("authorization"),
        "the other origin received an Authorization header: {seen}"
    );
}

fn reqwest_get(port: u16) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("localhost", port)).unwrap();
    write!(stream, "GET /seen HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default()
}
