//! The invariant suite, one module per invariant; every case runs against each target
//! (`local_stdio`, `local_http` and `hosted` tests under the case's name), and `parity` holds
//! local and hosted to the same search and describe text.

mod support;

mod concurrency;
mod conformance;
mod conformance_client;
mod i1_secrets;
mod i2_decisions;
mod i3_authority;
mod i4_network;
mod i5_tenants;
mod i6_resume;
mod i7_budgets;
mod i8_configuration;
mod parity;
