//! # gradops-cli
//!
//! The `gradops` command over the [`gradops`] library: `gradops run` (one op from a case
//! file, [`case`], with its `.npy` files, [`array`](mod@array)), `gradops info` and
//! `gradops bench` (the SPEC's benchmark workloads, [`bench`](mod@bench)). The command's
//! dependencies (clap, serde, serde_json, npyz) live here, so the library's own dependency
//! tree holds only what the ops need.

#![warn(missing_docs)]

pub mod array;
pub mod bench;
pub mod case;
pub use array::HostArray;
