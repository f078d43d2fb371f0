//! The Redis primitives' integration tests, one binary: `make test` runs
//! it a second time on a cluster of three masters (`SLUICE_TEST_REDIS=cluster`),
//! and a cluster takes about 2 s to form, once per test binary: as fifteen
//! binaries that was 50 s of the run, as one it is a few.

mod backlog;
mod backlog_hand_over;
mod bucket;
mod connect;
mod credential_state;
mod delivery;
mod failover;
mod gate;
mod group_ledger;
mod keys;
mod limiter;
mod lock;
mod mall_park;
mod sheet_buffer;
mod sheet_flow;
mod trace_and_store;
