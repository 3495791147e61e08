//! The integration tests: one test binary, one module per concern. Each
//! test starts its own `redis-server` with the built module loaded
//! ([`harness`]); test names are `module::test` (`cargo test --test it
//! expiry::` runs one concern).
//!
//! `refuse` checks the refusal by a server older than Redis 7.0 and checks
//! nothing unless `XSET_OLD_SERVER` names one: `scripts/test --matrix` runs
//! it alone on Redis 6.2 (`cargo test --test it refuse::`) and skips it on
//! the other servers. `memcheck` runs the server under valgrind and is
//! ignored unless asked for (`-- --ignored`): `scripts/test --matrix` runs it
//! alone on the default server. A new concern is a new file here, declared below.

mod harness;

mod acl;
mod addex;
mod algebra;
mod arity;
mod clock;
mod cluster;
mod commands;
mod config;
mod defrag;
mod docs;
mod durability;
mod errors;
mod events;
mod expiry;
mod faults;
mod glob;
mod grammar;
mod isolation;
mod layers;
mod memcheck;
mod model;
mod notify;
mod notify_propagation;
mod pop;
mod python;
mod readme;
mod refuse;
mod replication;
mod resp3;
mod version;
mod windows;
