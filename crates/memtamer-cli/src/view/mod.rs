//! Renderers: pure functions from data (observations, snapshots, results) to
//! the text the commands print, so they can be tested without a terminal.

pub mod demo;
pub mod gate;
pub mod status;
pub mod top;
