//! JSON Schema → TypeScript: one-line signatures for `search`, declaration blocks for `describe`.
//!
//! `schema` turns a tool's untrusted schemas into a small type tree, never failing; `names` gives
//! deeper types stable names within a namespace; `render` prints them; `signature` makes the
//! one-line form; `declare` builds the pieces a `describe` answer is assembled from, at a chosen
//! level of [`Detail`].

mod declare;
mod names;
mod render;
mod schema;
mod signature;

pub use declare::{DETAILS, Detail};
pub(crate) use declare::{NamespaceTypes, Piece};
pub(crate) use names::TypeRef;
pub use render::DocMode;
pub use signature::signature_line;
