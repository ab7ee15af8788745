//! The gateway configuration.
