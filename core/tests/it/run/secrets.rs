//! Secrets and connections: a credential the upstream echoes never reaches the guest, the
//! journal, the logs or the envelope, in any form; code picks a connection by name.

use expect_test::expect;

use super::{Hub, PERSONAL_SECRET, WORK_SECRET, pretty, render};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// Every form of `secret` a leak could take here.
fn assert_no_secret(what: &str, text: &str, secret: &str) {
    for form in [secret.to_owned(), STANDARD.encode(secret), STANDARD.encode(format!("Bearer {secret}"))] {
        assert!(!text.contains(&form), "{what} holds `{form}`:\n{text}");
    }
}

#[test]
fn an_echoed_credential_is_scrubbed_everywhere() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"const me = await chat.whoami();
           console.log(me);
           console.log(me.token, me.base64, JSON.stringify(me));
           return { me, length: me.token.length, again: btoa(me.token) }"#,
    );
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "completed",
          "result": {
            "me": {
              "connection": "work",
              "token": "[secret]",
              "base64": "[secret]",
              "basic": "QmVhcmVyIH[secret]Q==",
              "byToken": {
                "[secret]": "me"
              }
            },
            "length": 8,
            "again": "W3NlY3JldF0="
          },
          "logs": [
            "{ connection: \"work\", token: \"[secret]\", base64: \"[secret]\", basic: \"QmVhcmVyIH[secret]Q==\", byToken: { \"[secret]\": \"me\" } }",
            "[secret] [secret] {\"connection\":\"work\",\"token\":\"[secret]\",\"base64\":\"[secret]\",\"basic\":\"QmVhcmVyIH[secret]Q==\",\"byToken\":{\"[secret]\":\"me\"}}"
          ],
          "calls": [
            {
              "address": "chat.whoami",
              "ok": true,
              "ms": 0
            }
          ]
        }"#]]
    .assert_eq(&pretty(&envelope));
    assert_no_secret("the envelope", &envelope.to_line(), WORK_SECRET);
    assert_no_secret("the journal", &hub.journal_text(&envelope.run_id), WORK_SECRET);
    let record = serde_json::to_string(&hub.run(&envelope.run_id)).unwrap();
    assert_no_secret("the run record", &record, WORK_SECRET);
}

#[test]
fn a_credential_in_an_error_message_is_scrubbed() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"const me = await chat.whoami();
           throw new Error("token was " + me.token)"#,
    );
    assert_eq!(envelope.status, "failed");
    assert_no_secret("the envelope", &envelope.to_line(), WORK_SECRET);
}

#[test]
fn code_picks_a_connection_by_name() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"const a = await chat.whoami();
           const b = await chat.whoami({}, { connection: "personal" });
           const c = await chat.whoami({}, { connection: "work" });
           return [a.connection, b.connection, c.connection, b.token]"#,
    );
    expect![[r#"completed ["work","personal","work","[secret]"]"#]].assert_eq(&render(&envelope));
    assert_no_secret("the envelope", &envelope.to_line(), PERSONAL_SECRET);
    let connections: Vec<Option<String>> = hub
        .journal(&envelope.run_id)
        .into_iter()
        .filter_map(|e| match e {
            capabilities_core::record::JournalEntry::Call { connection, .. } => Some(connection),
            _ => None,
        })
        .collect();
    assert_eq!(connections, [Some("work".into()), Some("personal".into()), Some("work".into())]);
}

#[test]
fn an_unknown_connection_is_a_tool_error() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"try { await chat.whoami({}, { connection: "home" }) } catch (e) { return [e.name, e.code, e.message, e.hint] }"#,
    );
    expect![[r#"completed ["ToolError","unknown_connection","`chat` has no connection named `home`","known connections: work, personal, spare"]"#]]
        .assert_eq(&render(&envelope));
    assert_eq!(hub.upstream.count(), 0);
    assert_eq!(hub.secrets.resolved.load(std::sync::atomic::Ordering::SeqCst), 0);
    expect![[r#"completed "bad_options""#]].assert_eq(&render(
        &hub.execute(r#"return await chat.whoami({}, { connection: 7 }).catch((e) => e.code)"#),
    ));
}

#[test]
fn a_connection_without_a_credential_waits_for_one() {
    let mut hub = Hub::new();
    let paused = hub.execute(r#"return (await chat.whoami({}, { connection: "spare" })).connection"#);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "awaiting_connection",
          "calls": [],
          "pending": [
            {
              "id": "p_3f75dd7e2868",
              "kind": "connection",
              "address": "chat.whoami",
              "summary": "Says which account the connection uses.",
              "message": "connection `spare` needs TOKEN; run `capabilities hub auth chat --connection spare`. Tell the user, then call execute with {\"resume\": \"run_157d487cbd7c3199\"}. Never ask for the credential in chat."
            }
          ]
        }"#]]
    .assert_eq(&pretty(&paused));
    // Without the credential a resume asks again; nothing went upstream.
    assert_eq!(hub.resume(&paused.run_id).status, "awaiting_connection");
    assert_eq!(hub.upstream.count(), 0);
    // A person enters it (`hub auth`), then resume continues.
    hub.secrets
        .table
        .insert(("chat".into(), "spare".into()), vec![("TOKEN".into(), "sk-spare-00aa11bb".into())]);
    expect![[r#"completed "spare""#]].assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 1);
}

#[test]
fn a_credential_in_a_key_or_an_error_text_is_scrubbed_before_the_guest_sees_it() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"const me = await chat.whoami();
           const failed = await chat.whoami({ fail: true }).catch((e) => [e.code, e.message]);
           return { keys: Object.keys(me.byToken), failed }"#,
    );
    expect![[
        r#"completed {"keys":["[secret]"],"failed":["tool_error","chat.whoami: token [secret] expired"]}"#
    ]]
    .assert_eq(&render(&envelope));
    assert_no_secret("the journal", &hub.journal_text(&envelope.run_id), WORK_SECRET);
}

#[test]
fn a_credential_too_short_to_scrub_never_leaves() {
    let mut hub = Hub::new();
    hub.secrets.table.insert(("chat".into(), "work".into()), vec![("TOKEN".into(), "abc".into())]);
    let envelope =
        hub.execute(r#"try { return await chat.whoami() } catch (e) { return [e.code, e.message] }"#);
    expect![[r#"completed ["credential_unusable","a credential of `chat` cannot be kept out of results: secret number 1 is 3 bytes long, and secrets need at least 4: a shorter one would blank out ordinary text, so check the value the connection points at"]"#]]
        .assert_eq(&render(&envelope));
    assert_eq!(hub.upstream.count(), 0, "nothing went upstream");
}

/// `chat.whoami` that takes only `good` as its token, as a source that answers 401.
fn takes_only(good: &'static str) -> capabilities_core::fakes::FakeUpstream {
    use capabilities_core::ports::UpstreamError;
    capabilities_core::fakes::FakeUpstream::default().with(
        "chat",
        "whoami",
        Box::new(move |_, credentials| {
            if credentials.values.iter().any(|(_, v)| v == good) {
                Ok(serde_json::json!({ "content": [{ "type": "text", "text": "hello" }] }))
            } else {
                Err(UpstreamError::Unauthorized {
                    message: "the source answered HTTP 401".into(),
                    challenge: Some(r#"Bearer error="invalid_token""#.into()),
                })
            }
        }),
    )
}

#[test]
fn a_refused_credential_gets_one_more_try_with_what_the_connection_has_now() {
    let mut hub = Hub::new();
    const FRESH: &str = "sk-work-fresh-7788";
    hub.upstream = takes_only(FRESH);
    hub.secrets.refreshed.insert(("chat".into(), "work".into()), vec![("TOKEN".into(), FRESH.into())]);
    let envelope = hub.execute("return await chat.whoami({})");
    assert_eq!(envelope.status, "completed", "{}", pretty(&envelope));
    assert_eq!(hub.upstream.count(), 2, "the refused call is sent once more, no more");
    assert_eq!(*hub.secrets.rejections.lock().unwrap(), [Some(r#"Bearer error="invalid_token""#.to_owned())]);
    // One intent and one outcome in the journal: the refused attempt did nothing upstream.
    let journal = hub.store.journal(&envelope.run_id);
    assert_eq!(journal.len(), 2, "{journal:?}");
    assert_no_secret("the envelope", &render(&envelope), FRESH);
}

#[test]
fn a_credential_refused_again_fails_with_auth_required_naming_the_sign_in() {
    let mut hub = Hub::new();
    hub.upstream = takes_only("nothing-the-hub-has");
    hub.secrets
        .refreshed
        .insert(("chat".into(), "work".into()), vec![("TOKEN".into(), "sk-still-wrong-11".into())]);
    let envelope = hub.execute(
        "try { await chat.whoami({}) } catch (e) { return { code: e.code, hint: e.hint, retryable: e.retryable } }",
    );
    assert_eq!(hub.upstream.count(), 2, "one retry, never a loop");
    expect![[r#"
        {
          "code": "auth_required",
          "hint": "tell the user to run `capabilities hub auth chat --connection work`; retrying before that fails the same way",
          "retryable": false
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&envelope.result).unwrap());
    assert_no_secret("the envelope", &render(&envelope), "sk-still-wrong-11");

    // Nothing better to offer: the first refusal is the answer.
    let mut hub = Hub::new();
    hub.upstream = takes_only("nothing-the-hub-has");
    let envelope = hub.execute("try { await chat.whoami({}) } catch (e) { return e.code }");
    assert_eq!(envelope.result, Some(serde_json::json!("auth_required")));
    assert_eq!(hub.upstream.count(), 1);
}
