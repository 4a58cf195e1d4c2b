//! The pages a person sees while signing in: the consent page (which client, where it sends
//! them back, allow or refuse; a form POST with a CSRF token, no JavaScript) and the error
//! page shown when a request cannot safely go back to its client.

use super::client::Client;

pub use capabilities_core::approval::page::escape;

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;\
line-height:1.5}button{font-size:1rem;padding:.5rem 1.2rem;margin-right:.6rem}.warn{color:#8a4b00}\
code{background:#f3f3f3;padding:0 .2rem}";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    )
}

/// Where a redirect URI sends the person, as shown: its host (and port).
pub fn redirect_host(redirect_uri: &str) -> String {
    url::Url::parse(redirect_uri)
        .ok()
        .and_then(|u| {
            u.host_str().map(|h| match u.port() {
                Some(p) => format!("{h}:{p}"),
                None => h.to_owned(),
            })
        })
        .unwrap_or_else(|| redirect_uri.to_owned())
}

/// The consent page for `client`, posting `signin` and `csrf` back to `/oauth/consent`.
pub fn consent(
    client: &Client,
    redirect_uri: &str,
    scope: &str,
    account: &str,
    signin: &str,
    csrf: &str,
) -> String {
    let host = redirect_host(redirect_uri);
    let loopback = url::Url::parse(redirect_uri)
        .ok()
        .is_some_and(|u| u.host().is_some_and(|h| super::client::is_loopback_host(&h)));
    let who = if client.document {
        format!(
            "<p>Its client ID is <code>{}</code>, published by <strong>{}</strong>.</p>",
            escape(&client.id),
            escape(&redirect_host(&client.id))
        )
    } else {
        "<p>It registered itself with this hub; its name is its own claim.</p>".to_owned()
    };
    let warn = if loopback {
        "<p class=\"warn\">It sends you back to a program on this computer. Allow only if you just \
         started this sign-in from a program you trust.</p>"
    } else {
        ""
    };
    let body = format!(
        "<h1>Allow {name}?</h1><p><strong>{name}</strong> asks to use your capabilities hub \
         (scope <code>{scope}</code>) as <strong>{account}</strong>.</p>{who}\
         <p>If you allow it, you go back to <strong>{host}</strong>.</p>{warn}\
         <form method=\"post\" action=\"/oauth/consent\">\
         <input type=\"hidden\" name=\"signin\" value=\"{signin}\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <button type=\"submit\" name=\"decision\" value=\"allow\">Allow</button>\
         <button type=\"submit\" name=\"decision\" value=\"deny\">Refuse</button></form>",
        name = escape(&client.name),
        scope = escape(scope),
        account = escape(account),
        host = escape(&host),
        signin = escape(signin),
        csrf = escape(csrf),
    );
    page(&format!("Allow {}?", client.name), &body)
}

/// A page saying why the sign-in stopped here.
pub fn error(message: &str) -> String {
    page(
        "Sign-in stopped",
        &format!(
            "<h1>Sign-in stopped</h1><p>{}</p><p>Nothing was sent to the application.</p>",
            escape(message)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::client::AuthMethod;
    use super::*;

    #[test]
    fn the_consent_page_names_the_client_and_where_it_goes_back() {
        let client = Client {
            id: "https://app.example.com/client.json".into(),
            name: "<script>App</script>".into(),
            redirect_uris: vec![],
            auth: AuthMethod::None,
            secret_digest: None,
            document: true,
        };
        let html = consent(&client, "https://claude.ai/api/mcp/auth_callback", "mcp", "alice", "s1", "c\"1");
        assert!(html.contains("&lt;script&gt;App&lt;/script&gt;"), "{html}");
        assert!(html.contains("<strong>claude.ai</strong>"), "{html}");
        assert!(html.contains("published by <strong>app.example.com</strong>"), "{html}");
        assert!(html.contains("value=\"c&quot;1\""), "{html}");
        assert!(html.contains("method=\"post\""), "{html}");
        assert!(!html.contains("<script>"), "{html}");
        let local = consent(&client, "http://127.0.0.1:5000/cb", "mcp", "alice", "s1", "c1");
        assert!(local.contains("127.0.0.1:5000") && local.contains("class=\"warn\""), "{local}");
    }
}
