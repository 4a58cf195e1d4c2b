//! The Skills extension (`io.modelcontextprotocol/skills`) on the hub's endpoint: `skills/list`,
//! `skills/get`, `resources/directory/read` and `skill://` files by `resources/read`, each file
//! with its sha256 digest. What is served is the hub's skill library (`skills/` in the store),
//! read through rmcp's catalog, which opens files relative to that folder and never follows a
//! link out of it. Skills are text for the model: serving one grants nothing.
//!
//! The catalog is loaded on first use and again whenever `skills.lock.json` changed, so a skill
//! added, replaced or removed with `hub skills` is seen by a server already running.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rmcp::ErrorData as McpError;
use rmcp::handler::server::skill_catalog::SkillCatalog;

use crate::skills::LOCK_FILE;

/// URIs the catalog answers for.
pub const SCHEME: &str = "skill://";

/// The hub's skills as the extension serves them.
pub struct HubSkills {
    home: PathBuf,
    /// The catalog, and the lock file's modification time it was loaded at.
    loaded: Mutex<Option<(Option<SystemTime>, Arc<SkillCatalog>)>>,
}

impl HubSkills {
    pub fn new(home: PathBuf) -> HubSkills {
        HubSkills { home, loaded: Mutex::new(None) }
    }

    /// The catalog as the library is now.
    pub fn catalog(&self) -> Result<Arc<SkillCatalog>, McpError> {
        let stamp = std::fs::metadata(self.home.join(LOCK_FILE)).and_then(|m| m.modified()).ok();
        let mut loaded = self.loaded.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((seen, catalog)) = loaded.as_ref()
            && *seen == stamp
        {
            return Ok(Arc::clone(catalog));
        }
        let root = self.home.join("skills");
        if !root.exists() {
            // An empty library: no skill yet.
            std::fs::create_dir_all(&root)
                .map_err(|e| unreadable(&format!("creating {}: {e}", root.display())))?;
        }
        let catalog = Arc::new(SkillCatalog::from_dir(&root).map_err(|e| unreadable(&e.to_string()))?);
        *loaded = Some((stamp, Arc::clone(&catalog)));
        Ok(catalog)
    }
}

fn unreadable(why: &str) -> McpError {
    McpError::internal_error(
        format!(
            "the hub's skill library could not be read ({why}); run `capabilities hub skills list` to see why"
        ),
        None,
    )
}
