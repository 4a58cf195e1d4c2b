//! The authorization request (`GET /oauth/authorize`): authorization code with PKCE S256 only.
//!
//! The client and its redirect URI are checked first; while either is in doubt nothing is
//! redirected anywhere and the person sees a local page ([`Refusal::Local`]). Every later
//! problem goes back to the client's redirect URI with `error`, `state` and `iss`
//! ([`Refusal::Redirect`]), as every successful answer does.

use serde::{Deserialize, Serialize};

use super::client::{Client, redirect_matches};
use super::token::is_challenge;
use super::{Settings, parse_scope};

/// A checked authorization request, kept while the person signs in and decides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuthRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub state: Option<String>,
    pub challenge: String,
    pub scope: String,
    pub resource: String,
}

/// Why an authorization request is refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Shown to the person; the request is not redirected.
    Local(String),
    /// Sent back to the client's (checked) redirect URI.
    Redirect { redirect_uri: String, state: Option<String>, error: &'static str, description: String },
}

/// The one value of `name` in `query`; a repeated parameter is refused.
pub fn param<'a>(query: &'a [(String, String)], name: &str) -> Result<Option<&'a str>, String> {
    let mut values = query.iter().filter(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let first = values.next();
    if values.next().is_some() {
        return Err(format!("`{name}` is given more than once"));
    }
    Ok(first.filter(|v| !v.is_empty()))
}

/// The client ID a request names, before its client is looked up.
pub fn client_id(query: &[(String, String)]) -> Result<&str, String> {
    param(query, "client_id")?.ok_or_else(|| "the request names no client_id".to_owned())
}

/// Checks a request from `client` (already looked up by its `client_id`).
pub fn check(
    query: &[(String, String)],
    client: &Client,
    settings: &Settings,
) -> Result<AuthRequest, Refusal> {
    let local = Refusal::Local;
    let redirect_uri = param(query, "redirect_uri").map_err(local)?.ok_or_else(|| {
        Refusal::Local("the request names no redirect_uri: this hub needs it on every request".into())
    })?;
    if !redirect_matches(&client.redirect_uris, redirect_uri) {
        return Err(Refusal::Local(format!(
            "the redirect URI `{redirect_uri}` is not one {} registered: nothing was sent there",
            client.name
        )));
    }
    let state = param(query, "state").map_err(local)?.map(str::to_owned);
    let back = |error: &'static str, description: String| Refusal::Redirect {
        redirect_uri: redirect_uri.to_owned(),
        state: state.clone(),
        error,
        description,
    };
    let one = |name: &str| param(query, name).map_err(|e| back("invalid_request", e));
    match one("response_type")? {
        Some("code") => {}
        Some(other) => {
            return Err(back(
                "unsupported_response_type",
                format!("response_type `{other}`: this hub answers only `code`"),
            ));
        }
        None => return Err(back("invalid_request", "the request names no response_type (`code`)".into())),
    }
    let challenge = match (one("code_challenge")?, one("code_challenge_method")?) {
        (None, _) => {
            return Err(back(
                "invalid_request",
                "PKCE is required: send code_challenge with code_challenge_method S256".into(),
            ));
        }
        (Some(_), Some("S256")) => one("code_challenge")?.unwrap_or_default(),
        (Some(_), None | Some("plain")) => {
            return Err(back(
                "invalid_request",
                "code_challenge_method must be S256 (plain is not accepted)".into(),
            ));
        }
        (Some(_), Some(other)) => {
            return Err(back("invalid_request", format!("code_challenge_method `{other}` is not S256")));
        }
    };
    if !is_challenge(challenge) {
        return Err(back(
            "invalid_request",
            "code_challenge is not an S256 challenge (43 base64url characters)".into(),
        ));
    }
    let scope = parse_scope(one("scope")?).map_err(|e| back("invalid_scope", e))?;
    let resource = settings.resource();
    if let Some(asked) = one("resource")? {
        if asked != resource {
            return Err(back(
                "invalid_target",
                format!("resource `{asked}` is not this hub's; it serves `{resource}`"),
            ));
        }
    }
    Ok(AuthRequest {
        client_id: client.id.clone(),
        redirect_uri: redirect_uri.to_owned(),
        state,
        challenge: challenge.to_owned(),
        scope,
        resource,
    })
}

/// `redirect_uri` with `params` added to its query, as the answer to a client.
pub fn redirect_to(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    let mut url = url::Url::parse(redirect_uri).expect("redirect URIs are checked URLs");
    {
        let mut pairs = url.query_pairs_mut();
        for (k, v) in params {
            pairs.append_pair(k, v);
        }
    }
    url.to_string()
}

/// Where a refused request goes back to the client: its error, `state` and `iss`.
pub fn error_redirect(
    redirect_uri: &str,
    state: Option<&str>,
    error: &str,
    description: &str,
    issuer: &str,
) -> String {
    let mut params = vec![("error", error), ("error_description", description)];
    if let Some(state) = state {
        params.push(("state", state));
    }
    params.push(("iss", issuer));
    redirect_to(redirect_uri, &params)
}

#[cfg(test)]
mod tests {
    use super::super::client::AuthMethod;
    use super::*;

    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    fn client() -> Client {
        Client {
            id: "c1".into(),
            name: "App".into(),
            redirect_uris: vec!["https://app.example/cb".into()],
            auth: AuthMethod::None,
            secret_digest: None,
            document: false,
        }
    }

    fn query(extra: &[(&str, &str)], without: &[&str]) -> Vec<(String, String)> {
        let base = [
            ("response_type", "code"),
            ("client_id", "c1"),
            ("redirect_uri", "https://app.example/cb"),
            ("code_challenge", CHALLENGE),
            ("code_challenge_method", "S256"),
            ("state", "s1"),
            ("resource", "https://hub.example/mcp"),
        ];
        let mut q: Vec<(String, String)> = base
            .iter()
            .filter(|(k, _)| !without.contains(k) && !extra.iter().any(|(e, _)| e == k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        q.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        q
    }

    fn refusal(extra: &[(&str, &str)], without: &[&str]) -> String {
        let settings = Settings::new("https://hub.example").unwrap();
        match check(&query(extra, without), &client(), &settings) {
            Ok(_) => "ok".into(),
            Err(Refusal::Local(why)) => format!("local: {why}"),
            Err(Refusal::Redirect { error, state, .. }) => format!("redirect {error} state={state:?}"),
        }
    }

    #[test]
    fn a_good_request_is_kept() {
        let settings = Settings::new("https://hub.example").unwrap();
        let request = check(&query(&[], &[]), &client(), &settings).unwrap();
        assert_eq!(request.scope, "mcp");
        assert_eq!(request.resource, "https://hub.example/mcp");
        assert_eq!(refusal(&[], &["resource", "state"]), "ok");
    }

    #[test]
    fn bad_requests_are_refused_where_they_should_be() {
        let cases = [
            (refusal(&[], &["code_challenge", "code_challenge_method"]), "redirect invalid_request"),
            (refusal(&[("code_challenge_method", "plain")], &[]), "redirect invalid_request"),
            (refusal(&[], &["code_challenge_method"]), "redirect invalid_request"),
            (refusal(&[("code_challenge", "short")], &[]), "redirect invalid_request"),
            (refusal(&[("response_type", "token")], &[]), "redirect unsupported_response_type"),
            (refusal(&[("scope", "openid")], &[]), "redirect invalid_scope"),
            (refusal(&[("resource", "https://other.example/mcp")], &[]), "redirect invalid_target"),
            (refusal(&[("redirect_uri", "https://app.example/cb/")], &[]), "local: the redirect URI"),
            (refusal(&[("redirect_uri", "https://app.example/other")], &[]), "local: the redirect URI"),
            (refusal(&[("redirect_uri", "https://evil.example/cb")], &[]), "local: the redirect URI"),
            (refusal(&[], &["redirect_uri"]), "local: the request names no redirect_uri"),
        ];
        for (got, want) in cases {
            assert!(got.starts_with(want), "{got} should start with {want}");
        }
        let mut twice = query(&[], &[]);
        twice.push(("state".into(), "s2".into()));
        let settings = Settings::new("https://hub.example").unwrap();
        assert!(matches!(check(&twice, &client(), &settings), Err(Refusal::Local(_))));
    }

    #[test]
    fn errors_go_back_with_state_and_iss() {
        let to = error_redirect(
            "https://app.example/cb?x=1",
            Some("s1"),
            "access_denied",
            "the person refused",
            "https://hub.example",
        );
        assert_eq!(
            to,
            "https://app.example/cb?x=1&error=access_denied&error_description=the+person+refused&state=s1&iss=https%3A%2F%2Fhub.example"
        );
    }
}
