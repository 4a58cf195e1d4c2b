//! OAuth clients: those that registered (RFC 7591, the deprecated fallback) and those whose
//! client ID is the URL of their metadata document (CIMD, the MCP default).
//!
//! Redirect URIs are `https`, or `http` on a loopback host; never with a fragment or user
//! info. A request's redirect URI must equal a registered one exactly, except that a loopback
//! one may name any port (RFC 8252 §7.3). A metadata document is fetched only from an `https`
//! URL with a path, on a host that is a name (not `localhost`, not a single label, not an
//! internal suffix) or a public IP address; the Worker adds the size and time limits and the
//! cache.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use url::{Host, Url};

/// The largest client ID metadata document read, in bytes.
pub const MAX_DOCUMENT: usize = 16 * 1024;
/// How long a document is fetched for at most, in milliseconds.
pub const DOCUMENT_TIMEOUT_MS: u64 = 5_000;
/// How long a fetched document is used before it is fetched again, in seconds.
pub const DOCUMENT_CACHE_S: u64 = 600;
const MAX_REDIRECT_URIS: usize = 16;
const MAX_NAME: usize = 200;

/// How a client proves itself at the token endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    None,
    ClientSecretPost,
    ClientSecretBasic,
}

impl AuthMethod {
    pub fn parse(method: &str) -> Option<AuthMethod> {
        match method {
            "none" => Some(AuthMethod::None),
            "client_secret_post" => Some(AuthMethod::ClientSecretPost),
            "client_secret_basic" => Some(AuthMethod::ClientSecretBasic),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::None => "none",
            AuthMethod::ClientSecretPost => "client_secret_post",
            AuthMethod::ClientSecretBasic => "client_secret_basic",
        }
    }
}

/// A client the hub knows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub auth: AuthMethod,
    /// The SHA-256 digest of its secret (`client_secret_*` only).
    pub secret_digest: Option<String>,
    /// Whether it came from a metadata document (its ID is that document's URL).
    pub document: bool,
}

/// A refused registration or document, as RFC 7591 names it.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid {
    pub error: &'static str,
    pub description: String,
}

fn invalid(error: &'static str, description: impl Into<String>) -> Invalid {
    Invalid { error, description: description.into() }
}

/// Whether `host` is a loopback host: `localhost`, 127.0.0.0/8 or `::1`.
pub fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
    }
}

fn loopback_url(url: &Url) -> bool {
    url.scheme() == "http" && url.host().is_some_and(|h| is_loopback_host(&h))
}

/// Whether `uri` may be registered as a redirect URI.
pub fn check_redirect_uri(uri: &str) -> Result<Url, String> {
    let url = Url::parse(uri).map_err(|e| format!("redirect URI `{uri}` is not a URL ({e})"))?;
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(format!("redirect URI `{uri}` has a fragment or user info"));
    }
    if url.scheme() != "https" && !loopback_url(&url) {
        return Err(format!("redirect URI `{uri}` must be https (http only on a loopback host)"));
    }
    Ok(url)
}

/// Whether `given` is one of `registered`: the same string, or, for a loopback URI, the same
/// but for the port.
pub fn redirect_matches(registered: &[String], given: &str) -> bool {
    if registered.iter().any(|r| r == given) {
        return true;
    }
    let Ok(given_url) = Url::parse(given) else { return false };
    if !loopback_url(&given_url) {
        return false;
    }
    let portless = |mut url: Url| {
        let _ = url.set_port(None);
        url.to_string()
    };
    let given_url = portless(given_url);
    registered
        .iter()
        .filter_map(|r| Url::parse(r).ok())
        .filter(loopback_url)
        .any(|r| portless(r) == given_url)
}

/// What a registration asks for, checked: the client to store (its ID and secret digest set by
/// the caller) and whether it needs a secret.
pub fn check_registration(body: &[u8]) -> Result<Client, Invalid> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| invalid("invalid_client_metadata", format!("not JSON: {e}")))?;
    let uris = value.get("redirect_uris").and_then(Value::as_array);
    let uris = uris.filter(|u| !u.is_empty()).ok_or_else(|| {
        invalid("invalid_redirect_uri", "redirect_uris must name at least one redirect URI")
    })?;
    let redirect_uris = redirect_uris(uris).map_err(|e| invalid("invalid_redirect_uri", e))?;
    let method = match value.get("token_endpoint_auth_method") {
        None => AuthMethod::ClientSecretBasic, // RFC 7591's default
        Some(Value::String(m)) => AuthMethod::parse(m).ok_or_else(|| {
            invalid(
                "invalid_client_metadata",
                format!("token_endpoint_auth_method `{m}` is not one of none, client_secret_post, client_secret_basic"),
            )
        })?,
        Some(_) => return Err(invalid("invalid_client_metadata", "token_endpoint_auth_method is a string")),
    };
    for (field, allowed) in
        [("grant_types", &["authorization_code", "refresh_token"][..]), ("response_types", &["code"])]
    {
        if let Some(list) = value.get(field) {
            let list = list
                .as_array()
                .ok_or_else(|| invalid("invalid_client_metadata", format!("{field} is a list")))?;
            if let Some(other) = list.iter().find(|g| !g.as_str().is_some_and(|g| allowed.contains(&g))) {
                return Err(invalid(
                    "invalid_client_metadata",
                    format!("{field} may hold only {}, not {other}", allowed.join(", ")),
                ));
            }
        }
    }
    Ok(Client {
        id: String::new(),
        name: name(&value).unwrap_or_else(|| "an unnamed client".into()),
        redirect_uris,
        auth: method,
        secret_digest: None,
        document: false,
    })
}

fn name(value: &Value) -> Option<String> {
    let name = value.get("client_name")?.as_str()?.trim();
    (!name.is_empty()).then(|| name.chars().filter(|c| !c.is_control()).take(MAX_NAME).collect())
}

fn redirect_uris(uris: &[Value]) -> Result<Vec<String>, String> {
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(format!("at most {MAX_REDIRECT_URIS} redirect URIs"));
    }
    uris.iter()
        .map(|u| {
            let u = u.as_str().ok_or("a redirect URI is a string")?;
            check_redirect_uri(u)?;
            Ok(u.to_owned())
        })
        .collect()
}

/// Whether `client_id` names a metadata document (an `https` URL); if so, the URL to fetch it
/// from, or why it may not be fetched. With `loopback` (tests only) an `https` ID on
/// 127.0.0.0/8 is fetched over plain `http`.
pub fn document_url(client_id: &str, loopback: bool) -> Option<Result<String, String>> {
    if !client_id.starts_with("https://") {
        return None;
    }
    Some(check_document_url(client_id, loopback))
}

fn check_document_url(client_id: &str, loopback: bool) -> Result<String, String> {
    let url = Url::parse(client_id).map_err(|e| format!("the client ID is not a URL ({e})"))?;
    if url.as_str() != client_id {
        return Err("the client ID is not a normalized URL".into());
    }
    if url.path() == "/" || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some()
    {
        return Err("the client ID must be an https URL with a path and no fragment or user info".into());
    }
    if url.path().split('/').any(|s| s == "." || s == "..") {
        return Err("the client ID's path has a dot segment".into());
    }
    let host = url.host().ok_or("the client ID has no host")?;
    if loopback && matches!(host, Host::Ipv4(ip) if ip.is_loopback()) {
        let mut plain = url.clone();
        plain.set_scheme("http").map_err(|()| "cannot fetch the document over http")?;
        return Ok(plain.to_string());
    }
    if !public_host(&host) {
        return Err(format!(
            "the client ID's host `{host}` is not a public address: metadata documents are fetched only from public hosts"
        ));
    }
    Ok(url.to_string())
}

/// Whether `host` may be fetched from: a dotted name outside the reserved suffixes, or a
/// public IP address. (The Worker's `fetch` reaches only public addresses on Cloudflare;
/// this check refuses what it can see without resolving.)
pub fn public_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            let reserved =
                ["localhost", "local", "internal", "lan", "home", "arpa", "test", "invalid", "example"];
            name.contains('.') && !reserved.iter().any(|r| name == *r || name.ends_with(&format!(".{r}")))
        }
        Host::Ipv4(ip) => public_ip(IpAddr::V4(*ip)),
        Host::Ipv6(ip) => public_ip(IpAddr::V6(*ip)),
    }
}

fn public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => {
            let [a, b, ..] = ip.octets();
            !(ip.is_private()
                || ip.is_loopback()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // shared address space
                || (a == 198 && (b == 18 || b == 19)) // benchmarking
                || a >= 224)
        }
        IpAddr::V6(ip) => {
            if let Some(v4) = ip.to_ipv4_mapped() {
                return public_ip(IpAddr::V4(v4));
            }
            let first = ip.segments()[0];
            !(ip.is_loopback()
                || ip.is_unspecified()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first & 0xff00) == 0xff00) // multicast
        }
    }
}

/// The client a fetched metadata document describes, if it is one: its `client_id` is the URL
/// it was fetched from, it has a name and redirect URIs, and it authenticates with `none`.
pub fn check_document(client_id: &str, body: &[u8]) -> Result<Client, String> {
    if body.len() > MAX_DOCUMENT {
        return Err(format!("the metadata document is over {MAX_DOCUMENT} bytes"));
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the metadata document is not JSON ({e})"))?;
    if value.get("client_id").and_then(Value::as_str) != Some(client_id) {
        return Err("the metadata document's client_id is not the URL it was fetched from".into());
    }
    let name = name(&value).ok_or("the metadata document has no client_name")?;
    let uris = value.get("redirect_uris").and_then(Value::as_array).filter(|u| !u.is_empty());
    let uris = uris.ok_or("the metadata document has no redirect_uris")?;
    let redirect_uris = redirect_uris(uris).map_err(|e| format!("the metadata document's {e}"))?;
    if value.get("client_secret").is_some() || value.get("client_secret_expires_at").is_some() {
        return Err("a metadata document carries no client secret".into());
    }
    let methods: Vec<&str> =
        match (value.get("token_endpoint_auth_method"), value.get("token_endpoint_auth_methods_supported")) {
            (None, None) => vec!["none"],
            (one, many) => one
                .and_then(Value::as_str)
                .into_iter()
                .chain(many.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str))
                .collect(),
        };
    if !methods.contains(&"none") {
        return Err(format!(
            "the metadata document's client authenticates with {}: this hub takes public clients (none) from documents",
            methods.join(", ")
        ));
    }
    Ok(Client {
        id: client_id.to_owned(),
        name,
        redirect_uris,
        auth: AuthMethod::None,
        secret_digest: None,
        document: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_match_exactly_but_for_a_loopback_port() {
        let registered = vec![
            "https://claude.ai/api/mcp/auth_callback".to_owned(),
            "http://127.0.0.1:3000/callback".to_owned(),
        ];
        assert!(redirect_matches(&registered, "https://claude.ai/api/mcp/auth_callback"));
        assert!(redirect_matches(&registered, "http://127.0.0.1:49152/callback"));
        for bad in [
            "https://claude.ai/api/mcp/auth_callback/",
            "https://claude.ai/api/mcp/other",
            "https://claude.ai:444/api/mcp/auth_callback",
            "https://claude.ai/api/mcp/auth_callback?x=1",
            "https://claude.ai.evil.example/api/mcp/auth_callback",
            "http://127.0.0.1:3000/callback/",
            "http://127.0.0.1:3000/other",
            "http://localhost:3000/callback",
        ] {
            assert!(!redirect_matches(&registered, bad), "{bad}");
        }
    }

    #[test]
    fn registration_takes_the_big_clients_redirect_uris() {
        let body = br#"{"client_name": "Claude", "redirect_uris": ["https://claude.ai/api/mcp/auth_callback",
            "https://chatgpt.com/connector_platform_oauth_redirect"], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}"#;
        let client = check_registration(body).unwrap();
        assert_eq!(client.auth, AuthMethod::None);
        assert_eq!(client.redirect_uris.len(), 2);
        assert_eq!(
            check_registration(br#"{"redirect_uris": ["https://a.example/cb"]}"#).unwrap().auth,
            AuthMethod::ClientSecretBasic
        );
        for (body, error) in [
            (&br#"{"redirect_uris": []}"#[..], "invalid_redirect_uri"),
            (br#"{"redirect_uris": ["http://evil.example/cb"]}"#, "invalid_redirect_uri"),
            (br#"{"redirect_uris": ["https://a.example/cb#x"]}"#, "invalid_redirect_uri"),
            (br#"{"redirect_uris": ["javascript:alert(1)"]}"#, "invalid_redirect_uri"),
            (br#"{"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}"#, "invalid_client_metadata"),
            (br#"{"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}"#, "invalid_client_metadata"),
            (b"nope", "invalid_client_metadata"),
        ] {
            assert_eq!(check_registration(body).unwrap_err().error, error, "{}", String::from_utf8_lossy(body));
        }
    }

    #[test]
    fn documents_are_fetched_only_from_public_https_urls() {
        assert_eq!(document_url("c-123", false), None);
        assert_eq!(
            document_url("https://app.example.com/client.json", false),
            Some(Ok("https://app.example.com/client.json".into()))
        );
        for bad in [
            "https://127.0.0.1/client.json",
            "https://10.0.0.5/client.json",
            "https://192.168.1.1/c",
            "https://169.254.169.254/latest",
            "https://[::1]/c",
            "https://[fd00::1]/c",
            "https://[::ffff:10.0.0.1]/c",
            "https://localhost/c",
            "https://metadata/c",
            "https://db.internal/c",
            "https://app.example.com/",
            "https://app.example.com/a/../b",
            "https://user@app.example.com/c",
            "https://app.example.com/c#f",
        ] {
            assert!(document_url(bad, false).unwrap().is_err(), "{bad}");
        }
        assert_eq!(
            document_url("https://127.0.0.1:4000/client.json", true),
            Some(Ok("http://127.0.0.1:4000/client.json".into()))
        );
        assert!(document_url("https://10.0.0.5/client.json", true).unwrap().is_err());
        assert!(document_url("https://localhost:4000/client.json", true).unwrap().is_err());
    }

    #[test]
    fn a_document_names_itself_and_its_redirect_uris() {
        let id = "https://app.example.com/client.json";
        let doc = format!(
            r#"{{"client_id": "{id}", "client_name": "App", "redirect_uris": ["http://127.0.0.1/cb"]}}"#
        );
        let client = check_document(id, doc.as_bytes()).unwrap();
        assert!(client.document && client.auth == AuthMethod::None);
        let both = format!(
            r#"{{"client_id": "{id}", "client_name": "App", "redirect_uris": ["https://app.example.com/cb"],
            "token_endpoint_auth_methods_supported": ["private_key_jwt", "none"]}}"#
        );
        assert!(check_document(id, both.as_bytes()).is_ok());
        for (doc, why) in [
            (doc.replace(id, "https://other.example/client.json"), "client_id"),
            (doc.replace(r#""client_name": "App", "#, ""), "client_name"),
            (doc.replace("http://127.0.0.1/cb", "http://evil.example/cb"), "redirect URI"),
            (
                doc.replace(
                    r#""client_name""#,
                    r#""token_endpoint_auth_method": "private_key_jwt", "client_name""#,
                ),
                "none",
            ),
            (doc.replace(r#""client_name""#, r#""client_secret": "s", "client_name""#), "secret"),
            (" ".repeat(MAX_DOCUMENT + 1), "bytes"),
        ] {
            let err = check_document(id, doc.as_bytes()).unwrap_err();
            assert!(err.contains(why), "{why}: {err}");
        }
    }
}
