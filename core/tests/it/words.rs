//! The words the local hub uses for where a person acts, as the tests' host hands them to the
//! engine and the surface (core itself names no hub's commands).

use capabilities_core::wording::HostWords;

pub(crate) fn local() -> HostWords {
    HostWords {
        decide: "`capabilities hub approve {run}`".to_owned(),
        auth: "`capabilities hub auth`".to_owned(),
        auth_connection: "`capabilities hub auth {namespace} --connection {connection}`".to_owned(),
        diagnose: "`capabilities hub doctor`".to_owned(),
        add_source: "`capabilities hub add`".to_owned(),
    }
}
