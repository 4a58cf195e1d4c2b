//! Fuzz target: the scrubber on any secrets and any text.
//!
//! The property: after scrubbing, no stretch of text outside the `[secret]` markers holds a
//! secret long enough to be scrubbed, raw or in its hex or base64 forms — in plain text, in
//! serialised JSON and in a JSON value.

#![no_main]

use capabilities_core::scrub::{MARKER, MIN_SECRET_BYTES, ScrubError, Scrubber};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The forms checked: raw, hex in both cases, base64 padded and URL-safe unpadded.
fn forms(secret: &str) -> Vec<String> {
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    vec![
        secret.to_owned(),
        hex.to_uppercase(),
        hex,
        base64(secret.as_bytes(), true),
        base64(secret.as_bytes(), false),
    ]
}

/// Standard base64 padded, or URL-safe without padding.
fn base64(bytes: &[u8], standard: bool) -> String {
    let alphabet: &[u8; 64] = if standard {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    } else {
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    };
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[((n >> (18 - 6 * i)) & 63) as usize]));
        }
        if standard {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

fn assert_clean(out: &str, secrets: &[String], what: &str) {
    for piece in out.split(MARKER) {
        for secret in secrets {
            for form in forms(secret) {
                assert!(!piece.contains(&form), "{what}: a form of secret {secret:?} survived in {out:?}");
            }
        }
    }
}

fuzz_target!(|input: (Vec<String>, String)| {
    let (secrets, text) = input;
    let secrets: Vec<String> = secrets.into_iter().take(8).collect();
    let scrubber = match Scrubber::new(&secrets) {
        Ok(scrubber) => scrubber,
        Err(ScrubError::TooShort { position, len }) => {
            assert!(len < MIN_SECRET_BYTES && secrets[position - 1].len() == len);
            return;
        }
        Err(err) => {
            let _ = err.to_string();
            return;
        }
    };
    assert_eq!(scrubber.secrets(), secrets.len());
    assert_clean(&scrubber.scrub_str(&text), &secrets, "scrub_str");
    // The same text as a JSON string, and any JSON the text holds.
    let mut value = Value::String(text.clone());
    scrubber.scrub_json(&mut value);
    assert_clean(value.as_str().unwrap_or_default(), &secrets, "scrub_json");
    let literal = Value::String(text.clone()).to_string();
    let scrubbed = scrubber.scrub_json_text(&literal);
    let back: Value = serde_json::from_str(&scrubbed).expect("scrubbed JSON stays JSON");
    assert_clean(back.as_str().unwrap_or_default(), &secrets, "scrub_json_text");
    if let Ok(parsed) = serde_json::from_str::<Value>(&text) {
        let scrubbed = scrubber.scrub_json_text(&text);
        assert!(serde_json::from_str::<Value>(&scrubbed).is_ok(), "scrubbed JSON stays JSON: {scrubbed:?}");
        let mut value = parsed;
        scrubber.scrub_json(&mut value);
        let _ = value.to_string();
    }
});
