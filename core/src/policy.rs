//! Policy: rules on a source or a tool, optionally narrowed to a connection, that decide each
//! call — allow, ask or deny.

use serde::{Deserialize, Serialize};

/// What policy says about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}
