//! Which messages the proxy decides, so that everything that decides a call without a
//! proxy (`clawai policy test`, `clawai policy explain`) answers as the wire would.
//!
//! The proxy decides the methods of [`CLIENT_DECIDED`] and [`SERVER_DECIDED`], and any
//! method a `method` rule names; it refuses a method that differs from one of those only
//! in case or in the blanks around it (a lenient server would run it undecided); every
//! other message (`initialize`, `tools/list`, notifications…) passes through unchanged,
//! whatever the policy's default.

use clawai_protocol::methods;

/// Methods the client sends that the policy decides on.
pub const CLIENT_DECIDED: [&str; 3] = [methods::TOOLS_CALL, methods::RESOURCES_READ, methods::PROMPTS_GET];
/// Methods the server sends that the policy decides on.
pub const SERVER_DECIDED: [&str; 2] = [methods::SAMPLING_CREATE_MESSAGE, methods::ELICITATION_CREATE];

/// What the proxy does with a message of some method before any rule is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// The policy decides it.
    Decided,
    /// Refused: it reads as a decided method once trimmed and case-folded.
    LookAlike,
    /// Forwarded unchanged, without asking the policy.
    PassedThrough,
}

/// Why a message the policy does not decide was allowed.
pub const PASSED_THROUGH_REASON: &str =
    "clawai does not decide this method: the proxy forwards it unchanged (and records it)";
/// Why a look-alike of a decided method was denied.
pub const LOOK_ALIKE_REASON: &str = "the method differs from one clawai decides only in case or in the blanks \
     around it; the proxy refuses it so that a lenient server cannot run it undecided";
