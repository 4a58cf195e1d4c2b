//! The local host: opens the store, builds the catalog and policy from it, and runs the core's
//! engine with the native adapters.

use anyhow::Result;
use capabilities_core::surface::envelope::Envelope;

use crate::cli::Settings;
use crate::store::Store;

/// An open hub, ready to run code.
pub struct Host {
    store: Store,
}

impl Host {
    pub fn open(settings: &Settings) -> Result<Host> {
        let store = Store::open(&settings.home)?;
        Ok(Host { store })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn execute(&self, _code: &str) -> Result<Envelope> {
        anyhow::bail!("the run engine is not wired into this build yet")
    }

    pub fn show_run(&self, _id: &str) -> Result<Option<Envelope>> {
        Ok(None)
    }
}
