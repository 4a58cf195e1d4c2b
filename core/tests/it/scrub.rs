//! Secret scrubbing: each encoded form, JSON escapes, secrets inside longer base64 blobs, no
//! false positives, and a property test that plants secrets in every form.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use capabilities_core::scrub::{MARKER, Scrubber};
use expect_test::{Expect, expect};
use proptest::prelude::*;
use serde_json::{Value, json};

const TOKEN: &str = "ghp_x9Zq/Lm+2Kd8";

fn check(secrets: &[&str], text: &str, expect: Expect) {
    let scrubber = Scrubber::new(secrets).unwrap();
    expect.assert_eq(&scrubber.scrub_str(text));
}

fn check_json_text(secrets: &[&str], text: &str, expect: Expect) {
    let scrubber = Scrubber::new(secrets).unwrap();
    let out = scrubber.scrub_json_text(text);
    serde_json::from_str::<Value>(&out).expect("scrubbed JSON text stays valid JSON");
    expect.assert_eq(&out);
}

#[test]
fn each_form_of_a_secret_goes() {
    let bytes = TOKEN.as_bytes();
    let forms = [
        ("raw", TOKEN.to_owned()),
        ("base64", STANDARD.encode(bytes)),
        ("base64 unpadded", STANDARD_NO_PAD.encode(bytes)),
        ("base64url", URL_SAFE.encode(bytes)),
        ("base64url unpadded", URL_SAFE_NO_PAD.encode(bytes)),
        ("percent", "ghp_x9Zq%2FLm%2B2Kd8".to_owned()),
        ("percent lower", "ghp_x9Zq%2fLm%2b2Kd8".to_owned()),
        ("hex", hex::encode(bytes)),
        ("HEX", hex::encode_upper(bytes)),
    ];
    let text: String = forms.iter().map(|(name, form)| format!("{name}: <{form}>\n")).collect();
    check(
        &[TOKEN],
        &text,
        expect![[r#"
            raw: <[secret]>
            base64: <[secret]>
            base64 unpadded: <[secret]>
            base64url: <[secret]>
            base64url unpadded: <[secret]>
            percent: <[secret]>
            percent lower: <[secret]>
            hex: <[secret]>
            HEX: <[secret]>
        "#]],
    );
}

#[test]
fn percent_forms_with_spaces_and_reserved_bytes() {
    let secret = "pass word!(é)";
    check(
        &[secret],
        "q=pass%20word%21%28%C3%A9%29 form=pass+word%21%28%c3%a9%29 js=pass%20word!(%C3%A9) all=%70%61%73%73%20%77%6F%72%64%21%28%C3%A9%29",
        expect!["q=[secret] form=[secret] js=[secret] all=[secret]"],
    );
}

#[test]
fn a_secret_inside_a_longer_base64_blob_at_each_alignment() {
    let mut out = String::new();
    for prefix in ["Bearer ", "Basic user:", "x:", ""] {
        for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
            let blob = engine.encode(format!("{prefix}{TOKEN}?tail"));
            let scrubbed = Scrubber::new([TOKEN]).unwrap().scrub_str(&blob).into_owned();
            out.push_str(&format!("{:<14} {}\n", format!("{prefix:?}"), scrubbed));
        }
    }
    // At most one character on each side of the marker mixes secret bits with other bytes.
    expect![[r#"
        "Bearer "      QmVhcmVyIG[secret]g/dGFpbA==
        "Bearer "      QmVhcmVyIG[secret]g_dGFpbA
        "Basic user:"  QmFzaWMgdXNlcjp[secret]P3RhaWw=
        "Basic user:"  QmFzaWMgdXNlcjp[secret]P3RhaWw
        "x:"           eDp[secret]P3RhaWw=
        "x:"           eDp[secret]P3RhaWw
        ""             [secret]D90YWls
        ""             [secret]D90YWls
    "#]]
    .assert_eq(&out);
}

#[test]
fn json_escaped_forms_go_and_the_json_stays_valid() {
    let secret = r#"s3"cr\et/é</"#;
    let serde =
        serde_json::to_string(&json!({ "echo": secret, "auth": format!("Bearer {secret}") })).unwrap();
    let texts = [
        serde.clone(),
        serde.replace('/', "\\/"),
        r#"{"echo":"s3\"cr\\et\/\u00E9\u003C\/","auth":"Bearer s3\"cr\\et/\u00e9</"}"#.to_owned(),
    ];
    let scrubber = Scrubber::new([secret]).unwrap();
    let out: String = texts
        .iter()
        .map(|text| {
            let scrubbed = scrubber.scrub_json_text(text);
            serde_json::from_str::<Value>(&scrubbed).expect("scrubbed JSON text stays valid JSON");
            format!("{text}\n  -> {scrubbed}\n")
        })
        .collect();
    expect![[r#"
        {"echo":"s3\"cr\\et/é</","auth":"Bearer s3\"cr\\et/é</"}
          -> {"echo":"[secret]","auth":"Bearer [secret]"}
        {"echo":"s3\"cr\\et\/é<\/","auth":"Bearer s3\"cr\\et\/é<\/"}
          -> {"echo":"[secret]","auth":"Bearer [secret]"}
        {"echo":"s3\"cr\\et\/\u00E9\u003C\/","auth":"Bearer s3\"cr\\et/\u00e9</"}
          -> {"echo":"[secret]","auth":"Bearer [secret]"}
    "#]]
    .assert_eq(&out);
}

#[test]
fn a_match_inside_an_escape_grows_to_cover_it() {
    // "nabcd" appears in the text only across the `\n` escape; the match grows to the backslash.
    check_json_text(&["nabcd"], r#"{"a":"x\nabcdy"}"#, expect![[r#"{"a":"x[secret]y"}"#]]);
    check_json_text(&["0e9abc"], r#"{"a":"\u00e9abc!"}"#, expect![[r#"{"a":"[secret]!"}"#]]);
}

#[test]
fn a_secret_with_a_quote_never_takes_the_string_delimiter() {
    // Fuzz crash `scrub-crash-019e0517`: the raw secret `"gehe` matched across the opening
    // quote of the string `gehe`, and `"gehe"` came back as `[secret]"`.
    check_json_text(&["\"gehe"], r#""gehe""#, expect![[r#""gehe""#]]);
    check_json_text(&["\"gehe"], r#"["gehe","x\"gehe"]"#, expect![[r#"["gehe","x[secret]"]"#]]);
    check_json_text(&["gehe\""], r#"{"gehe":"gehe\"!"}"#, expect![[r#"{"gehe":"[secret]!"}"#]]);
    // Nor commas, colons or brackets: only the contents of strings are searched.
    check_json_text(&["a\",\"b"], r#"["a","b","a\",\"b"]"#, expect![[r#"["a","b","[secret]"]"#]]);
    check_json_text(&["1, 2"], "[1, 2]", expect!["[1, 2]"]);
}

#[test]
fn a_number_holding_a_secret_becomes_a_string_in_json_text() {
    check_json_text(
        &["12345678"],
        r#"{"n":12345678,"m":-123456789,"k":1234,"s":"12345678","t":true}"#,
        expect![[r#"{"n":"[secret]","m":"-[secret]9","k":1234,"s":"[secret]","t":true}"#]],
    );
}

#[test]
fn text_that_is_not_json_is_scrubbed_whole() {
    let scrubber = Scrubber::new(["\"gehe"]).unwrap();
    // An unterminated string, and a bare word: not JSON, so every form goes wherever it is.
    expect![[r#"{"a":"[secret]"#]].assert_eq(&scrubber.scrub_json_text(r#"{"a":"\"gehe"#));
    expect!["token [secret]!"].assert_eq(&scrubber.scrub_json_text(r#"token "gehe!"#));
}

#[test]
fn scrub_json_walks_values_keys_and_numbers() {
    let scrubber = Scrubber::new([TOKEN, "12345678"]).unwrap();
    let mut value = json!({
        "headers": { TOKEN: "as a key", "authorization": format!("token {TOKEN}") },
        "list": [TOKEN, 12345678, 1234, true, null],
        "other": { format!("{TOKEN}!"): 1, format!("{TOKEN}?"): 2 },
    });
    scrubber.scrub_json(&mut value);
    expect![[r#"
        {
          "headers": {
            "[secret]": "as a key",
            "authorization": "token [secret]"
          },
          "list": [
            "[secret]",
            "[secret]",
            1234,
            true,
            null
          ],
          "other": {
            "[secret]!": 1,
            "[secret]?": 2
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&value).unwrap());
}

#[test]
fn colliding_keys_keep_their_values() {
    let scrubber = Scrubber::new(["alpha-secret", "beta-secret"]).unwrap();
    let mut value = json!({ "alpha-secret": 1, "beta-secret": 2 });
    scrubber.scrub_json(&mut value);
    expect![[r#"{"[secret]":1,"[secret] (2)":2}"#]].assert_eq(&value.to_string());
}

#[test]
fn overlapping_matches_merge() {
    check(
        &["abcdefgh", "efghijkl"],
        "0abcdefghijkl1 abcdefgh efghijkl",
        expect!["0[secret]1 [secret] [secret]"],
    );
    check(&["secret-one", "one-two"], "secret-one-two", expect!["[secret]"]);
    // A chain of overlaps longer than any form still ends up as one span.
    check(&["abab"], "xababababababababababy abab", expect!["x[secret]y [secret]"]);
}

#[test]
fn unrelated_text_is_left_alone() {
    let scrubber = Scrubber::new(["sk-live-7Hq2Zp9Lx4", "hunter2hunter2", "Tr0ub4dor&3"]).unwrap();
    let samples = [
        "The quick brown fox jumps over the lazy dog.",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
        "https://example.com/search?q=hunter%202&page=2",
        "deadbeefcafebabe0123456789abcdef",
        include_str!("../data/tools/github.json"),
    ];
    for sample in samples {
        assert!(matches!(scrubber.scrub_str(sample), std::borrow::Cow::Borrowed(_)), "changed: {sample:.60}");
        assert!(
            matches!(scrubber.scrub_json_text(sample), std::borrow::Cow::Borrowed(_)),
            "changed: {sample:.60}"
        );
    }
}

#[test]
fn short_secrets_are_refused_without_showing_them() {
    let err = Scrubber::new(["long-enough", "abc"]).unwrap_err().to_string();
    assert!(!err.contains("abc"));
    expect!["secret number 2 is 3 bytes long, and secrets need at least 4: a shorter one would blank out ordinary text, so check the value the connection points at"]
        .assert_eq(&err);
    assert_eq!(Scrubber::new(Vec::<String>::new()).unwrap().scrub_str("anything"), "anything");
}

// ---- property: a planted secret never survives, in any form ----

/// The secret encoded the ways the property plants it.
fn plant_forms(secret: &str, pre: &[u8], post: &[u8]) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut blob = pre.to_vec();
    blob.extend_from_slice(bytes);
    blob.extend_from_slice(post);
    let pct = |upper: bool, plus: bool| -> String {
        bytes
            .iter()
            .map(|&b| match b {
                b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => char::from(b).to_string(),
                b' ' if plus => "+".to_owned(),
                b if upper => format!("%{b:02X}"),
                b => format!("%{b:02x}"),
            })
            .collect()
    };
    vec![
        secret.to_owned(),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        STANDARD.encode(&blob),
        URL_SAFE_NO_PAD.encode(&blob),
        pct(true, false),
        pct(false, true),
        hex::encode(bytes),
        hex::encode_upper(bytes),
    ]
}

/// Decodings of every run of base64, hex and percent-encoded text in `text`, at every
/// alignment, plus the text itself.
fn decodings(text: &str) -> Vec<Vec<u8>> {
    let mut out = vec![text.as_bytes().to_vec()];
    let runs = |is: fn(&u8) -> bool| -> Vec<Vec<u8>> {
        text.as_bytes().split(|b| !is(b)).filter(|r| !r.is_empty()).map(<[u8]>::to_vec).collect()
    };
    for run in runs(|b| b.is_ascii_alphanumeric() || b"+/-_".contains(b)) {
        let std_run: Vec<u8> = run
            .iter()
            .map(|&b| {
                if b == b'-' {
                    b'+'
                } else if b == b'_' {
                    b'/'
                } else {
                    b
                }
            })
            .collect();
        for skip in 0..4.min(std_run.len()) {
            let body = &std_run[skip..];
            let body = &body[..body.len() / 4 * 4];
            if let Ok(decoded) = STANDARD_NO_PAD.decode(body) {
                out.push(decoded);
            }
        }
    }
    for run in runs(u8::is_ascii_hexdigit) {
        for skip in 0..2.min(run.len()) {
            let body = &run[skip..];
            if let Ok(decoded) = hex::decode(&body[..body.len() / 2 * 2]) {
                out.push(decoded);
            }
        }
    }
    for plus in [false, true] {
        let bytes = text.as_bytes();
        let mut decoded = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
                (b'%', Some(b)) => {
                    decoded.push(b);
                    i += 3;
                    continue;
                }
                (b'+', _) if plus => decoded.push(b' '),
                (b, _) => decoded.push(b),
            }
            i += 1;
        }
        out.push(decoded);
    }
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// No piece of `scrubbed` between markers decodes, in any form, to something holding `secret`.
fn assert_gone(secret: &str, scrubbed: &str) -> Result<(), TestCaseError> {
    for piece in scrubbed.split(MARKER) {
        for decoded in decodings(piece) {
            prop_assert!(!contains(&decoded, secret.as_bytes()), "secret left in {piece:?}");
        }
    }
    Ok(())
}

fn secret() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{4,24}", "(?s).{2,10}"].prop_filter("secrets have at least 4 bytes", |s| s.len() >= 4)
}

fn filler() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{0,24}", "(?s).{0,12}"]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn planted_secrets_never_survive(
        secret in secret(),
        before in filler(),
        after in filler(),
        pre in proptest::collection::vec(any::<u8>(), 0..5),
        post in proptest::collection::vec(any::<u8>(), 0..5),
    ) {
        let scrubber = Scrubber::new([&secret]).unwrap();
        for form in plant_forms(&secret, &pre, &post) {
            let text = format!("{before}{form}{after}");
            assert_gone(&secret, &scrubber.scrub_str(&text))?;

            let doc = json!({ "text": text, &form: [form.clone()] });
            let mut value = doc.clone();
            scrubber.scrub_json(&mut value);
            for s in strings(&value) {
                assert_gone(&secret, &s)?;
            }
            let serde_text = serde_json::to_string(&doc).unwrap();
            for json_text in [serde_text.clone(), serde_text.replace('/', "\\/"), ascii_json(&doc)] {
                let scrubbed = scrubber.scrub_json_text(&json_text);
                let parsed: Value = serde_json::from_str(&scrubbed)
                    .map_err(|e| TestCaseError::fail(format!("invalid JSON after scrubbing: {e}")))?;
                for s in strings(&parsed) {
                    assert_gone(&secret, &s)?;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A two-letter alphabet makes secrets overlap each other and themselves all the time.
    #[test]
    fn overlapping_secrets_never_survive(a in "[ab]{4,7}", b in "[ab]{4,7}", text in "[ab ]{0,80}") {
        let scrubbed = Scrubber::new([&a, &b]).unwrap().scrub_str(&text).into_owned();
        for piece in scrubbed.split(MARKER) {
            prop_assert!(!piece.contains(&a) && !piece.contains(&b), "{piece:?} in {scrubbed:?}");
        }
    }
}

/// Every string in a JSON value, keys included.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        Value::Object(map) => {
            map.iter().flat_map(|(k, v)| std::iter::once(k.clone()).chain(strings(v))).collect()
        }
        _ => Vec::new(),
    }
}

/// JSON text with every non-ASCII character escaped, as Python writes it by default.
fn ascii_json(value: &Value) -> String {
    serde_json::to_string(value)
        .unwrap()
        .chars()
        .flat_map(|c| {
            if c.is_ascii() {
                vec![c.to_string()]
            } else {
                let mut units = [0u16; 2];
                c.encode_utf16(&mut units).iter().map(|u| format!("\\u{u:04x}")).collect()
            }
        })
        .collect()
}
