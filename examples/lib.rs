//! # streamcore-examples
//!
//! Programs for the three kinds of streamcore users, run with
//! `cargo run --example NAME` from the repository root (and by
//! `cargo test`, which runs each one's tests):
//!
//! | example | for | shows |
//! |---|---|---|
//! | `service_loop` | firmware and embedded services | a bounded configuration (one stream, capped pools, small queues), a graph captured at start, a poll-driven loop ([`service`]) written with `core` and `alloc` only; a frame lost to an injected failure while the service keeps going |
//! | `pipeline_test` | host-side tests of your own pipeline | your pipeline, generic over the platform, tested on the mock under several scheduler seeds with the hazard checker, then with injected kernel failures and out-of-memory |
//! | `fuzz_orderings` | fuzzing your own capture and free orderings | your pipeline's lifecycle in the fuzzing harness's op language, explored exhaustively for short lengths and fuzzed with random orders, checked by the harness's model-based oracle |
//! | `minimal_platform` | platform authors | the smallest real platform (a firmware-style command queue without graphs) and a device running a pipeline on it; capture calls answered with `NotSupported` |
//!
//! This library holds the part of `service_loop` that would run on the
//! firmware: it is `#![no_std]` and builds for firmware targets.

#![no_std]

extern crate alloc;

pub mod service;
