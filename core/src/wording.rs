//! How a hub names the places where a person acts, for the words core writes to the model and
//! to people: core serves the local and the hosted hub alike, so it names no command of either
//! and each host hands its own [`HostWords`] to the engine and the surface.

/// Where a person acts on this hub, as text that goes into hints, pending calls and envelopes.
/// Each is a short phrase that reads after "with" or "run", such as a command in backquotes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostWords {
    /// Where a person decides on a waiting run without a prompt; `{run}` stands for its id.
    pub decide: String,
    /// Where a person enters a credential, for any connection.
    pub auth: String,
    /// Where a person enters the credential of one connection; `{namespace}` and `{connection}`
    /// stand for it.
    pub auth_connection: String,
    /// Where a person checks what is wrong with the hub and its sources.
    pub diagnose: String,
    /// Where a person adds a source.
    pub add_source: String,
}

impl HostWords {
    /// [`HostWords::decide`] for `run`.
    pub fn decide(&self, run: &str) -> String {
        self.decide.replace("{run}", run)
    }

    /// [`HostWords::auth_connection`] for `connection` of `namespace`.
    pub fn auth_connection(&self, namespace: &str, connection: &str) -> String {
        self.auth_connection.replace("{namespace}", namespace).replace("{connection}", connection)
    }
}
