//! Two small MCP servers shipped inside the binary for `hub demo`: an issue tracker and a team
//! chat, served over stdio by `capabilities example-server tracker|chat` so the demo takes the
//! same path as any real source. Their data is fixed; the chat keeps what is posted in memory.

use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rmcp::ErrorData as McpError;
use rmcp::ServiceExt;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

/// Which demo server to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoServer {
    Tracker,
    Chat,
}

/// Serves `which` on stdin and stdout until the client closes stdin.
pub fn serve(which: DemoServer) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the example server's runtime")?;
    runtime.block_on(async {
        let server = DemoHandler { which, posted: Arc::new(Mutex::new(Vec::new())) };
        let service =
            server.serve(rmcp::transport::stdio_pipes()).await.context("starting the example server")?;
        service.waiting().await.context("serving the example")?;
        Ok(())
    })
}

#[derive(Clone)]
struct DemoHandler {
    which: DemoServer,
    posted: Arc<Mutex<Vec<Value>>>,
}

const ISSUES: &[(u32, &str, &str, &str, u8)] = &[
    (101, "Login fails when the password contains a space", "open", "bug", 1),
    (102, "Dark mode toggle forgets its setting", "open", "bug", 3),
    (103, "Export to CSV drops the last row", "open", "bug", 2),
    (104, "Add keyboard shortcuts for search", "open", "feature", 2),
    (105, "Crash on startup with an empty config file", "open", "bug", 1),
    (106, "Typo on the billing page", "closed", "bug", 4),
    (107, "Slow search over 10k projects", "open", "bug", 2),
    (108, "Support SSO with Okta", "open", "feature", 1),
    (109, "Avatar upload rejects PNG files", "open", "bug", 3),
    (110, "Old API tokens never expire", "closed", "bug", 1),
];

const CHANNELS: &[(&str, &str)] =
    &[("eng", "Engineering"), ("support", "Customer support"), ("random", "Everything else")];

fn object(schema: Value) -> Arc<Map<String, Value>> {
    match schema {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

fn read_only(tool: Tool) -> Tool {
    tool.with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false))
}

fn tools(which: DemoServer) -> Vec<Tool> {
    match which {
        DemoServer::Tracker => vec![
            read_only(Tool::new(
                "list_issues",
                "List issues, optionally filtered by state and label. Returns id, title, state, label and priority (1 is most urgent).",
                object(json!({
                    "type": "object",
                    "properties": {
                        "state": { "type": "string", "enum": ["open", "closed"], "description": "Only issues in this state." },
                        "label": { "type": "string", "description": "Only issues with this label, e.g. \"bug\"." }
                    }
                })),
            )),
            read_only(Tool::new(
                "get_issue",
                "Get one issue by its id.",
                object(json!({
                    "type": "object",
                    "properties": { "id": { "type": "integer", "description": "The issue number." } },
                    "required": ["id"]
                })),
            )),
        ],
        DemoServer::Chat => vec![
            read_only(Tool::new(
                "list_channels",
                "List the chat channels.",
                object(json!({ "type": "object", "properties": {} })),
            )),
            Tool::new(
                "post_message",
                "Post a message to a channel, visible to everyone in it.",
                object(json!({
                    "type": "object",
                    "properties": {
                        "channel": { "type": "string", "description": "Channel name without #, e.g. \"eng\"." },
                        "text": { "type": "string", "description": "The message, plain text." }
                    },
                    "required": ["channel", "text"]
                })),
            )
            .with_annotations(ToolAnnotations::new().read_only(false).destructive(false).open_world(true)),
        ],
    }
}

impl DemoHandler {
    fn call(&self, name: &str, args: &Map<String, Value>) -> Result<Value, String> {
        match (self.which, name) {
            (DemoServer::Tracker, "list_issues") => {
                let state = args.get("state").and_then(Value::as_str);
                let label = args.get("label").and_then(Value::as_str);
                let issues: Vec<Value> = ISSUES
                    .iter()
                    .filter(|i| state.is_none_or(|s| s == i.2) && label.is_none_or(|l| l == i.3))
                    .map(|&(id, title, state, label, priority)| {
                        json!({ "id": id, "title": title, "state": state, "label": label, "priority": priority })
                    })
                    .collect();
                Ok(json!({ "issues": issues }))
            }
            (DemoServer::Tracker, "get_issue") => {
                let id = args.get("id").and_then(Value::as_u64).ok_or("`id` must be an issue number")?;
                ISSUES
                    .iter()
                    .find(|i| u64::from(i.0) == id)
                    .map(|&(id, title, state, label, priority)| {
                        json!({ "id": id, "title": title, "state": state, "label": label, "priority": priority })
                    })
                    .ok_or_else(|| format!("there is no issue {id}"))
            }
            (DemoServer::Chat, "list_channels") => Ok(json!({
                "channels": CHANNELS.iter().map(|(name, topic)| json!({ "name": name, "topic": topic })).collect::<Vec<_>>()
            })),
            (DemoServer::Chat, "post_message") => {
                let channel = args.get("channel").and_then(Value::as_str).ok_or("`channel` is required")?;
                let text = args.get("text").and_then(Value::as_str).ok_or("`text` is required")?;
                if !CHANNELS.iter().any(|(name, _)| *name == channel) {
                    return Err(format!("there is no channel #{channel}"));
                }
                let mut posted = self.posted.lock().map_err(|_| "the chat's state is poisoned")?;
                let message = json!({ "id": posted.len() + 1, "channel": channel, "text": text });
                posted.push(message.clone());
                Ok(json!({ "posted": message }))
            }
            (_, other) => Err(format!("there is no tool `{other}`")),
        }
    }
}

impl ServerHandler for DemoHandler {
    fn get_info(&self) -> ServerConfig {
        let name = match self.which {
            DemoServer::Tracker => "example-tracker",
            DemoServer::Chat => "example-chat",
        };
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(name, env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools(self.which)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let result = match self.call(&request.name, &args) {
            Ok(value) => {
                let mut result = CallToolResult::structured(value.clone());
                result.content = vec![ContentBlock::text(value.to_string())];
                result
            }
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        Ok(result.into())
    }
}
