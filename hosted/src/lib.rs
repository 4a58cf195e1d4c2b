//! The hosted hub: a Cloudflare Worker (workers-rs) serving the same three tools as the local
//! hub through the same core engine and QuickJS driver, with one Durable Object per tenant
//! whose SQLite storage holds its sources, manifests, policy, sealed credentials, runs and
//! journals.
//!
//! The modules outside `worker` are plain Rust, built and unit-tested natively too: the MCP
//! JSON-RPC handling (`rpc`, with the stateless revision's approval rounds), what an admin load
//! carries (`records`), credential sealing (`seal`) and how upstream answers and redirects are
//! read (`wire`). `worker` holds the adapters that exist only on wasm32 inside workerd, and the
//! hosted hub's one recorder of a person's decisions (`worker::recorder`).
#![forbid(unsafe_code)]

pub mod records;
pub mod rpc;
pub mod seal;
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
    let (a, b) = (given.as_bytes(), expected.as_bytes());
    if a.len() != b.len() || expected.is_empty() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
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

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
        assert!(!same_secret("", ""));
    }
}
