//! What an upstream tool call's result becomes inside the guest.
//!
//! MCP returns a `CallToolResult`: content blocks, optional structured content, and `isError`.
//! Code wants values, so structured content wins; otherwise text that parses as JSON becomes
//! that value, and other text stays a string. A result with `isError` becomes a `ToolError`.

use serde_json::Value;

use crate::record::ToolFailure;

/// Longest error text taken from an upstream's error result.
const MAX_ERROR_TEXT: usize = 2_000;

/// Converts a raw `CallToolResult` to the value the guest's promise resolves with.
pub fn tool_result_value(result: Value) -> Result<Value, ToolFailure> {
    let Value::Object(mut map) = result else {
        return Err(ToolFailure {
            code: "upstream_protocol".to_owned(),
            message: "the source answered a tool call with something other than an object".to_owned(),
            hint: None,
            status: None,
            retryable: false,
        });
    };
    let is_error = map.get("isError").and_then(Value::as_bool).unwrap_or(false);
    let content = map.remove("content").unwrap_or(Value::Array(Vec::new()));
    let texts: Option<Vec<String>> = content.as_array().map(|blocks| {
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str).map(str::to_owned))
            .collect()
    });
    let all_text = content
        .as_array()
        .is_some_and(|blocks| blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("text")));
    if is_error {
        let mut message = texts.map(|t| t.join("\n")).unwrap_or_default();
        if message.is_empty() {
            message = "the tool reported an error without a message".to_owned();
        }
        if message.len() > MAX_ERROR_TEXT {
            let mut end = MAX_ERROR_TEXT;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push('…');
        }
        return Err(ToolFailure {
            code: "tool_error".to_owned(),
            message,
            hint: None,
            status: None,
            retryable: false,
        });
    }
    if let Some(structured) = map.remove("structuredContent")
        && !structured.is_null()
    {
        return Ok(structured);
    }
    if all_text {
        let text = texts.unwrap_or_default().join("\n");
        let trimmed = text.trim_start();
        if trimmed.starts_with(['{', '['])
            && let Ok(value) = serde_json::from_str::<Value>(&text)
        {
            return Ok(value);
        }
        return Ok(Value::String(text));
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_become_values() {
        let cases = [
            json!({"content": [{"type": "text", "text": "{\"a\":1}"}]}),
            json!({"content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]}),
            json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"b": 2}}),
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
            json!({"content": [], "isError": true}),
            json!({"content": [{"type": "text", "text": "boom"}], "isError": true}),
            json!("nonsense"),
        ];
        let out: Vec<String> = cases
            .into_iter()
            .map(|c| match tool_result_value(c) {
                Ok(v) => format!("ok {v}"),
                Err(f) => format!("err {} {}", f.code, f.message),
            })
            .collect();
        expect_test::expect![[r#"
            [
                "ok {\"a\":1}",
                "ok \"hello\\nworld\"",
                "ok {\"b\":2}",
                "ok [{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]",
                "err tool_error the tool reported an error without a message",
                "err tool_error boom",
                "err upstream_protocol the source answered a tool call with something other than an object",
            ]
        "#]]
        .assert_debug_eq(&out);
    }
}
