//! Access tokens and the secrets that are stored only as digests.
//!
//! An access token is `hub_at.<claims>.<mac>`: the claims (JSON, base64url) name the account,
//! its tenant, the client, the scope, the exact resource, the refresh family and the expiry;
//! the MAC is HMAC-SHA256 (the `hmac` crate) under a key the Worker derives from its secret.
//! Checking one needs no storage, so it costs microseconds on every `/mcp` request; tokens are
//! short-lived because they cannot be recalled (revoking a family stops its refreshes).
//!
//! Codes, refresh tokens and client secrets are 32 random bytes (base64url) behind a prefix
//! that says what they are; only their SHA-256 digest is ever stored.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2_11::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

const ACCESS_PREFIX: &str = "hub_at.";

/// The key access tokens are signed with.
#[derive(Clone)]
pub struct TokenKey(Vec<u8>);

impl TokenKey {
    /// The key for `label` derived from the Worker secret `secret` (HMAC-SHA256, `secret` as key),
    /// so one secret can serve several purposes without one key opening another's tokens.
    pub fn derive(secret: &str, label: &str) -> TokenKey {
        TokenKey(mac(secret.as_bytes(), label.as_bytes()).to_vec())
    }

    /// The MAC of `message` under this key, base64url: a value only the hub can compute, such
    /// as the inbox's CSRF token for one sign-in cookie.
    pub fn tag(&self, message: &str) -> String {
        URL_SAFE_NO_PAD.encode(mac(&self.0, message.as_bytes()))
    }
}

fn mac(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// What an access token says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The tenant the token reaches; the only one.
    pub tenant: String,
    /// The account that signed in (`oidc|<issuer>|<sub>` or `github|<id>`).
    pub account: String,
    /// The person's name to show, as the identity provider gave it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    pub client: String,
    pub scope: String,
    /// The resource it is for, exactly (`<public url>/mcp`).
    pub resource: String,
    /// The refresh token family (one sign-in) it came from.
    pub family: String,
    /// Issued and expires, seconds since the epoch.
    pub iat: u64,
    pub exp: u64,
}

/// Why an access token is refused; each says so plainly.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the access token is not one this hub issued")]
    Malformed,
    #[error("the access token's signature does not match")]
    Signature,
    #[error("the access token expired: refresh it")]
    Expired,
    #[error("the access token is for another resource ({0})")]
    OtherResource(String),
}

/// The token for `claims`.
pub fn sign(key: &TokenKey, claims: &Claims) -> String {
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let tag = URL_SAFE_NO_PAD.encode(mac(&key.0, body.as_bytes()));
    format!("{ACCESS_PREFIX}{body}.{tag}")
}

/// The claims of `token` if it is ours, for `resource`, and not expired at `now_s`.
pub fn verify(key: &TokenKey, token: &str, resource: &str, now_s: u64) -> Result<Claims, Refused> {
    let rest = token.strip_prefix(ACCESS_PREFIX).ok_or(Refused::Malformed)?;
    let (body, tag) = rest.split_once('.').ok_or(Refused::Malformed)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refused::Malformed)?;
    let mut mac = HmacSha256::new_from_slice(&key.0).expect("HMAC takes a key of any length");
    mac.update(body.as_bytes());
    mac.verify_slice(&tag).map_err(|_| Refused::Signature)?;
    let json = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refused::Malformed)?;
    let claims: Claims = serde_json::from_slice(&json).map_err(|_| Refused::Malformed)?;
    if claims.resource != resource {
        return Err(Refused::OtherResource(claims.resource));
    }
    if now_s >= claims.exp {
        return Err(Refused::Expired);
    }
    Ok(claims)
}

/// A new secret of kind `prefix` (`hub_ac`, `hub_rt`, `hub_cs`, …) from 32 random bytes.
pub fn secret(prefix: &str, random: [u8; 32]) -> String {
    format!("{prefix}.{}", URL_SAFE_NO_PAD.encode(random))
}

/// The digest a secret is stored under: SHA-256, hex.
pub fn digest(secret: &str) -> String {
    Sha256::digest(secret.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `verifier` is a PKCE verifier (RFC 7636: 43–128 unreserved characters) whose S256
/// challenge is `challenge`. The comparison takes the same time wherever they differ.
pub fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    let shaped = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    shaped && crate::same_secret(&pkce_challenge(verifier), challenge)
}

/// The S256 challenge of `verifier`.
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// Whether `challenge` is shaped like an S256 challenge: 43 base64url characters.
pub fn is_challenge(challenge: &str) -> bool {
    challenge.len() == 43 && challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> Claims {
        Claims {
            tenant: "t-1".into(),
            account: "oidc|http://idp|alice".into(),
            name: "alice".into(),
            client: "c1".into(),
            scope: "mcp".into(),
            resource: "https://hub.example/mcp".into(),
            family: "f1".into(),
            iat: 100,
            exp: 400,
        }
    }

    #[test]
    fn a_token_verifies_for_its_resource_until_it_expires() {
        let key = TokenKey::derive("secret", "access v1");
        let token = sign(&key, &claims());
        assert_eq!(verify(&key, &token, "https://hub.example/mcp", 399), Ok(claims()));
        assert_eq!(verify(&key, &token, "https://hub.example/mcp", 400), Err(Refused::Expired));
        assert_eq!(
            verify(&key, &token, "https://other.example/mcp", 100),
            Err(Refused::OtherResource("https://hub.example/mcp".into()))
        );
        let other = TokenKey::derive("secret", "another label");
        assert_eq!(verify(&other, &token, "https://hub.example/mcp", 100), Err(Refused::Signature));
        let (body, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{body}.{}", URL_SAFE_NO_PAD.encode([0u8; 32]));
        assert_eq!(verify(&key, &forged, "https://hub.example/mcp", 100), Err(Refused::Signature));
        for bad in ["", "hub_at.", "hub_at.x", "Bearer x", "hub_at.e30.%%%"] {
            assert_eq!(verify(&key, bad, "https://hub.example/mcp", 100), Err(Refused::Malformed), "{bad}");
        }
    }

    #[test]
    fn a_changed_claim_breaks_the_signature() {
        let key = TokenKey::derive("secret", "access v1");
        let token = sign(&key, &claims());
        let (_, tag) = token.rsplit_once('.').unwrap();
        let mut other = claims();
        other.tenant = "t-2".into();
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap());
        let spliced = format!("hub_at.{body}.{tag}");
        assert_eq!(verify(&key, &spliced, "https://hub.example/mcp", 100), Err(Refused::Signature));
    }

    #[test]
    fn pkce_s256_matches_rfc_7636() {
        // RFC 7636, appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(is_challenge(challenge));
        assert!(pkce_matches(challenge, verifier));
        assert!(!pkce_matches(challenge, &verifier.replace('d', "e")));
        assert!(!pkce_matches(challenge, "short"));
        assert!(!pkce_matches(verifier, verifier), "plain is not S256");
    }

    #[test]
    fn secrets_are_stored_as_digests() {
        let s = secret("hub_rt", [7u8; 32]);
        assert!(s.starts_with("hub_rt.") && s.len() == 7 + 43, "{s}");
        assert_eq!(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
