//! Sandbox drivers: where the model's code runs. The port a driver implements ([`Sandbox`],
//! handed a [`Bridge`] per attempt) and its vocabulary live in [`crate::ports`] with the other
//! ports; this module re-exports them beside the one driver, [`quickjs`], and the guest
//! [`prelude`] it loads.
//!
//! A driver runs the prepared code until it returns, throws, hits a limit, or the engine asks
//! it to suspend. Every way out of the guest goes through [`Bridge`]; the driver itself decides
//! nothing about tools. Arguments and results cross the boundary as JSON.

mod cancel;
pub mod prelude;
#[cfg(feature = "quickjs")]
pub mod quickjs;

pub use crate::ports::{
    Attempt, AttemptEnd, AttemptReport, Bridge, GuestCall, GuestError, GuestNamespace, GuestReply, LimitKind,
    Sandbox,
};
pub use crate::record::ToolFailure;
pub use cancel::Cancel;
