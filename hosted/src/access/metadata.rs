//! What the hub publishes about itself: protected resource metadata (RFC 9728) for `/mcp`,
//! authorization server metadata (RFC 8414) with the MCP 2026-07-28 fields, and the
//! `WWW-Authenticate` challenges `/mcp` answers with.

use serde_json::{Value, json};

use super::{SCOPE_MCP, SCOPES, Settings};

/// Where the protected resource metadata for `/mcp` is, in its path form.
pub fn resource_metadata_url(settings: &Settings) -> String {
    settings.at("/.well-known/oauth-protected-resource/mcp")
}

pub fn protected_resource(settings: &Settings) -> Value {
    json!({
        "resource": settings.resource(),
        "authorization_servers": [settings.issuer],
        "scopes_supported": [SCOPE_MCP],
        "bearer_methods_supported": ["header"],
        "resource_name": "capabilities hub",
    })
}

pub fn authorization_server(settings: &Settings) -> Value {
    let methods = ["none", "client_secret_post", "client_secret_basic"];
    json!({
        "issuer": settings.issuer,
        "authorization_endpoint": settings.at("/oauth/authorize"),
        "token_endpoint": settings.at("/oauth/token"),
        "registration_endpoint": settings.at("/oauth/register"),
        "revocation_endpoint": settings.at("/oauth/revoke"),
        "scopes_supported": SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": methods,
        "revocation_endpoint_auth_methods_supported": methods,
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    })
}

/// The challenge for a request with no token, or with one that is refused (`why`).
pub fn challenge(settings: &Settings, why: Option<&str>) -> String {
    let mut out = String::from("Bearer");
    if let Some(why) = why {
        out.push_str(&format!(" error=\"invalid_token\", error_description=\"{}\",", quoted(why)));
    }
    out.push_str(&format!(
        " resource_metadata=\"{}\", scope=\"{SCOPE_MCP}\"",
        resource_metadata_url(settings)
    ));
    out
}

/// The challenge for a token without `scope` (`mcp` for `/mcp`, `hub:admin` for the push API).
pub fn insufficient_scope(settings: &Settings, scope: &str) -> String {
    format!(
        "Bearer error=\"insufficient_scope\", error_description=\"this token lacks the `{scope}` scope\", \
         resource_metadata=\"{}\", scope=\"{scope}\"",
        resource_metadata_url(settings)
    )
}

fn quoted(text: &str) -> String {
    text.chars().filter(|c| *c != '"' && *c != '\\' && !c.is_control()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_names_the_exact_resource_and_issuer() {
        let settings = Settings::new("https://hub.capabilities.sh").unwrap();
        let prm = protected_resource(&settings);
        assert_eq!(prm["resource"], "https://hub.capabilities.sh/mcp");
        assert_eq!(prm["authorization_servers"][0], "https://hub.capabilities.sh");
        let asm = authorization_server(&settings);
        assert_eq!(asm["issuer"], "https://hub.capabilities.sh");
        assert_eq!(asm["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(asm["client_id_metadata_document_supported"], true);
        assert_eq!(asm["authorization_response_iss_parameter_supported"], true);
        assert!(asm["token_endpoint_auth_methods_supported"].as_array().unwrap().contains(&json!("none")));
        expect_test::expect![[r#"Bearer error="invalid_token", error_description="the token expired", resource_metadata="https://hub.capabilities.sh/.well-known/oauth-protected-resource/mcp", scope="mcp""#]]
            .assert_eq(&challenge(&settings, Some("the \"token\" expired")));
    }
}
