//! The memtamer daemon: config, job selection from /proc, and the
//! sense -> decide -> act loop around the pure policies of `memtamer-core`.

pub mod config;
pub mod daemon;
pub mod kubeapi;
pub mod kubepods;
pub mod kubewatch;
pub mod procfs;
pub mod select;
pub mod socket;
