//! One grant of a profile: a path and how it may be used, or a piece of the network.

use std::fmt;
use std::path::PathBuf;

use crate::error::SandboxError;

/// How a granted path may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// Read files, list directories, execute programs.
    Read,
    /// Everything `Read` allows, and create, write, truncate, rename and remove.
    Write,
}

impl Access {
    /// As written in `clawai sandbox explain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// A path the server may use (the file, or the directory and everything beneath it),
/// and why the profile grants it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The path.
    pub path: PathBuf,
    /// How it may be used.
    pub access: Access,
    /// Why it is granted, in words.
    pub why: String,
}

/// A piece of the network a server may reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetworkGrant {
    /// No network at all.
    None,
    /// The host's loopback (`127.0.0.1`, `::1`): servers on this machine.
    Loopback,
    /// TCP to one host and port.
    Endpoint {
        /// The host as given (a name or an address).
        host: String,
        /// The port.
        port: u16,
    },
    /// Any host.
    Any,
}

impl NetworkGrant {
    /// Reads `none`, `loopback`, `any` or `HOST:PORT` (`[ADDRESS]:PORT` for IPv6).
    pub fn parse(text: &str) -> Result<NetworkGrant, SandboxError> {
        let bad = || SandboxError::Network(text.to_owned());
        match text {
            "none" => return Ok(NetworkGrant::None),
            "loopback" => return Ok(NetworkGrant::Loopback),
            "any" => return Ok(NetworkGrant::Any),
            _ => {}
        }
        let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
        let host = match host.strip_prefix('[') {
            Some(inner) => inner.strip_suffix(']').ok_or_else(bad)?,
            None if host.contains(':') => return Err(bad()),
            None => host,
        };
        let port: u16 = port.parse().map_err(|_| bad())?;
        let valid_host = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || ".-:_".contains(c));
        if !valid_host || port == 0 {
            return Err(bad());
        }
        Ok(NetworkGrant::Endpoint { host: host.to_owned(), port })
    }

    /// Reads several grants and checks they go together (`none` stands alone).
    pub fn parse_all<S: AsRef<str>>(texts: &[S]) -> Result<Vec<NetworkGrant>, SandboxError> {
        let grants: Vec<NetworkGrant> =
            texts.iter().map(|text| NetworkGrant::parse(text.as_ref())).collect::<Result<_, _>>()?;
        if grants.len() > 1
            && let Some(other) = grants.iter().find(|grant| **grant != NetworkGrant::None)
            && grants.contains(&NetworkGrant::None)
        {
            return Err(SandboxError::NoneWithOthers(other.to_string()));
        }
        Ok(grants)
    }
}

impl fmt::Display for NetworkGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetworkGrant::None => f.write_str("none"),
            NetworkGrant::Loopback => f.write_str("loopback"),
            NetworkGrant::Any => f.write_str("any"),
            NetworkGrant::Endpoint { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            NetworkGrant::Endpoint { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_grants_read_as_written_and_print_back() {
        for text in ["none", "loopback", "any", "api.github.com:443", "[::1]:8080", "127.0.0.1:3000"] {
            assert_eq!(NetworkGrant::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn a_grant_without_a_port_or_with_a_bad_one_is_refused() {
        for text in ["example.com", "example.com:", "example.com:0", "example.com:70000", ":443", "::1:80", "a b:1"] {
            assert!(NetworkGrant::parse(text).is_err(), "{text} was accepted");
        }
    }

    #[test]
    fn none_stands_alone() {
        assert!(NetworkGrant::parse_all(&["none", "loopback"]).is_err());
        assert_eq!(NetworkGrant::parse_all(&["none", "none"]).unwrap().len(), 2);
        assert_eq!(NetworkGrant::parse_all(&["loopback", "a.b:1"]).unwrap().len(), 2);
    }
}
