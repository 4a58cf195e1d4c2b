//! Canonical JSON in the style of RFC 8785 (JCS): object members sorted by their UTF-16 code
//! units, no insignificant whitespace, minimal string escapes, numbers in ECMAScript form.
//!
//! Two documents that differ only in key order or whitespace serialise to the same bytes, which
//! is what makes a contract digest stable across servers and refreshes.

use serde_json::Value;

/// Serialises `value` canonically.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

/// Appends `value`, serialised canonically, to `out`.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&es_number(f));
    } else {
        out.push_str(&n.to_string());
    }
}

/// ECMAScript `Number.prototype.toString` for finite doubles (JSON has no others).
fn es_number(f: f64) -> String {
    if f == 0.0 {
        return "0".to_owned();
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        return format!("{f:.0}");
    }
    // Shortest round-trip digits and exponent, then laid out as ECMAScript does.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    let sign = if f < 0.0 { "-" } else { "" };
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let e_sign = if e >= 0 { "+" } else { "-" };
        if k == 1 {
            format!("{digits}e{e_sign}{}", e.abs())
        } else {
            format!("{}.{}e{e_sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    format!("{sign}{body}")
}

/// Appends `s` as a canonical JSON string to `out`.
pub fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{0C}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_and_whitespace_never_matter() {
        let a: Value =
            serde_json::from_str(r#"{ "b": 1, "a": [ true, null, {"y":"\u00e9","x":2} ] }"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":[true,null,{"x":2,"y":"é"}],"b":1}"#).unwrap();
        assert_eq!(to_string(&a), to_string(&b));
        expect![[r#"{"a":[true,null,{"x":2,"y":"é"}],"b":1}"#]].assert_eq(&to_string(&a));
    }

    #[test]
    fn sorts_by_utf16_code_units() {
        // U+1F600 (surrogates D83D DE00) sorts before U+FB01 in UTF-16, after it in UTF-8.
        let v = json!({"\u{fb01}": 1, "\u{1f600}": 2, "a": 3});
        expect![[r#"{"a":3,"😀":2,"ﬁ":1}"#]].assert_eq(&to_string(&v));
    }

    #[test]
    fn numbers_and_escapes() {
        let v = json!([0.0, -0.0, 1.0, 1.5, 1e21, 1e-7, 123456789012.0, 0.000001, -2.5e-10, "\u{1}\n\"\\"]);
        expect![[r#"[0,0,1,1.5,1e+21,1e-7,123456789012,0.000001,-2.5e-10,"\u0001\n\"\\"]"#]]
            .assert_eq(&to_string(&v));
    }
}
