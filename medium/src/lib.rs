//! manet-medium: the testbed's wireless medium (issue 6, docs/medium.md).
//!
//! Layout: the pure event core (`core`) with its models (`params`, `propagation`, `errmodel`,
//! `mobility`, `rng`), the wire format (`wire`), and the two drivers that run the core: in
//! virtual time (`virt`) and in lockstep with CLOCK_MONOTONIC behind the routers' sockets
//! (`realtime`, the only module that touches the OS).

pub mod config;
pub mod core;
pub mod errmodel;
pub mod mobility;
pub mod params;
pub mod propagation;
pub mod realtime;
pub mod rng;
pub mod stats;
pub mod virt;
pub mod wire;

/// Station id meaning "every station" (docs/interfaces.md section 1).
pub const BROADCAST: u32 = 0xFFFF_FFFF;
/// Largest payload of a TX (the 802.11 MSDU limit).
pub const MAX_PAYLOAD: usize = 2304;
