//! Reading a harness file: its MCP server entries (user and project scopes) and what each one
//! becomes as a hub source, with the plaintext credentials it carries set apart.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

use super::{Descriptor, ENTRY_NAME, Format};
use crate::upstream::{HeaderSlot, SourceSpec, SourceTransport};

/// Harness files larger than this are not read.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One server entry as a harness declares it.
#[derive(Debug, Clone)]
pub struct Found {
    pub harness: &'static str,
    /// `user`, or `project <path>` for Claude Code's project scopes.
    pub scope: String,
    pub name: String,
    pub entry: Value,
}

/// A credential taken from a harness file in plain text. Its value never appears in output.
#[derive(Clone)]
pub struct PlainSecret {
    pub slot: String,
    pub value: String,
}

impl std::fmt::Debug for PlainSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PlainSecret({}: ***)", self.slot)
    }
}

/// What a server entry becomes in the hub.
#[derive(Debug, Clone)]
pub struct Converted {
    pub transport: SourceTransport,
    /// Credential values found in plain text, one per slot.
    pub secrets: Vec<PlainSecret>,
    /// Slots whose value the harness takes from its own environment (`${VAR}`), by variable.
    pub from_env: Vec<(String, String)>,
    /// What the import changed about the entry, for the plan (an SSE URL taken as `/mcp`).
    pub note: Option<String>,
}

/// What the hub accepts as JSON in a harness file: JSONC, that is JSON with `//` and `/* */`
/// comments and trailing commas, as VS Code, Zed and OpenCode allow. Nothing looser.
pub fn jsonc_options() -> jsonc_parser::ParseOptions {
    jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// Parses a harness file's text into a JSON value, whatever its format.
pub fn parse(format: Format, text: &str) -> Result<Value> {
    match format {
        Format::Json => {
            let root = jsonc_parser::cst::CstRootNode::parse(text, &jsonc_options())
                .map_err(|err| anyhow::anyhow!("not valid JSON: {err}"))?;
            Ok(root.to_serde_value().unwrap_or_else(|| Value::Object(Map::new())))
        }
        Format::Toml => {
            let doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            Ok(toml_to_json(doc.as_item()))
        }
        Format::Yaml => {
            if text.trim().is_empty() {
                return Ok(Value::Object(Map::new()));
            }
            // Its own value type refuses a key given twice, which a JSON object would quietly
            // take the last of.
            serde_norway::from_str::<serde_norway::Value>(text).context("not valid YAML")?;
            serde_norway::from_str(text).context("not valid YAML")
        }
    }
}

/// Reads a harness's user file; `None` when it does not exist. Refuses huge files and anything
/// that is not a regular file.
pub fn load(harness: &Descriptor, home: &Path) -> Result<Option<(String, Value)>> {
    load_path(harness, &harness.config_path(home))
}

/// Reads one of a harness's files (its user or a project file).
pub fn load_path(harness: &Descriptor, path: &Path) -> Result<Option<(String, Value)>> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    if !meta.is_file() {
        bail!("{} is not a regular file; move it aside or fix it", path.display());
    }
    if meta.len() > MAX_FILE_BYTES {
        bail!("{} is larger than {} MB; it was not read", path.display(), MAX_FILE_BYTES / (1024 * 1024));
    }
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value = parse(harness.format, &text).with_context(|| {
        format!("{} ({}) could not be read; fix it and try again", path.display(), harness.name)
    })?;
    Ok(Some((text, value)))
}

/// Every server entry in a parsed harness file, the hub's own entry left out.
pub fn entries(harness: &Descriptor, doc: &Value) -> Vec<Found> {
    let mut found = Vec::new();
    let mut push = |scope: String, servers: Option<&Value>| {
        // Most harnesses key entries by name; Continue lists them, each with its `name`.
        let named: Vec<(String, &Value)> = match servers {
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
            Some(Value::Array(list)) => {
                list.iter().filter_map(|v| Some((v.get("name")?.as_str()?.to_owned(), v))).collect()
            }
            _ => Vec::new(),
        };
        for (name, entry) in named {
            if name == ENTRY_NAME || !entry.is_object() {
                continue;
            }
            found.push(Found { harness: harness.id, scope: scope.clone(), name, entry: entry.clone() });
        }
    };
    push("user".to_owned(), get_path(doc, harness.servers_key));
    if let Some(projects) = harness.projects {
        for (path, project) in doc.get(projects.projects_key).and_then(Value::as_object).into_iter().flatten()
        {
            push(format!("project {path}"), project.get(projects.servers_key));
        }
    }
    found
}

pub fn get_path<'a>(doc: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |value, key| value.get(key))
}

/// Whether the entry is turned off in its harness (`enabled = false`, `disabled: true`).
pub fn is_disabled(entry: &Value) -> bool {
    entry.get("enabled") == Some(&Value::Bool(false)) || entry.get("disabled") == Some(&Value::Bool(true))
}

/// What a server entry becomes as a source. Environment values and headers that look like
/// credentials become slots; their values are set apart in [`Converted::secrets`].
pub fn convert(entry: &Value) -> Result<Converted> {
    // The Cline CLI (npm `cline` 3.0.65, `cline mcp add --yes`) nests what the others keep flat:
    // `{"transport": {"type": "stdio", "command", "args", "env"}, "disabled"}` (its schema in
    // @cline/core's dist/index.js accepts both, the flat form as legacy).
    let flat;
    let entry = match entry.get("transport").and_then(Value::as_object) {
        Some(inner) => {
            let mut outer = entry.as_object().cloned().unwrap_or_default();
            outer.remove("transport");
            outer.extend(inner.iter().map(|(k, v)| (k.clone(), v.clone())));
            flat = Value::Object(outer);
            &flat
        }
        None => entry,
    };
    let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_owned);
    // `url` (most), `serverUrl` (Windsurf, Antigravity), `httpUrl` (Gemini CLI, Qwen Code),
    // `uri` (Goose).
    let url = text("httpUrl").or_else(|| text("url")).or_else(|| text("serverUrl")).or_else(|| text("uri"));
    if let Some(kind @ ("builtin" | "platform" | "frontend" | "inline_python")) =
        entry.get("type").and_then(Value::as_str)
    {
        bail!("a `{kind}` extension runs inside its harness; there is no server to import");
    }
    let mut secrets = Vec::new();
    let mut from_env = Vec::new();
    // `command` (most) or `cmd` (Goose); a string, or the whole command line as a list
    // (OpenCode, Kilo, pi's adapter).
    let command = entry.get("command").or_else(|| entry.get("cmd")).filter(|c| c.is_string() || c.is_array());
    if let Some(command) = command {
        let (command, mut args) = match command {
            Value::Array(words) => {
                let mut words = words.iter().filter_map(Value::as_str).map(str::to_owned);
                (words.next().unwrap_or_default(), words.collect())
            }
            other => (other.as_str().unwrap_or_default().to_owned(), Vec::new()),
        };
        if command.is_empty() {
            bail!("the entry's `command` is empty");
        }
        args.extend(strings(entry.get("args")));
        let mut env = BTreeMap::new();
        let mut env_slots = Vec::new();
        for (name, value) in env_map(entry).into_iter().flatten() {
            let value = match value {
                Value::String(s) => s.clone(),
                Value::Null => continue,
                other => other.to_string(),
            };
            if let Some(var) = env_reference(&value) {
                env_slots.push(name.clone());
                from_env.push((name.clone(), var));
            } else if looks_secret(name) {
                env_slots.push(name.clone());
                secrets.push(PlainSecret { slot: name.clone(), value });
            } else {
                env.insert(name.clone(), value);
            }
        }
        // Codex: variables passed through from the harness's environment.
        for name in strings(entry.get("env_vars")) {
            if !env_slots.contains(&name) {
                env_slots.push(name.clone());
                from_env.push((name.clone(), name));
            }
        }
        let cwd = text("cwd");
        return Ok(Converted {
            transport: SourceTransport::Stdio { command, args, env, env_slots, cwd, isolation: None },
            secrets,
            from_env,
            note: None,
        });
    }
    let Some(url) = url else {
        bail!("the entry has neither a `command` nor a `url`");
    };
    let sse = entry.get("type").and_then(Value::as_str) == Some("sse")
        || url.trim_end_matches('/').ends_with("/sse");
    let note = sse.then(|| format!("`{url}` is an SSE endpoint; the hub tries its streamable HTTP endpoint"));
    let url = if sse {
        // The old SSE transport is gone from the spec; servers that offered it publish streamable
        // HTTP beside it, by convention at `/mcp` where the SSE endpoint was `/sse`.
        match url.trim_end_matches('/').strip_suffix("/sse") {
            Some(base) => format!("{base}/mcp"),
            None => bail!(
                "`{url}` is an SSE endpoint and the hub speaks streamable HTTP only; add the server's \
                 streamable HTTP URL with `capabilities hub add`"
            ),
        }
    } else {
        url
    };
    let mut header_slots = Vec::new();
    for (name, value) in header_map(entry).into_iter().flatten() {
        let Some(value) = value.as_str() else { continue };
        let slot = if name.eq_ignore_ascii_case("authorization") && value.starts_with("Bearer ") {
            HeaderSlot::bearer()
        } else {
            HeaderSlot { name: name.clone(), prefix: String::new() }
        };
        let bare = value.strip_prefix(slot.prefix.as_str()).unwrap_or(value).to_owned();
        if let Some(var) = env_reference(&bare) {
            from_env.push((slot.name.clone(), var));
        } else {
            secrets.push(PlainSecret { slot: slot.name.clone(), value: bare });
        }
        header_slots.push(slot);
    }
    // Codex: `bearer_token_env_var` and `env_http_headers` name variables, not values.
    if let Some(var) = text("bearer_token_env_var") {
        if !header_slots.iter().any(|h| h.name.eq_ignore_ascii_case("authorization")) {
            header_slots.push(HeaderSlot::bearer());
            from_env.push(("Authorization".to_owned(), var));
        }
    }
    for (name, var) in entry.get("env_http_headers").and_then(Value::as_object).into_iter().flatten() {
        if let Some(var) = var.as_str() {
            header_slots.push(HeaderSlot { name: name.clone(), prefix: String::new() });
            from_env.push((name.clone(), var.to_owned()));
        }
    }
    Ok(Converted { transport: SourceTransport::Http { url, header_slots }, secrets, from_env, note })
}

/// The key two entries share when they are the same server: the command line, or the URL.
pub fn identity(transport: &SourceTransport) -> String {
    match transport {
        SourceTransport::Stdio { command, args, .. } => format!("stdio {command} {}", args.join(" ")),
        SourceTransport::Http { url, .. } => format!("http {}", url.trim_end_matches('/')),
        SourceTransport::OpenApi(api) => format!("openapi {}", api.base_url.trim_end_matches('/')),
    }
}

/// The identity of a stored source, to tell which harness entries the hub already has.
pub fn spec_identity(spec: &SourceSpec) -> String {
    identity(&spec.transport)
}

/// The entry's environment variables: `env` (most), `environment` (OpenCode, Kilo), `envs`
/// (Goose).
pub fn env_map(entry: &Value) -> Option<&Map<String, Value>> {
    ENV_KEYS.iter().find_map(|k| entry.get(*k)).and_then(Value::as_object)
}

/// The keys that may hold an entry's environment variables.
pub const ENV_KEYS: [&str; 3] = ["env", "environment", "envs"];

/// The keys that may hold an entry's HTTP headers (`http_headers` is Codex's).
pub const HEADER_KEYS: [&str; 2] = ["headers", "http_headers"];

/// The entry's HTTP headers.
pub fn header_map(entry: &Value) -> Option<&Map<String, Value>> {
    HEADER_KEYS.iter().find_map(|k| entry.get(*k)).and_then(Value::as_object)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// `${VAR}`, `${env:VAR}` or `$VAR` as a whole value: the variable's name.
fn env_reference(value: &str) -> Option<String> {
    let name = value
        .strip_prefix("${env:")
        .or_else(|| value.strip_prefix("${"))
        .and_then(|rest| rest.strip_suffix('}'))
        .or_else(|| value.strip_prefix('$'))?;
    (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| name.to_owned())
}

/// Whether an environment variable's name says it holds a credential: one of its words is
/// `TOKEN`, `SECRET`, `PASSWORD`, `PAT`, `AUTH`… or it ends in `KEY`.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> =
        upper.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()).collect();
    let secret_words = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "PASS",
        "PAT",
        "APIKEY",
        "AUTH",
        "AUTHORIZATION",
        "CREDENTIAL",
        "CREDENTIALS",
        "COOKIE",
        "BEARER",
    ];
    words.iter().any(|w| secret_words.contains(w)) || words.last().is_some_and(|w| w.ends_with("KEY"))
}

fn toml_to_json(item: &toml_edit::Item) -> Value {
    match item {
        toml_edit::Item::None => Value::Null,
        toml_edit::Item::Value(value) => toml_value(value),
        toml_edit::Item::Table(table) => {
            Value::Object(table.iter().map(|(k, v)| (k.to_owned(), toml_to_json(v))).collect())
        }
        toml_edit::Item::ArrayOfTables(tables) => Value::Array(
            tables
                .iter()
                .map(|t| Value::Object(t.iter().map(|(k, v)| (k.to_owned(), toml_to_json(v))).collect()))
                .collect(),
        ),
    }
}

fn toml_value(value: &toml_edit::Value) -> Value {
    use toml_edit::Value as T;
    match value {
        T::String(s) => Value::String(s.value().clone()),
        T::Integer(i) => Value::from(*i.value()),
        T::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        T::Boolean(b) => Value::Bool(*b.value()),
        T::Datetime(d) => Value::String(d.value().to_string()),
        T::Array(items) => Value::Array(items.iter().map(toml_value).collect()),
        T::InlineTable(table) => {
            Value::Object(table.iter().map(|(k, v)| (k.to_owned(), toml_value(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn clines_nested_transport_is_read_like_a_flat_entry() {
        // What `cline mcp add memory --yes -- node server.js` (npm `cline` 3.0.65) writes.
        let nested = convert(&json!({
            "transport": {"type": "stdio", "command": "node", "args": ["server.js"], "env": {"API_TOKEN": "t"}},
            "disabled": false
        }))
        .unwrap();
        let flat =
            convert(&json!({"command": "node", "args": ["server.js"], "env": {"API_TOKEN": "t"}})).unwrap();
        assert_eq!(identity(&nested.transport), identity(&flat.transport));
        assert_eq!(nested.secrets.len(), 1);
        let http = convert(&json!({"transport": {"type": "streamableHttp", "url": "https://x.example/mcp"}}))
            .unwrap();
        assert_eq!(identity(&http.transport), "http https://x.example/mcp");
    }

    #[test]
    fn entries_become_sources_with_credentials_set_apart() {
        let stdio = convert(&json!({
            "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x", "LOG_LEVEL": "debug", "API_KEY": "${env:MY_KEY}"}
        }))
        .unwrap();
        let http = convert(&json!({
            "type": "http", "url": "https://mcp.linear.app/mcp",
            "headers": {"Authorization": "Bearer lin_x", "X-Team": "eng"}
        }))
        .unwrap();
        let codex =
            convert(&json!({"url": "https://x.example/mcp", "bearer_token_env_var": "X_TOKEN"})).unwrap();
        expect![[r#"
            [
                Converted {
                    transport: Stdio {
                        command: "npx",
                        args: [
                            "-y",
                            "@modelcontextprotocol/server-github",
                        ],
                        env: {
                            "LOG_LEVEL": "debug",
                        },
                        env_slots: [
                            "GITHUB_PERSONAL_ACCESS_TOKEN",
                            "API_KEY",
                        ],
                        cwd: None,
                        isolation: None,
                    },
                    secrets: [
                        PlainSecret(GITHUB_PERSONAL_ACCESS_TOKEN: ***),
                    ],
                    from_env: [
                        (
                            "API_KEY",
                            "MY_KEY",
                        ),
                    ],
                    note: None,
                },
                Converted {
                    transport: Http {
                        url: "https://mcp.linear.app/mcp",
                        header_slots: [
                            HeaderSlot {
                                name: "Authorization",
                                prefix: "Bearer ",
                            },
                            HeaderSlot {
                                name: "X-Team",
                                prefix: "",
                            },
                        ],
                    },
                    secrets: [
                        PlainSecret(Authorization: ***),
                        PlainSecret(X-Team: ***),
                    ],
                    from_env: [],
                    note: None,
                },
                Converted {
                    transport: Http {
                        url: "https://x.example/mcp",
                        header_slots: [
                            HeaderSlot {
                                name: "Authorization",
                                prefix: "Bearer ",
                            },
                        ],
                    },
                    secrets: [],
                    from_env: [
                        (
                            "Authorization",
                            "X_TOKEN",
                        ),
                    ],
                    note: None,
                },
            ]
        "#]]
        .assert_debug_eq(&[stdio, http, codex]);
    }

    #[test]
    fn credential_names() {
        let names = [
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "API_KEY",
            "OPENAI_APIKEY",
            "DB_PASSWORD",
            "GITLAB_PAT",
            "x-auth",
        ];
        assert!(names.iter().all(|n| looks_secret(n)), "{names:?}");
        let plain = ["MEMORY_FILE_PATH", "LOG_LEVEL", "KEYBOARD_LAYOUT", "PATH", "TOKENIZERS_PARALLELISM"];
        assert!(plain.iter().all(|n| !looks_secret(n)), "{plain:?}");
    }

    #[test]
    fn jsonc_is_read_and_looser_json_is_not() {
        let text = "{\n  // a note\n  \"a\": \"http://x//y\", /* b */ \"c\": [1,],\n}";
        assert_eq!(parse(Format::Json, text).unwrap(), json!({"a": "http://x//y", "c": [1]}));
        assert!(parse(Format::Json, "{'a': 1}").is_err());
        assert!(parse(Format::Json, "{\"a\": 1").is_err());
        assert_eq!(parse(Format::Json, "").unwrap(), json!({}));
    }

    #[test]
    fn entry_shapes_of_other_harnesses() {
        let opencode = convert(
            &json!({"type": "local", "command": ["npx", "-y", "x"], "environment": {"X_TOKEN": "t"}}),
        )
        .unwrap();
        let goose =
            convert(&json!({"type": "stdio", "cmd": "uvx", "args": ["y"], "envs": {"LOG": "1"}})).unwrap();
        let gemini = convert(
            &json!({"httpUrl": "https://g.example/mcp", "headers": {"Authorization": "Bearer $TOK"}}),
        )
        .unwrap();
        let windsurf = convert(&json!({"serverUrl": "https://w.example/mcp"})).unwrap();
        let lines: Vec<String> = [opencode, goose, gemini, windsurf]
            .iter()
            .map(|c| format!("{} secrets={:?} env={:?}", identity(&c.transport), c.secrets, c.from_env))
            .collect();
        expect![[r#"
            [
                "stdio npx -y x secrets=[PlainSecret(X_TOKEN: ***)] env=[]",
                "stdio uvx y secrets=[] env=[]",
                "http https://g.example/mcp secrets=[] env=[(\"Authorization\", \"TOK\")]",
                "http https://w.example/mcp secrets=[] env=[]",
            ]
        "#]]
        .assert_debug_eq(&lines);
        assert!(
            convert(&json!({"type": "builtin", "name": "developer"}))
                .unwrap_err()
                .to_string()
                .contains("builtin")
        );
    }

    #[test]
    fn entries_without_a_command_or_url_are_refused() {
        expect![[r#"the entry has neither a `command` nor a `url`"#]]
            .assert_eq(&convert(&json!({"name": "x"})).unwrap_err().to_string());
    }
}
