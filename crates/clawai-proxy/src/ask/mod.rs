//! Asking a person about a `prompt` decision: the pieces every transport shares.
//!
//! - [`key`]: one digest per call, however its arguments are spelled;
//! - [`form`]: the question as an `elicitation/create` form, and the answer read strictly;
//! - [`seal`]: the sealed `requestState` of 2026-07-28 `input_required` results.

pub mod form;
pub mod key;
pub mod seal;
