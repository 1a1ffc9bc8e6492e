//! Platform-level tests of `streamcore-hip` on a real (or HIP-on-CUDA)
//! device. Without a runtime or device each test prints a visible
//! `SKIPPED: <reason>` line on stderr and returns without asserting anything
//! about the device; the constructor's `NotAvailable` path is tested by
//! `not_available`, which runs everywhere.

mod common;
mod graph;
mod kernel;
mod not_available;
mod smoke;
mod sticky;
mod storage;
mod vmm;
