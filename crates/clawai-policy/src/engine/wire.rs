//! How the policy treats a method on the wire: decided, a look-alike of a decided one,
//! or passed through (the constants are in `crate::wire`).

use super::Policy;
use crate::glob::fold_case;
use crate::rule::loose_name;
use crate::wire::{CLIENT_DECIDED, SERVER_DECIDED, Treatment};

impl Policy {
    /// How the proxy treats `method`, sent by either side.
    pub fn treatment(&self, method: &str) -> Treatment {
        if CLIENT_DECIDED.contains(&method) || SERVER_DECIDED.contains(&method) || self.names_method(method) {
            Treatment::Decided
        } else if self.reads_as_decided(method, &CLIENT_DECIDED) || self.reads_as_decided(method, &SERVER_DECIDED) {
            Treatment::LookAlike
        } else {
            Treatment::PassedThrough
        }
    }

    /// True when `method` is not `fixed`'s or one the policy names but reads as one once
    /// trimmed of blanks and case-folded (`Tools/Call`, `tools/call\t`): JSON-RPC methods
    /// are case-sensitive, but a server that dispatches leniently would run it undecided.
    pub fn reads_as_decided(&self, method: &str, fixed: &[&str]) -> bool {
        let loose = fold_case(loose_name(method));
        fixed.iter().any(|decided| *decided != method && decided.eq_ignore_ascii_case(&loose))
            || self.names_method_loosely(method)
    }
}
