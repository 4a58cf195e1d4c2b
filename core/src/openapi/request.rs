//! A call's arguments → the HTTP request of its operation.
//!
//! Path parameters are percent-encoded with every reserved character, dots and slashes
//! included, and a value that is or holds a `.`/`..` segment is refused, so the request's path
//! stays under the base URL however the server decodes it. Query parameters follow their style
//! (form, space- and pipe-delimited, deepObject) and `explode`. Header values may not hold line
//! breaks. The credential goes only on operations that take it, and only where the source says.

use std::fmt::Write as _;

use base64::Engine as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::{
    BodyShape, HttpApi, HttpAuth, HttpBody, HttpOperation, HttpParameter, ParameterLocation, ParameterStyle,
};

/// A request ready to send. Its URL is under the source's base URL.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub url: String,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl std::fmt::Debug for HttpRequest {
    /// Header values and the URL's query may carry the credential; neither is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpRequest")
            .field("method", &self.method)
            .field("path", &self.url.split('?').next().unwrap_or_default())
            .field("headers", &names)
            .field("body_bytes", &self.body.as_ref().map(Vec::len))
            .finish()
    }
}

/// Why a call could not become a request. Nothing was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    #[error("the arguments are {0}, not an object")]
    NotAnObject(&'static str),
    #[error("path parameter `{0}` is missing")]
    MissingPath(String),
    #[error("path parameter `{0}` may not be empty, `.` or `..`, nor hold a `.` or `..` segment")]
    Traversal(String),
    #[error("parameter `{0}` may not hold a line break")]
    LineBreak(String),
    #[error("parameter `{name}` is {kind}, which a {location} parameter cannot carry")]
    Unsupported { name: String, kind: &'static str, location: &'static str },
    #[error("the operation's base URL `{0}` is not an http(s) URL")]
    BadBase(String),
}

/// Builds the request for one call. `credential` is the connection's value, sent only when the
/// operation is authenticated and the source says how.
pub fn build(
    api: &HttpApi,
    operation: &HttpOperation,
    arguments: &Value,
    credential: Option<&str>,
) -> Result<HttpRequest, RequestError> {
    let args = match arguments {
        Value::Object(map) => map,
        Value::Null => &Map::new(),
        other => return Err(RequestError::NotAnObject(crate::manifest::json_kind(other))),
    };
    let base = api.base_url.trim_end_matches('/');
    if !(base.starts_with("https://") || base.starts_with("http://")) {
        return Err(RequestError::BadBase(api.base_url.clone()));
    }
    let path = fill_path(&operation.path, &operation.parameters, args)?;
    let mut query = form_urlencoded::Serializer::new(String::new());
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut cookies: Vec<String> = Vec::new();
    for parameter in &operation.parameters {
        let Some(value) = args.get(&parameter.argument).filter(|v| !v.is_null()) else { continue };
        match parameter.location {
            ParameterLocation::Path => {}
            ParameterLocation::Query => add_query(&mut query, parameter, value)?,
            ParameterLocation::Header => {
                let text = simple(parameter, value, parameter.effective_explode())?;
                if text.contains(['\r', '\n', '\0']) {
                    return Err(RequestError::LineBreak(parameter.argument.clone()));
                }
                headers.push((parameter.name.to_ascii_lowercase(), text));
            }
            ParameterLocation::Cookie => {
                let text = simple(parameter, value, false)?;
                if text.contains(['\r', '\n', '\0', ';']) {
                    return Err(RequestError::LineBreak(parameter.argument.clone()));
                }
                cookies.push(format!("{}={}", parameter.name, text));
            }
        }
    }
    if operation.authenticated
        && let (Some(auth), Some(value)) = (&api.auth, credential)
    {
        match auth {
            HttpAuth::Header { name, prefix } => {
                headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
                headers.push((name.to_ascii_lowercase(), format!("{prefix}{value}")));
            }
            HttpAuth::Query { name } => {
                query.append_pair(name, value);
            }
            HttpAuth::Cookie { name } => cookies.push(format!("{name}={value}")),
            HttpAuth::Basic => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
                headers.retain(|(n, _)| n != "authorization");
                headers.push(("authorization".to_owned(), format!("Basic {encoded}")));
            }
        }
    }
    if !cookies.is_empty() {
        headers.push(("cookie".to_owned(), cookies.join("; ")));
    }
    let mut body = None;
    if let Some(spec) = &operation.body {
        if let Some((bytes, content_type)) = encode_body(spec, args) {
            headers.push(("content-type".to_owned(), content_type));
            body = Some(bytes);
        }
    }
    if !headers.iter().any(|(n, _)| n == "accept") {
        headers.push(("accept".to_owned(), "application/json, */*;q=0.5".to_owned()));
    }
    let query = query.finish();
    let url = if query.is_empty() { format!("{base}{path}") } else { format!("{base}{path}?{query}") };
    Ok(HttpRequest { method: operation.method.clone(), url, headers, body })
}

/// The path template with each `{name}` filled and encoded. Unknown names stay an error: a
/// request to a literal `{id}` would reach some other resource.
fn fill_path(
    template: &str,
    parameters: &[HttpParameter],
    args: &Map<String, Value>,
) -> Result<String, RequestError> {
    let mut out = String::with_capacity(template.len() + 16);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        let name = &rest[open + 1..open + close];
        let parameter = parameters
            .iter()
            .find(|p| p.location == ParameterLocation::Path && p.name == name)
            .ok_or_else(|| RequestError::MissingPath(name.to_owned()))?;
        let value = args
            .get(&parameter.argument)
            .filter(|v| !v.is_null())
            .ok_or_else(|| RequestError::MissingPath(parameter.argument.clone()))?;
        out.push_str(&path_value(parameter, value)?);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    if !out.starts_with('/') {
        out.insert(0, '/');
    }
    Ok(out)
}

/// One path parameter, encoded in its style. Its raw text may not be or hold a dot segment.
fn path_value(parameter: &HttpParameter, value: &Value) -> Result<String, RequestError> {
    let explode = parameter.effective_explode();
    let raw_parts: Vec<(Option<String>, String)> = parts(parameter, value)?;
    for (_, text) in &raw_parts {
        if text.is_empty() || text.split('/').any(|segment| segment == "." || segment == "..") {
            return Err(RequestError::Traversal(parameter.argument.clone()));
        }
    }
    let enc = |s: &str| encode_component(s);
    let name = enc(&parameter.name);
    let joined = |sep: &str, kv_sep: &str| -> String {
        raw_parts
            .iter()
            .map(|(k, v)| match k {
                Some(k) => format!("{}{kv_sep}{}", enc(k), enc(v)),
                None => enc(v),
            })
            .collect::<Vec<_>>()
            .join(sep)
    };
    let is_object = value.is_object();
    Ok(match parameter.effective_style() {
        ParameterStyle::Label => {
            if explode {
                format!(".{}", joined(".", "="))
            } else {
                format!(".{}", joined(",", ","))
            }
        }
        ParameterStyle::Matrix => {
            if explode && is_object {
                format!(";{}", joined(";", "="))
            } else if explode {
                raw_parts.iter().map(|(_, v)| format!(";{name}={}", enc(v))).collect()
            } else {
                format!(";{name}={}", joined(",", ","))
            }
        }
        _ => {
            if explode {
                joined(",", "=")
            } else {
                joined(",", ",")
            }
        }
    })
}

/// A value as `(key, text)` parts: one part for a primitive, one per item of an array, one per
/// property of an object (with its key). Nested values are written as JSON.
fn parts(parameter: &HttpParameter, value: &Value) -> Result<Vec<(Option<String>, String)>, RequestError> {
    Ok(match value {
        Value::Array(items) => items.iter().map(|item| (None, scalar(item))).collect(),
        Value::Object(map) => map.iter().map(|(k, v)| (Some(k.clone()), scalar(v))).collect(),
        Value::Null => {
            return Err(RequestError::Unsupported {
                name: parameter.argument.clone(),
                kind: "null",
                location: location_name(parameter.location),
            });
        }
        other => vec![(None, scalar(other))],
    })
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn location_name(location: ParameterLocation) -> &'static str {
    match location {
        ParameterLocation::Path => "path",
        ParameterLocation::Query => "query",
        ParameterLocation::Header => "header",
        ParameterLocation::Cookie => "cookie",
    }
}

/// The simple style (headers, cookies): comma-joined, `k=v` when exploded.
fn simple(parameter: &HttpParameter, value: &Value, explode: bool) -> Result<String, RequestError> {
    Ok(parts(parameter, value)?
        .into_iter()
        .map(|(k, v)| match k {
            Some(k) if explode => format!("{k}={v}"),
            Some(k) => format!("{k},{v}"),
            None => v,
        })
        .collect::<Vec<_>>()
        .join(","))
}

fn add_query(
    query: &mut form_urlencoded::Serializer<'_, String>,
    parameter: &HttpParameter,
    value: &Value,
) -> Result<(), RequestError> {
    let explode = parameter.effective_explode();
    let name = parameter.name.as_str();
    let items = parts(parameter, value)?;
    match parameter.effective_style() {
        ParameterStyle::DeepObject => {
            for (k, v) in items {
                match k {
                    Some(k) => query.append_pair(&format!("{name}[{k}]"), &v),
                    None => query.append_pair(name, &v),
                };
            }
        }
        ParameterStyle::SpaceDelimited | ParameterStyle::PipeDelimited if value.is_array() && !explode => {
            let sep = if parameter.effective_style() == ParameterStyle::SpaceDelimited { " " } else { "|" };
            let joined: Vec<String> = items.into_iter().map(|(_, v)| v).collect();
            query.append_pair(name, &joined.join(sep));
        }
        _ if explode => {
            for (k, v) in items {
                query.append_pair(k.as_deref().unwrap_or(name), &v);
            }
        }
        _ => {
            let joined: Vec<String> = items
                .into_iter()
                .map(|(k, v)| match k {
                    Some(k) => format!("{k},{v}"),
                    None => v,
                })
                .collect();
            query.append_pair(name, &joined.join(","));
        }
    }
    Ok(())
}

/// The body's bytes and content type; `None` when the call gives none and none is required.
fn encode_body(spec: &HttpBody, args: &Map<String, Value>) -> Option<(Vec<u8>, String)> {
    let value = match &spec.shape {
        BodyShape::Whole { argument } => args.get(argument).cloned(),
        BodyShape::Fields { fields } => {
            let object: Map<String, Value> = fields
                .iter()
                .filter_map(|f| args.get(&f.argument).map(|v| (f.name.clone(), v.clone())))
                .collect();
            (!object.is_empty() || spec.required).then_some(Value::Object(object))
        }
    }?;
    let media = spec.media_type.to_ascii_lowercase();
    if media == "application/x-www-form-urlencoded" {
        let mut form = form_urlencoded::Serializer::new(String::new());
        match &value {
            Value::Object(map) => {
                for (k, v) in map {
                    match v {
                        Value::Array(items) => {
                            for item in items {
                                form.append_pair(k, &scalar(item));
                            }
                        }
                        other => {
                            form.append_pair(k, &scalar(other));
                        }
                    }
                }
            }
            other => {
                form.append_pair("body", &scalar(other));
            }
        }
        return Some((form.finish().into_bytes(), media));
    }
    if media.starts_with("multipart/") {
        return Some(multipart(&value));
    }
    if media.starts_with("text/") {
        return Some((scalar(&value).into_bytes(), format!("{media}; charset=utf-8")));
    }
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    let content_type = if media == "application/json" || media.ends_with("+json") {
        media
    } else {
        "application/json".to_owned()
    };
    Some((bytes, content_type))
}

/// `multipart/form-data`, one part per property (strings as text, anything else as JSON). The
/// boundary is a digest of the parts, so it cannot occur in them and needs no randomness.
fn multipart(value: &Value) -> (Vec<u8>, String) {
    let fields: Vec<(String, String, bool)> = match value {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match v {
                Value::Array(items) => items.iter().map(|i| part(k, i)).collect::<Vec<_>>(),
                other => vec![part(k, other)],
            })
            .collect(),
        other => vec![part("body", other)],
    };
    let mut hasher = Sha256::new();
    for (name, text, _) in &fields {
        hasher.update(name.as_bytes());
        hasher.update([0]);
        hasher.update(text.as_bytes());
        hasher.update([0]);
    }
    let boundary = format!("capabilities-{}", &hex::encode(hasher.finalize())[..32]);
    let mut out = String::new();
    for (name, text, json) in &fields {
        let name = name.replace(['"', '\r', '\n'], "_");
        let _ = write!(out, "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n");
        if *json {
            out.push_str("Content-Type: application/json\r\n");
        }
        let _ = write!(out, "\r\n{text}\r\n");
    }
    let _ = write!(out, "--{boundary}--\r\n");
    (out.into_bytes(), format!("multipart/form-data; boundary={boundary}"))
}

fn part(name: &str, value: &Value) -> (String, String, bool) {
    match value {
        Value::String(s) => (name.to_owned(), s.clone(), false),
        Value::Number(_) | Value::Bool(_) => (name.to_owned(), value.to_string(), false),
        other => (name.to_owned(), other.to_string(), true),
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters, except the dot: `.` is
/// encoded too, so no value forms a dot segment after a lax server decodes once.
fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::openapi::BodyField;

    fn param(name: &str, location: ParameterLocation) -> HttpParameter {
        HttpParameter { name: name.into(), location, argument: name.into(), style: None, explode: None }
    }

    fn api(auth: Option<HttpAuth>) -> HttpApi {
        HttpApi { base_url: "https://api.example.com/v1/".into(), document: None, auth }
    }

    fn get(path: &str, parameters: Vec<HttpParameter>) -> HttpOperation {
        HttpOperation { method: "GET".into(), path: path.into(), parameters, body: None, authenticated: true }
    }

    #[test]
    fn path_parameters_are_encoded_and_stay_under_the_base() {
        let op = get(
            "/repos/{owner}/{repo}",
            vec![param("owner", ParameterLocation::Path), param("repo", ParameterLocation::Path)],
        );
        let req = build(&api(None), &op, &json!({ "owner": "a b/c", "repo": "x.y" }), None).unwrap();
        assert_eq!(req.url, "https://api.example.com/v1/repos/a%20b%2Fc/x%2Ey");
        for evil in ["..", ".", "../../admin", "a/../b", ""] {
            let err = build(&api(None), &op, &json!({ "owner": evil, "repo": "r" }), None).unwrap_err();
            assert_eq!(err, RequestError::Traversal("owner".into()), "{evil}");
        }
        let err = build(&api(None), &op, &json!({ "owner": "o" }), None).unwrap_err();
        assert_eq!(err, RequestError::MissingPath("repo".into()));
    }

    #[test]
    fn query_styles() {
        let mut tags = param("tags", ParameterLocation::Query);
        let op = get("/pets", vec![tags.clone()]);
        let args = json!({ "tags": ["a", "b c"] });
        assert_eq!(
            build(&api(None), &op, &args, None).unwrap().url,
            "https://api.example.com/v1/pets?tags=a&tags=b+c"
        );
        tags.explode = Some(false);
        let op = get("/pets", vec![tags.clone()]);
        assert_eq!(
            build(&api(None), &op, &args, None).unwrap().url,
            "https://api.example.com/v1/pets?tags=a%2Cb+c"
        );
        tags.style = Some(ParameterStyle::PipeDelimited);
        let op = get("/pets", vec![tags]);
        assert_eq!(
            build(&api(None), &op, &args, None).unwrap().url,
            "https://api.example.com/v1/pets?tags=a%7Cb+c"
        );
        let mut filter = param("filter", ParameterLocation::Query);
        filter.style = Some(ParameterStyle::DeepObject);
        let op = get("/pets", vec![filter]);
        let req = build(&api(None), &op, &json!({ "filter": { "kind": "cat", "age": 3 } }), None).unwrap();
        assert_eq!(req.url, "https://api.example.com/v1/pets?filter%5Bkind%5D=cat&filter%5Bage%5D=3");
    }

    #[test]
    fn credentials_go_where_the_source_says_and_only_on_authenticated_operations() {
        let op = get("/me", vec![]);
        let req = build(&api(Some(HttpAuth::bearer())), &op, &json!({}), Some("tok")).unwrap();
        assert!(req.headers.contains(&("authorization".into(), "Bearer tok".into())));
        let req =
            build(&api(Some(HttpAuth::Query { name: "key".into() })), &op, &json!({}), Some("k&1")).unwrap();
        assert_eq!(req.url, "https://api.example.com/v1/me?key=k%261");
        let req = build(&api(Some(HttpAuth::Basic)), &op, &json!({}), Some("u:p")).unwrap();
        assert!(req.headers.contains(&("authorization".into(), "Basic dTpw".into())));
        let open = HttpOperation { authenticated: false, ..op };
        let req = build(&api(Some(HttpAuth::bearer())), &open, &json!({}), Some("tok")).unwrap();
        assert!(!req.headers.iter().any(|(n, _)| n == "authorization"));
        assert!(!format!("{req:?}").contains("tok"));
    }

    #[test]
    fn headers_refuse_line_breaks() {
        let op = get("/", vec![param("X-Trace", ParameterLocation::Header)]);
        let err = build(&api(None), &op, &json!({ "X-Trace": "a\r\nHost: evil" }), None).unwrap_err();
        assert_eq!(err, RequestError::LineBreak("X-Trace".into()));
    }

    #[test]
    fn bodies_by_media_type() {
        let fields = BodyShape::Fields {
            fields: vec![
                BodyField { name: "name".into(), argument: "name".into() },
                BodyField { name: "id".into(), argument: "id_body".into() },
            ],
        };
        let mut op = HttpOperation {
            method: "POST".into(),
            path: "/pets/{id}".into(),
            parameters: vec![param("id", ParameterLocation::Path)],
            body: Some(HttpBody { media_type: "application/json".into(), shape: fields, required: true }),
            authenticated: true,
        };
        let args = json!({ "id": 7, "name": "Rex", "id_body": 8 });
        let req = build(&api(None), &op, &args, None).unwrap();
        assert_eq!(req.url, "https://api.example.com/v1/pets/7");
        assert_eq!(String::from_utf8(req.body.unwrap()).unwrap(), r#"{"name":"Rex","id":8}"#);
        op.body.as_mut().unwrap().media_type = "application/x-www-form-urlencoded".into();
        let req = build(&api(None), &op, &args, None).unwrap();
        assert_eq!(String::from_utf8(req.body.unwrap()).unwrap(), "name=Rex&id=8");
        op.body.as_mut().unwrap().media_type = "multipart/form-data".into();
        let req = build(&api(None), &op, &args, None).unwrap();
        let (_, content_type) = req.headers.iter().find(|(n, _)| n == "content-type").unwrap();
        let boundary = content_type.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8(req.body.unwrap()).unwrap();
        assert!(
            text.contains("name=\"name\"\r\n\r\nRex\r\n") && text.ends_with(&format!("--{boundary}--\r\n"))
        );
        op.body.as_mut().unwrap().shape = BodyShape::Whole { argument: "body".into() };
        op.body.as_mut().unwrap().media_type = "application/json".into();
        let req = build(&api(None), &op, &json!({ "id": 1, "body": [1, 2] }), None).unwrap();
        assert_eq!(req.body.unwrap(), b"[1,2]");
    }
}
