//! Authorization codes and refresh token families, decided here and stored by the Worker's
//! `access` object (by digest only).
//!
//! A code is single use, lives a minute and is bound to its client, redirect URI, PKCE
//! challenge and resource. A sign-in's refresh tokens form a family: each refresh spends the
//! presented token and issues the next; presenting a spent one (or a spent code) revokes the
//! whole family, since then two parties hold it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::request::AuthRequest;
use super::token::pkce_matches;

/// An issued authorization code's record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Code {
    pub request: AuthRequest,
    pub tenant: String,
    pub account: String,
    /// The person's name to show.
    #[serde(default)]
    pub name: String,
    pub expires_s: u64,
    /// The family its refresh tokens will belong to, named now so a replay can revoke it.
    pub family: String,
}

/// A sign-in's refresh token family.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Family {
    pub id: String,
    pub client_id: String,
    pub tenant: String,
    pub account: String,
    #[serde(default)]
    pub name: String,
    pub scope: String,
    pub resource: String,
    pub expires_s: u64,
}

/// A token endpoint error (RFC 6749 §5.2).
#[derive(Debug, PartialEq, Eq)]
pub struct TokenError {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

pub fn token_error(error: &'static str, description: impl Into<String>) -> TokenError {
    let status = if error == "invalid_client" { 401 } else { 400 };
    TokenError { status, error, description: description.into() }
}

impl TokenError {
    pub fn body(&self) -> Value {
        json!({ "error": self.error, "error_description": self.description })
    }
}

/// Whether `client_id` may redeem `code` now, with this redirect URI, verifier and resource.
pub fn redeem(
    code: &Code,
    client_id: &str,
    redirect_uri: Option<&str>,
    verifier: Option<&str>,
    resource: Option<&str>,
    now_s: u64,
) -> Result<(), TokenError> {
    if code.request.client_id != client_id {
        return Err(token_error("invalid_grant", "the code was issued to another client"));
    }
    if now_s >= code.expires_s {
        return Err(token_error("invalid_grant", "the code expired: authorize again"));
    }
    if redirect_uri != Some(code.request.redirect_uri.as_str()) {
        return Err(token_error("invalid_grant", "redirect_uri is not the one the code was issued for"));
    }
    let verifier =
        verifier.ok_or_else(|| token_error("invalid_request", "code_verifier is required (PKCE)"))?;
    if !pkce_matches(&code.request.challenge, verifier) {
        return Err(token_error("invalid_grant", "code_verifier does not match the code_challenge"));
    }
    if resource.is_some_and(|r| r != code.request.resource) {
        return Err(token_error("invalid_target", format!("the code is for `{}`", code.request.resource)));
    }
    Ok(())
}

/// The scope a refresh of `family` by `client_id` gets: the family's, or less if asked.
pub fn refresh(
    family: &Family,
    client_id: &str,
    scope: Option<&str>,
    resource: Option<&str>,
    now_s: u64,
) -> Result<String, TokenError> {
    if family.client_id != client_id {
        return Err(token_error("invalid_grant", "the refresh token was issued to another client"));
    }
    if now_s >= family.expires_s {
        return Err(token_error("invalid_grant", "the sign-in expired: authorize again"));
    }
    if resource.is_some_and(|r| r != family.resource) {
        return Err(token_error("invalid_target", format!("the refresh token is for `{}`", family.resource)));
    }
    match scope.filter(|s| !s.is_empty()) {
        None => Ok(family.scope.clone()),
        Some(asked) => {
            if let Some(extra) =
                asked.split(' ').find(|s| !s.is_empty() && !super::has_scope(&family.scope, s))
            {
                return Err(token_error(
                    "invalid_scope",
                    format!("scope `{extra}` was not granted: authorize again"),
                ));
            }
            Ok(asked.split(' ').filter(|s| !s.is_empty()).collect::<Vec<_>>().join(" "))
        }
    }
}

/// A successful token response.
pub fn token_response(access: &str, expires_in: u64, refresh: &str, scope: &str) -> Value {
    json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": expires_in,
        "refresh_token": refresh,
        "scope": scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

    fn code() -> Code {
        Code {
            request: AuthRequest {
                client_id: "c1".into(),
                redirect_uri: "https://app.example/cb".into(),
                state: None,
                challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
                scope: "mcp".into(),
                resource: "https://hub.example/mcp".into(),
            },
            name: "alice".into(),
            tenant: "t-1".into(),
            account: "a".into(),
            expires_s: 160,
            family: "f1".into(),
        }
    }

    #[test]
    fn a_code_is_redeemed_only_by_its_client_with_its_verifier() {
        let cb = Some("https://app.example/cb");
        assert_eq!(redeem(&code(), "c1", cb, Some(VERIFIER), None, 100), Ok(()));
        let err = |r: Result<(), TokenError>| r.unwrap_err().description;
        assert!(err(redeem(&code(), "c2", cb, Some(VERIFIER), None, 100)).contains("another client"));
        assert!(err(redeem(&code(), "c1", cb, Some(VERIFIER), None, 160)).contains("expired"));
        assert!(
            err(redeem(&code(), "c1", Some("https://app.example/cb/"), Some(VERIFIER), None, 100))
                .contains("redirect_uri")
        );
        assert!(err(redeem(&code(), "c1", None, Some(VERIFIER), None, 100)).contains("redirect_uri"));
        assert!(err(redeem(&code(), "c1", cb, None, None, 100)).contains("required"));
        assert!(
            err(redeem(&code(), "c1", cb, Some(&VERIFIER.replace('d', "e")), None, 100))
                .contains("does not match")
        );
        assert_eq!(
            redeem(&code(), "c1", cb, Some(VERIFIER), Some("https://other.example/mcp"), 100)
                .unwrap_err()
                .error,
            "invalid_target"
        );
    }

    #[test]
    fn a_refresh_keeps_within_the_family() {
        let family = Family {
            id: "f1".into(),
            client_id: "c1".into(),
            tenant: "t-1".into(),
            account: "a".into(),
            name: "a".into(),
            scope: "mcp".into(),
            resource: "https://hub.example/mcp".into(),
            expires_s: 1000,
        };
        assert_eq!(refresh(&family, "c1", None, None, 10).unwrap(), "mcp");
        assert_eq!(refresh(&family, "c1", Some("hub:admin"), None, 10).unwrap_err().error, "invalid_scope");
        assert_eq!(refresh(&family, "c2", None, None, 10).unwrap_err().error, "invalid_grant");
        assert_eq!(refresh(&family, "c1", None, None, 1000).unwrap_err().error, "invalid_grant");
        assert_eq!(
            refresh(&family, "c1", None, Some("https://x.example/mcp"), 10).unwrap_err().error,
            "invalid_target"
        );
    }
}
