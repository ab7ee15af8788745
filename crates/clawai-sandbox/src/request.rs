//! What a person asked for one server: off, `auto` or `require`, and grants.

use std::path::PathBuf;

use crate::grant::NetworkGrant;

/// Whether, and how strictly, a server is sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Not sandboxed.
    #[default]
    Off,
    /// Sandboxed with everything this kernel can enforce; what it cannot is said.
    Auto,
    /// Sandboxed with everything the profile asks, or not started.
    Require,
}

impl Mode {
    /// The spellings accepted (`--sandbox`, a gateway server's `"sandbox"`).
    pub const NAMES: [(&'static str, Mode); 3] = [("auto", Mode::Auto), ("require", Mode::Require), ("off", Mode::Off)];

    /// The mode spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<Mode> {
        Mode::NAMES.iter().find(|(name, _)| *name == text).map(|(_, mode)| *mode)
    }

    /// As spelled on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Auto => "auto",
            Mode::Require => "require",
        }
    }
}

/// What a person asked for one server: the mode, and grants added to the `auto` profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Off, auto or require.
    pub mode: Mode,
    /// Paths the server may read (and execute), besides the profile's.
    pub read: Vec<PathBuf>,
    /// Paths the server may read and write, besides the profile's.
    pub write: Vec<PathBuf>,
    /// The network the server may reach; empty: the profile's default (`none` unless
    /// the server is known to need more). Given, it replaces that default.
    pub network: Vec<NetworkGrant>,
}

impl Request {
    /// True when the server is to be sandboxed.
    pub fn is_on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// The arguments of `clawai proxy` that ask for this sandbox (`--sandbox auto
    /// --sandbox-read P …`): what `clawai wrap --sandbox` writes into an entry.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--sandbox".to_owned(), self.mode.as_str().to_owned()];
        for path in &self.read {
            args.extend(["--sandbox-read".to_owned(), path.display().to_string()]);
        }
        for path in &self.write {
            args.extend(["--sandbox-write".to_owned(), path.display().to_string()]);
        }
        for grant in &self.network {
            args.extend(["--sandbox-network".to_owned(), grant.to_string()]);
        }
        args
    }
}
