//! The HTTP operation a tool record may carry: how a call becomes a request (method, path
//! template, parameters, body). A leaf, so `manifest` (whose `ToolRecord` holds one) and
//! `openapi` (which builds and reads them) both import it and neither imports the other's
//! dependants; `openapi` re-exports every type here.

use serde::{Deserialize, Serialize};

/// How one operation is called. Everything here is pinned with the tool's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpOperation {
    /// Upper case: `GET`, `POST`, …
    pub method: String,
    /// The path template under the base URL, as the document writes it: `/pets/{petId}`.
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<HttpParameter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<HttpBody>,
    /// Whether the call carries the source's credential; `false` for `security: []`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub authenticated: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl HttpOperation {
    /// GET, HEAD and OPTIONS read; every other method may write.
    pub fn reads(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS")
    }
}

/// One parameter: where it goes on the wire and which field of the input object holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpParameter {
    /// Its name on the wire.
    pub name: String,
    #[serde(rename = "in")]
    pub location: ParameterLocation,
    /// The input object's field; the wire name unless it collided with another.
    pub argument: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<ParameterStyle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explode: Option<bool>,
}

impl HttpParameter {
    /// The style OpenAPI defaults to for the parameter's location.
    pub fn effective_style(&self) -> ParameterStyle {
        self.style.unwrap_or(match self.location {
            ParameterLocation::Path | ParameterLocation::Header => ParameterStyle::Simple,
            ParameterLocation::Query | ParameterLocation::Cookie => ParameterStyle::Form,
        })
    }

    /// `explode` as OpenAPI defaults it: true for `form`, false otherwise.
    pub fn effective_explode(&self) -> bool {
        self.explode.unwrap_or(self.effective_style() == ParameterStyle::Form)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParameterLocation {
    Path,
    Query,
    Header,
    Cookie,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ParameterStyle {
    Simple,
    Label,
    Matrix,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

/// The request body: its media type and which input fields make it up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpBody {
    /// The media type sent, e.g. `application/json`, `application/x-www-form-urlencoded`,
    /// `multipart/form-data`.
    pub media_type: String,
    pub shape: BodyShape,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// How the input object holds the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum BodyShape {
    /// An object body whose properties are fields of the input object, beside the parameters.
    Fields { fields: Vec<BodyField> },
    /// Any other body (an array, a string, a schema with no fixed properties), whole, in one
    /// input field (`body`, suffixed if a parameter has that name).
    Whole { argument: String },
}

/// One property of an object body and the input field that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyField {
    pub name: String,
    pub argument: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_that_read() {
        let op = |m: &str| HttpOperation {
            method: m.into(),
            path: "/".into(),
            parameters: vec![],
            body: None,
            authenticated: true,
        };
        assert!(op("GET").reads() && op("HEAD").reads() && op("OPTIONS").reads());
        assert!(!op("POST").reads() && !op("DELETE").reads() && !op("PATCH").reads());
    }
}
