//! The invariant suite, one module per invariant; every case runs against each local target
//! (`local_stdio` and `local_http` tests under the case's name).

mod support;

mod concurrency;
mod conformance;
mod i1_secrets;
mod i2_decisions;
mod i3_authority;
mod i4_network;
mod i5_tenants;
mod i6_resume;
mod i7_budgets;
mod i8_configuration;
