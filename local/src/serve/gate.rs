//! The checks on every HTTP request's headers before the MCP layer sees it: the `Host` and any
//! `Origin` must name this server on loopback (a page on another site cannot reach it by
//! rebinding a name to 127.0.0.1), then the bearer token must match.

use http::header::{AUTHORIZATION, HOST, ORIGIN};
use http::{HeaderMap, Uri};

use super::token::Token;

/// Why a request was refused before anything ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The `Host` does not name this server on loopback (403).
    Host,
    /// An `Origin` other than this server's own (403).
    Origin,
    /// No bearer token, or the wrong one (401).
    Token,
}

impl Refusal {
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Host => "the Host header must be 127.0.0.1, localhost or [::1] with this server's port",
            Refusal::Origin => "requests from web pages of other origins are refused",
            Refusal::Token => {
                "send `Authorization: Bearer <token>` with the token from the file `http-token` in the hub's \
                 store"
            }
        }
    }
}

/// What a request must carry to reach the server on `port`.
#[derive(Debug, Clone)]
pub struct Gate {
    port: u16,
    token: Token,
}

impl Gate {
    pub fn new(port: u16, token: Token) -> Gate {
        Gate { port, token }
    }

    /// The `Host` values accepted, each with the port.
    pub fn hosts(&self) -> Vec<String> {
        ["127.0.0.1", "localhost", "[::1]"].iter().map(|host| format!("{host}:{}", self.port)).collect()
    }

    /// The `Origin` values accepted: pages served by this server itself.
    pub fn origins(&self) -> Vec<String> {
        self.hosts().into_iter().map(|host| format!("http://{host}")).collect()
    }

    /// Checks the `Host` (and the authority of an absolute request target), every `Origin`,
    /// then the bearer token, in that order.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let hosts = self.hosts();
        let allowed =
            |value: &[u8], list: &[String]| list.iter().any(|a| a.as_bytes().eq_ignore_ascii_case(value));
        let mut host = headers.get_all(HOST).iter();
        match (host.next(), host.next()) {
            (Some(value), None) if allowed(value.as_bytes(), &hosts) => {}
            _ => return Err(Refusal::Host),
        }
        if let Some(authority) = uri.authority() {
            if !allowed(authority.as_str().as_bytes(), &hosts) {
                return Err(Refusal::Host);
            }
        }
        let origins = self.origins();
        if !headers.get_all(ORIGIN).iter().all(|value| allowed(value.as_bytes(), &origins)) {
            return Err(Refusal::Origin);
        }
        let mut authorization = headers.get_all(AUTHORIZATION).iter();
        let presented = match (authorization.next(), authorization.next()) {
            (Some(value), None) => bearer(value.as_bytes()),
            _ => None,
        };
        match presented {
            Some(token) if self.token.matches(token) => Ok(()),
            _ => Err(Refusal::Token),
        }
    }
}

/// The credentials of a `Bearer` authorization value (the scheme is case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || rest.first() != Some(&b' ') {
        return None;
    }
    Some(rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    const TOKEN: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn gate() -> Gate {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(crate::serve::token::TOKEN_FILE);
        std::fs::write(&path, TOKEN).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        Gate::new(4790, Token::load_or_create(dir.path()).unwrap().0)
    }

    /// One line per request: its headers as `name=value` pairs, then what the gate said.
    fn check(cases: &[(&str, &[(&str, &str)])], expect: expect_test::Expect) {
        let gate = gate();
        let mut out = String::new();
        for (target, headers) in cases {
            let mut map = HeaderMap::new();
            for (name, value) in *headers {
                map.append(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(value).unwrap(),
                );
            }
            let uri: Uri = target.parse().unwrap();
            let said = match gate.check(&uri, &map) {
                Ok(()) => "ok".to_owned(),
                Err(refusal) => format!("{refusal:?}"),
            };
            let shown: Vec<String> =
                headers.iter().map(|(n, v)| format!("{n}={}", v.replace(TOKEN, "TOKEN"))).collect();
            out.push_str(&format!("{target} {} -> {said}\n", shown.join(" ")));
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn hosts_origins_and_tokens() {
        let good = format!("Bearer {TOKEN}");
        let lower = format!("bearer {TOKEN}");
        let wrong = format!("Bearer {}", TOKEN.replace('0', "1"));
        let basic = format!("Basic {TOKEN}");
        check(
            &[
                ("/mcp", &[("host", "127.0.0.1:4790"), ("authorization", &good)]),
                ("/mcp", &[("host", "LOCALHOST:4790"), ("authorization", &lower)]),
                (
                    "/mcp",
                    &[("host", "[::1]:4790"), ("origin", "http://localhost:4790"), ("authorization", &good)],
                ),
                ("/mcp", &[("host", "127.0.0.1:4790")]),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("authorization", &wrong)]),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("authorization", &basic)]),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("authorization", "Bearer")]),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("authorization", &good), ("authorization", &good)]),
                ("/mcp", &[("host", "evil.example:4790"), ("authorization", &good)]),
                ("/mcp", &[("host", "127.0.0.1"), ("authorization", &good)]),
                ("/mcp", &[("host", "127.0.0.1:4791"), ("authorization", &good)]),
                ("/mcp", &[("authorization", &good)]),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("host", "evil.example"), ("authorization", &good)]),
                ("http://evil.example/mcp", &[("host", "127.0.0.1:4790"), ("authorization", &good)]),
                (
                    "/mcp",
                    &[
                        ("host", "127.0.0.1:4790"),
                        ("origin", "http://evil.example"),
                        ("authorization", &good),
                    ],
                ),
                (
                    "/mcp",
                    &[
                        ("host", "127.0.0.1:4790"),
                        ("origin", "https://localhost:4790"),
                        ("authorization", &good),
                    ],
                ),
                ("/mcp", &[("host", "127.0.0.1:4790"), ("origin", "null"), ("authorization", &good)]),
                ("/mcp", &[("host", "evil.example"), ("origin", "http://evil.example")]),
            ],
            expect![[r#"
                /mcp host=127.0.0.1:4790 authorization=Bearer TOKEN -> ok
                /mcp host=LOCALHOST:4790 authorization=bearer TOKEN -> ok
                /mcp host=[::1]:4790 origin=http://localhost:4790 authorization=Bearer TOKEN -> ok
                /mcp host=127.0.0.1:4790 -> Token
                /mcp host=127.0.0.1:4790 authorization=Bearer 11112233445566778899aabbccddeeff11112233445566778899aabbccddeeff -> Token
                /mcp host=127.0.0.1:4790 authorization=Basic TOKEN -> Token
                /mcp host=127.0.0.1:4790 authorization=Bearer -> Token
                /mcp host=127.0.0.1:4790 authorization=Bearer TOKEN authorization=Bearer TOKEN -> Token
                /mcp host=evil.example:4790 authorization=Bearer TOKEN -> Host
                /mcp host=127.0.0.1 authorization=Bearer TOKEN -> Host
                /mcp host=127.0.0.1:4791 authorization=Bearer TOKEN -> Host
                /mcp authorization=Bearer TOKEN -> Host
                /mcp host=127.0.0.1:4790 host=evil.example authorization=Bearer TOKEN -> Host
                http://evil.example/mcp host=127.0.0.1:4790 authorization=Bearer TOKEN -> Host
                /mcp host=127.0.0.1:4790 origin=http://evil.example authorization=Bearer TOKEN -> Origin
                /mcp host=127.0.0.1:4790 origin=https://localhost:4790 authorization=Bearer TOKEN -> Origin
                /mcp host=127.0.0.1:4790 origin=null authorization=Bearer TOKEN -> Origin
                /mcp host=evil.example origin=http://evil.example -> Host
            "#]],
        );
    }
}
