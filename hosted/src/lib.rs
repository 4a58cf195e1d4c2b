//! The hosted hub: a Cloudflare Worker (workers-rs) serving the same three tools as the local
//! hub through the same core engine and QuickJS driver, with one Durable Object per tenant
//! whose SQLite storage holds its sources, manifests, policy, sealed credentials, runs and
//! journals.
//!
//! The modules outside `worker` are plain Rust, built and unit-tested natively too: the MCP
//! JSON-RPC handling (`rpc`, with the stateless revision's approval rounds), what an admin load
//! carries (`records`), what `hub push` carries (`push`, and the skill library with the Skills
//! extension's answers: `skills`), credential sealing (`seal`) and how upstream answers and
//! redirects are read (`wire`). `worker` holds the adapters that exist only on wasm32 inside workerd, and the
//! hosted hub's one recorder of a person's decisions (`worker::recorder`).
#![forbid(unsafe_code)]

use capabilities_core::approval::state::constant_time_eq;
use capabilities_core::wording::HostWords;

pub mod access;
pub mod push;
pub mod records;
pub mod rpc;
pub mod seal;
pub mod skills;
pub mod wire;

#[cfg(target_arch = "wasm32")]
mod worker;

/// The tenant a request addresses: `/t/<tenant>/<rest>`. Tenants are lowercase letters,
/// digits and `-`, 1–64 characters, starting with a letter or digit.
pub fn split_tenant(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/t/")?;
    let (tenant, rest) = rest.split_once('/').unwrap_or((rest, ""));
    let valid = !tenant.is_empty()
        && tenant.len() <= 64
        && tenant.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !tenant.starts_with('-');
    valid.then_some((tenant, rest))
}

/// Compares two secrets without stopping at the first differing byte.
pub fn same_secret(given: &str, expected: &str) -> bool {
    !expected.is_empty() && constant_time_eq(given.as_bytes(), expected.as_bytes())
}

/// How the hosted hub names where a person acts for `tenant`: with sign-in on (`issuer` is the
/// hub's public origin) the review inbox and the local hub's `hub push`; without it, the
/// operator's admin API. Never only a local command where a person may have no local hub.
pub fn words(tenant: &str, issuer: Option<&str>) -> HostWords {
    if let Some(issuer) = issuer {
        return HostWords {
            decide: format!("the review inbox, {issuer}/inbox (run `{{run}}`)"),
            auth: "`capabilities hub push --secrets` from the local hub that holds the credential".to_owned(),
            auth_connection:
                "`capabilities hub auth {namespace} --connection {connection}` on the local hub, then \
                              `capabilities hub push --secrets`"
                    .to_owned(),
            diagnose: "`capabilities hub status`".to_owned(),
            add_source: "`capabilities hub add` on the local hub, then `capabilities hub push`".to_owned(),
        };
    }
    let admin =
        |path: &str| format!("`{} /t/{tenant}/admin/{path}`", if path == "runs" { "GET" } else { "POST" });
    HostWords {
        decide: format!("`POST /t/{tenant}/admin/approve {{\"run\": \"{{run}}\"}}`"),
        auth: format!("a new admin load ({})", admin("load")),
        auth_connection: format!(
            "a new admin load ({}) with a value for connection `{{connection}}` of `{{namespace}}`",
            admin("load")
        ),
        diagnose: format!("{} on the hub's admin API", admin("runs")),
        add_source: format!("a new admin load ({})", admin("load")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_come_from_the_path() {
        assert_eq!(split_tenant("/t/acme/mcp"), Some(("acme", "mcp")));
        assert_eq!(split_tenant("/t/acme-2/admin/load"), Some(("acme-2", "admin/load")));
        for bad in ["/mcp", "/t//mcp", "/t/Acme/mcp", "/t/-x/mcp", "/t/a.b/mcp"] {
            assert_eq!(split_tenant(bad), None, "{bad}");
        }
        assert_eq!(split_tenant(&format!("/t/{}/mcp", "a".repeat(65))), None);
    }

    /// Nothing the hosted hub tells a model or a person names a local command.
    #[test]
    fn the_words_name_the_admin_api() {
        let words = words("acme", None);
        expect_test::expect![[r#"
            HostWords {
                decide: "`POST /t/acme/admin/approve {\"run\": \"{run}\"}`",
                auth: "a new admin load (`POST /t/acme/admin/load`)",
                auth_connection: "a new admin load (`POST /t/acme/admin/load`) with a value for connection `{connection}` of `{namespace}`",
                diagnose: "`GET /t/acme/admin/runs` on the hub's admin API",
                add_source: "a new admin load (`POST /t/acme/admin/load`)",
            }
        "#]].assert_debug_eq(&words);
        let texts = [
            words.decide("run_0123456789abcdef"),
            words.auth.clone(),
            words.auth_connection("github", "work"),
            words.diagnose.clone(),
            words.add_source.clone(),
        ];
        for text in texts {
            assert!(!text.contains("capabilities hub"), "{text}");
        }
    }

    /// With sign-in on, a person decides in the inbox and fixes credentials from their local hub.
    #[test]
    fn signed_in_words_name_the_inbox() {
        let words = words("acme", Some("https://hub.capabilities.sh"));
        assert_eq!(
            words.decide("run_1"),
            "the review inbox, https://hub.capabilities.sh/inbox (run `run_1`)"
        );
        assert!(!words.decide("run_1").contains("admin"));
        assert!(words.auth_connection("github", "work").contains("--connection work"));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert!(!same_secret("", ""));
    }
}
