//! The `auto` profile: what a server needs to start and to do what it was given, derived
//! from its command line. The system's runtime (`/usr`, the loader, the `/etc` files
//! runtimes read, `/dev/null`…), the program's own prefix (a pyenv, an nvm, a
//! virtual environment), the package manager's cache for `npx` and `uvx`, and the paths
//! given as arguments: a directory a server is given (server-filesystem's roots, a git
//! server's repository) may be read and written; a file (a script) may be read, with
//! the package it belongs to.

use std::path::{Component, Path, PathBuf};

use crate::error::SandboxError;
use crate::grant::{Access, Grant, NetworkGrant};
use crate::request::Request;

/// What the profile is derived from: the command line, where it runs, and the
/// variables of its environment that locate caches (`HOME`, `PATH`, `XDG_CACHE_HOME`,
/// `npm_config_cache`, `UV_CACHE_DIR`…).
#[derive(Debug, Clone)]
pub struct ServerContext {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// The working directory the server starts in (relative arguments are read from it).
    pub cwd: PathBuf,
    /// The server's environment (only the variables named above are read).
    pub vars: Vec<(String, String)>,
}

impl ServerContext {
    /// The context of a server started with this process's environment and working
    /// directory, or `cwd`.
    pub fn here(command: &[String], cwd: Option<&Path>) -> ServerContext {
        let cwd = cwd.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| "/".into());
        let vars = std::env::vars().filter(|(name, _)| ServerContext::READ.contains(&name.as_str())).collect();
        ServerContext { command: command.to_vec(), cwd, vars }
    }

    /// The variables the profile reads.
    pub const READ: [&'static str; 9] = [
        "HOME",
        "PATH",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "npm_config_cache",
        "NPM_CONFIG_CACHE",
        "UV_CACHE_DIR",
        "PYTHONUSERBASE",
    ];

    fn var(&self, name: &str) -> Option<&str> {
        self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }

    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }

    /// An XDG base directory: `$VARIABLE`, else `~/fallback`.
    fn xdg(&self, variable: &str, fallback: &str) -> Option<PathBuf> {
        self.var(variable).map(PathBuf::from).or_else(|| self.home().map(|home| home.join(fallback)))
    }

    /// The program as the system will find it: a path as given, else the first match in
    /// `PATH`.
    fn program(&self) -> Option<PathBuf> {
        let program = self.command.first()?;
        if program.contains('/') {
            return Some(self.absolute(program));
        }
        let path = self.var("PATH")?;
        path.split(':').filter(|dir| !dir.is_empty()).map(|dir| Path::new(dir).join(program)).find(|p| p.is_file())
    }

    /// The program's file name, as found and as its links resolve (`npx`, `npx-cli.js`).
    fn program_names(&self) -> Vec<String> {
        let found = self.program();
        let resolved = found.as_ref().and_then(|p| std::fs::canonicalize(p).ok());
        [found, resolved]
            .into_iter()
            .flatten()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect()
    }

    fn absolute(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() { path.to_path_buf() } else { self.cwd.join(path) }
    }
}

/// What a sandboxed server may use: paths, and the network.
#[derive(Debug, Clone, Default)]
pub struct Profile {
    /// The paths, each with why.
    pub grants: Vec<Grant>,
    /// The network it may reach.
    pub network: Vec<NetworkGrant>,
    /// Why the network is what it is.
    pub network_why: String,
    /// Variables set in the server's environment, with why: without the network, `npx`
    /// and `uvx` are told to use their caches instead of retrying the registry.
    pub env: Vec<(String, String, String)>,
}

/// Files and directories of the system every runtime needs read: the programs and
/// libraries, the loader, and the `/etc` files the C library, Node and Python read
/// (names, time zone, certificates, name resolution).
const SYSTEM_READ: [(&str, &str); 26] = [
    ("/usr", "programs, libraries and the runtimes' own files"),
    ("/bin", "programs (often a link to /usr/bin)"),
    ("/sbin", "programs (often a link to /usr/sbin)"),
    ("/lib", "libraries and the loader (often a link to /usr/lib)"),
    ("/lib64", "the loader (often a link to /usr/lib64)"),
    ("/lib32", "32-bit libraries"),
    ("/etc/ld.so.cache", "where the loader finds libraries"),
    ("/etc/ld.so.conf", "where the loader finds libraries"),
    ("/etc/ld.so.conf.d", "where the loader finds libraries"),
    ("/etc/alternatives", "the system's choice of programs (Debian's links)"),
    ("/etc/localtime", "the time zone"),
    ("/etc/timezone", "the time zone"),
    ("/etc/ssl", "TLS certificates"),
    ("/etc/ca-certificates", "TLS certificates"),
    ("/etc/pki", "TLS certificates"),
    ("/etc/resolv.conf", "name resolution"),
    ("/etc/hosts", "name resolution"),
    ("/etc/nsswitch.conf", "name resolution"),
    ("/etc/host.conf", "name resolution"),
    ("/etc/gai.conf", "name resolution"),
    ("/etc/passwd", "user names (the runtimes look up the user)"),
    ("/etc/group", "group names"),
    ("/etc/mime.types", "file types"),
    ("/etc/locale.alias", "locale names (the C library reads it through /usr/share/locale)"),
    ("/etc/os-release", "the system's name"),
    ("/proc", "the process's own information (/proc/self); other processes' are refused by Landlock"),
];

/// Devices: the null device is written to, the others read.
const DEVICES: [(&str, Access); 6] = [
    ("/dev/null", Access::Write),
    ("/dev/zero", Access::Read),
    ("/dev/full", Access::Read),
    ("/dev/random", Access::Read),
    ("/dev/urandom", Access::Read),
    ("/dev/fd", Access::Read),
];

/// Servers known to need the network, by a word of their command line (a package's
/// name, with or without a version).
const KNOWN_NETWORK: [(&str, &str); 4] = [
    ("mcp-server-fetch", "any"),
    ("@modelcontextprotocol/server-github", "api.github.com:443"),
    ("@modelcontextprotocol/server-brave-search", "api.search.brave.com:443"),
    ("@modelcontextprotocol/server-puppeteer", "any"),
];

impl Profile {
    /// The `auto` profile of the server, with the request's grants added.
    pub fn auto(context: &ServerContext, request: &Request) -> Result<Profile, SandboxError> {
        let mut profile = Profile::default();
        for (path, why) in SYSTEM_READ {
            profile.add(Path::new(path), Access::Read, why);
        }
        for (path, access) in DEVICES {
            profile.add(Path::new(path), access, "a device every runtime uses");
        }
        profile.add_program(context);
        profile.add_package_managers(context);
        profile.add_arguments(context);
        for (paths, access) in [(&request.read, Access::Read), (&request.write, Access::Write)] {
            for path in paths {
                let absolute = context.absolute(&path.to_string_lossy());
                std::fs::metadata(&absolute).map_err(|source| SandboxError::Grant { path: path.clone(), source })?;
                profile.add(&absolute, access, &format!("granted by --sandbox-{}", access.as_str()));
            }
        }
        profile.set_network(context, request);
        profile.set_offline(context);
        Ok(profile)
    }

    /// Adds a grant of an existing path; a path already granted keeps the wider access.
    fn add(&mut self, path: &Path, access: Access, why: &str) {
        if std::fs::metadata(path).is_err() {
            return;
        }
        if let Some(known) = self.grants.iter_mut().find(|g| g.path == path) {
            known.access = known.access.max(access);
            return;
        }
        self.grants.push(Grant { path: path.to_path_buf(), access, why: why.to_owned() });
    }

    /// The program's prefix (the directory above its `bin`), both as found in `PATH`
    /// and as its links resolve: a virtual environment and the Python it was made from,
    /// a pyenv shim and the pyenv, an nvm's Node.
    fn add_program(&mut self, context: &ServerContext) {
        let Some(found) = context.program() else { return };
        let resolved = std::fs::canonicalize(&found).unwrap_or_else(|_| found.clone());
        for path in [&found, &resolved] {
            let prefix = prefix_of(path);
            if !self.covered(&prefix) {
                self.add(&prefix, Access::Read, "the program's installation (its prefix)");
            }
        }
    }

    /// The caches and configuration of the package managers the command runs through.
    fn add_package_managers(&mut self, context: &ServerContext) {
        let names = context.program_names();
        let runs = |candidates: &[&str]| names.iter().any(|n| candidates.iter().any(|c| n == c || n.starts_with(c)));
        let home = context.home();
        if runs(&["npx", "npm", "node", "pnpm", "yarn", "bun", "npx-cli.js", "npm-cli.js"]) {
            let cache = context
                .var("npm_config_cache")
                .or_else(|| context.var("NPM_CONFIG_CACHE"))
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".npm")));
            if let Some(cache) = cache {
                self.add(&cache, Access::Write, "npm's cache: npx installs and runs packages from it");
            }
            if let Some(home) = &home {
                self.add(&home.join(".npmrc"), Access::Read, "npm's configuration");
            }
        }
        if runs(&["uvx", "uv"]) {
            if let Some(cache) = context
                .var("UV_CACHE_DIR")
                .map(PathBuf::from)
                .or_else(|| context.xdg("XDG_CACHE_HOME", ".cache").map(|c| c.join("uv")))
            {
                self.add(&cache, Access::Write, "uv's cache: uvx installs and runs packages from it");
            }
            if let Some(data) = context.xdg("XDG_DATA_HOME", ".local/share") {
                self.add(&data.join("uv"), Access::Write, "uv's Pythons and tools");
            }
            if let Some(config) = context.xdg("XDG_CONFIG_HOME", ".config") {
                self.add(&config.join("uv"), Access::Read, "uv's configuration");
            }
        }
        if runs(&["python", "uv"]) {
            let user_base = context.var("PYTHONUSERBASE").map(PathBuf::from).or_else(|| home.map(|h| h.join(".local")));
            if let Some(base) = user_base {
                self.add(&base.join("lib"), Access::Read, "Python's user site packages");
            }
        }
    }

    /// The paths given as arguments (`/dir`, `--root=/dir`): a directory may be read
    /// and written (it was given to the server to work in), a file read, with the
    /// package it belongs to (a script's `node_modules`, a Python script's directory).
    fn add_arguments(&mut self, context: &ServerContext) {
        for arg in context.command.iter().skip(1) {
            let value = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with('-') => value,
                _ => arg.as_str(),
            };
            if value.is_empty() || value.starts_with('-') || value.starts_with('@') {
                continue;
            }
            if !(value.starts_with('/') || value.starts_with('.') || value.starts_with('~') || value.contains('/')) {
                continue;
            }
            let expanded = match (value.strip_prefix("~/"), context.home()) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => context.absolute(value),
            };
            let Ok(metadata) = std::fs::metadata(&expanded) else { continue };
            if metadata.is_dir() {
                self.add(&expanded, Access::Write, &format!("given to the server as an argument ({arg})"));
                // The target of a link given as a root, which is where its files are.
                if let Ok(real) = std::fs::canonicalize(&expanded)
                    && real != expanded
                {
                    self.add(&real, Access::Write, &format!("where the argument {arg} leads"));
                }
            } else {
                let real = std::fs::canonicalize(&expanded).unwrap_or(expanded);
                let package = package_of(&real, context.home().as_deref());
                if !self.covered(&package) {
                    let why = if package == real {
                        format!("given to the server as an argument ({arg})")
                    } else {
                        format!("the code the argument {arg} belongs to")
                    };
                    self.add(&package, Access::Read, &why);
                }
            }
        }
    }

    fn set_network(&mut self, context: &ServerContext, request: &Request) {
        if !request.network.is_empty() {
            self.network = request.network.clone();
            self.network_why = "granted by --sandbox-network".to_owned();
            return;
        }
        let known = KNOWN_NETWORK.iter().find(|(word, _)| {
            context.command.iter().any(|arg| {
                let base = arg.rsplit('/').next().unwrap_or(arg);
                let unversioned =
                    |s: &str| s == *word || s.strip_prefix(word).is_some_and(|rest| rest.starts_with(['@', '=']));
                unversioned(arg) || unversioned(base)
            })
        });
        match known {
            Some((word, grant)) => {
                self.network = vec![NetworkGrant::parse(grant).expect("the table's grants parse")];
                self.network_why = format!("{word} is known to need it");
            }
            None => {
                self.network = vec![NetworkGrant::None];
                self.network_why = "the default: no network unless granted".to_owned();
            }
        }
    }

    /// Without the network, a package manager that asks its registry first retries for
    /// a minute before it falls back to its cache: tell it to use the cache.
    fn set_offline(&mut self, context: &ServerContext) {
        if self.network != [NetworkGrant::None] {
            return;
        }
        let names = context.program_names();
        let why = "network none: use the cache, never the registry";
        if names.iter().any(|n| ["npx", "npm", "npx-cli.js", "npm-cli.js", "pnpm", "yarn"].contains(&n.as_str())) {
            self.env.push(("npm_config_offline".into(), "true".into(), why.into()));
            self.env.push(("npm_config_update_notifier".into(), "false".into(), why.into()));
        }
        if names.iter().any(|n| n == "uvx" || n == "uv") {
            self.env.push(("UV_OFFLINE".into(), "1".into(), why.into()));
        }
    }

    /// True when a grant already covers `path` (it is the grant's path or beneath it).
    fn covered(&self, path: &Path) -> bool {
        self.grants.iter().any(|g| path.starts_with(&g.path))
    }

    /// What `clawai sandbox explain` prints.
    pub fn explain(&self) -> String {
        let mut text = String::new();
        let width = self.grants.iter().map(|g| g.path.as_os_str().len()).max().unwrap_or(0);
        for grant in &self.grants {
            text.push_str(&format!(
                "{:<5}  {:<width$}  {}\n",
                grant.access.as_str(),
                grant.path.display(),
                grant.why,
                width = width
            ));
        }
        let network: Vec<String> = self.network.iter().map(ToString::to_string).collect();
        text.push_str(&format!("network  {}  ({})\n", network.join(", "), self.network_why));
        for (name, value, why) in &self.env {
            text.push_str(&format!("env      {name}={value}  ({why})\n"));
        }
        text
    }
}

/// The installation a program belongs to: the directory above its `bin` (`/opt/x/bin/y`
/// → `/opt/x`), else its own directory.
fn prefix_of(program: &Path) -> PathBuf {
    let dir = program.parent().unwrap_or(Path::new("/"));
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("bin" | "sbin" | "shims") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// What of a file given as an argument is granted: for a script, the code it belongs to
/// (the outermost `node_modules` above it, where Node finds its dependencies, else its
/// directory, where Python finds its modules); for any other file, or a script lying
/// in the home directory, the root or a directory above the home, the file alone (a
/// `~/notes.txt` given to a server must not open `~/.ssh`).
fn package_of(file: &Path, home: Option<&Path>) -> PathBuf {
    let mut prefix = PathBuf::new();
    for component in file.components() {
        prefix.push(component);
        if component == Component::Normal("node_modules".as_ref()) {
            return prefix;
        }
    }
    const SCRIPTS: [&str; 8] = ["js", "mjs", "cjs", "ts", "py", "rb", "pl", "sh"];
    let script = file.extension().and_then(|e| e.to_str()).is_some_and(|e| SCRIPTS.contains(&e));
    let dir = file.parent().unwrap_or(Path::new("/"));
    let too_wide = dir == Path::new("/") || home.is_some_and(|home| home.starts_with(dir));
    if script && !too_wide { dir.to_path_buf() } else { file.to_path_buf() }
}

#[cfg(test)]
mod tests;
