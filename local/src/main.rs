//! `capabilities`, the native binary: the local hub (store, keychain, MCP sources and server,
//! approval page) and its CLI, built over `capabilities-core`.

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    eprintln!("capabilities {version}: the hub commands arrive with the local hub and CLI work");
}
