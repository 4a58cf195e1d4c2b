//! I5: tenant isolation belongs to the hosted hub; each local target says it does not apply.

use capabilities_invariants::{Applicability, Home, Kind};

use crate::support::on_each_target;

fn tenant_isolation_is_not_applicable(kind: Kind) {
    let target = kind.start(Home::new());
    assert!(
        matches!(target.tenant_isolation(), Applicability::NotApplicable(reason) if reason.contains("hosted")),
        "{}: a local target serves one person",
        target.name()
    );
}
on_each_target!(tenant_isolation_is_not_applicable);
