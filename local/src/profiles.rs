//! Named profiles on the local hub: `profiles/<name>.json` in the store, read and written here.
//! The record, what a profile serves, how it filters the catalog and tightens the policy are
//! core's (`capabilities_core::profile`), shared with the hosted hub, so the two cannot drift.
//! `default` is built in: every source, the hub's policy as it is.

use anyhow::{Result, bail};
use capabilities_core::catalog::{Catalog, SourceView};
pub use capabilities_core::profile::{DEFAULT, Mode, Naming, Profile};

use crate::config::{HubConfig, read_json, write_json};
use crate::store::Store;

/// Every source of `config` with tools read, as one catalog (before any profile filters it).
pub fn full_catalog(config: &HubConfig) -> Catalog {
    Catalog::new(
        config
            .sources
            .iter()
            .filter_map(|(_, manifest, connections)| {
                Some(SourceView {
                    manifest: manifest.clone()?,
                    connections: connections.connections.iter().map(|c| c.name.clone()).collect(),
                    default_connection: connections.default.clone(),
                })
            })
            .collect(),
    )
}

/// The catalog of `config` that `profile` serves.
pub fn catalog(profile: &Profile, config: &HubConfig) -> Catalog {
    profile.filter(&full_catalog(config))
}

/// The patterns of `profile` that match no tool of `config`, for a warning or an error.
pub fn unmatched<'p>(profile: &'p Profile, config: &HubConfig) -> Vec<&'p str> {
    profile.unmatched(&full_catalog(config))
}

/// Where profile `name` lives.
pub fn profile_path(name: &str) -> String {
    format!("profiles/{name}.json")
}

/// Profile names are file names: lowercase letters, digits, `-` and `_`, up to 32.
pub fn check_name(name: &str) -> Result<()> {
    Ok(capabilities_core::profile::check_name(name)?)
}

/// Profile `name`; `None` when there is none. `default` is always there.
pub fn load(store: &Store, name: &str) -> Result<Option<Profile>> {
    check_name(name)?;
    if let Some(profile) = read_json::<Profile>(store, &profile_path(name))? {
        if profile.name != name {
            bail!("profiles/{name}.json names profile `{}`: rename the file or fix its name", profile.name);
        }
        profile.check()?;
        return Ok(Some(profile));
    }
    Ok((name == DEFAULT).then(Profile::everything))
}

/// Profile `name`, or an error that lists the profiles there are.
pub fn require(store: &Store, name: &str) -> Result<Profile> {
    match load(store, name)? {
        Some(profile) => Ok(profile),
        None => bail!(
            "there is no profile `{name}`; the profiles are {} (`capabilities hub profiles create {name} --serves …` makes it)",
            names(store).join(", ")
        ),
    }
}

/// Writes a profile.
pub fn save(store: &Store, profile: &Profile) -> Result<()> {
    profile.check()?;
    write_json(store, &profile_path(&profile.name), profile)
}

/// Every profile's name, `default` first.
pub fn names(store: &Store) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(store.root().join("profiles"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok()?.strip_suffix(".json").map(str::to_owned))
        .filter(|n| check_name(n).is_ok() && n != DEFAULT)
        .collect();
    names.sort();
    names.insert(0, DEFAULT.to_owned());
    names
}
