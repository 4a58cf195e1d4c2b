//! A call's arguments → the HTTP request of its operation.
