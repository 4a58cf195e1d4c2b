//! What every command runs with: the global flags and the [`Settings`] resolved from them and
//! the environment once, before any command runs.

use clap::Args;

/// Flags accepted in any position.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Print machine-readable JSON on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// Never prompt; fail with a hint where input would be needed.
    #[arg(long, global = true)]
    pub no_input: bool,
    /// The registry index `stack install` reads (a directory or a URL). Hidden here: it is
    /// shown where it matters, on `stack install`.
    #[arg(long, global = true, value_name = "DIR|URL", hide = true)]
    pub registry: Option<String>,
}

/// Everything a command needs, resolved once from flags and the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    pub json: bool,
    pub no_input: bool,
    /// `NO_COLOR` set, or stdout is not a terminal.
    pub plain: bool,
    pub home: std::path::PathBuf,
    /// `--registry`, for `stack install`.
    pub registry: Option<String>,
}

impl Settings {
    pub fn resolve(global: &GlobalArgs) -> anyhow::Result<Settings> {
        use std::io::IsTerminal;
        Ok(Settings {
            json: global.json,
            no_input: global.no_input || !std::io::stdin().is_terminal(),
            plain: std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
                || !std::io::stdout().is_terminal(),
            home: crate::store::default_root()?,
            registry: global.registry.clone(),
        })
    }
}
