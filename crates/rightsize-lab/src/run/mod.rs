//! One run over an emulated path and its record.

pub mod budget;
pub mod paths;
pub mod peer;
pub mod record;
pub mod runner;
