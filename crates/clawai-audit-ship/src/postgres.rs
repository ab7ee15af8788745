//! The connection to PostgreSQL: its URL, checked and shown without the password, and
//! what can go wrong. A leaf: it uses no other module of the crate.

use std::time::Duration;

/// What can go wrong talking to the database or reading the trail.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `--postgres` value is not a connection string.
    #[error(
        "--postgres {url}: not a PostgreSQL connection URL ({reason}); expected postgres://USER[:PASSWORD]@HOST:PORT/DATABASE"
    )]
    BadUrl {
        /// The URL, its password hidden.
        url: String,
        /// What the parser said.
        reason: String,
    },
    /// The URL asks for TLS, which this build does not speak.
    #[error(
        "--postgres {url}: sslmode=require asks for TLS, which clawai does not speak to PostgreSQL; reach it over loopback, a Unix socket or a private network (sslmode=disable or prefer)"
    )]
    TlsRequired {
        /// The URL, its password hidden.
        url: String,
    },
    /// PostgreSQL did not answer, or refused the connection or a statement.
    #[error("PostgreSQL at {url}: {source}; is it running and does the URL name its host, port, user and database?")]
    Database {
        /// The URL, its password hidden.
        url: String,
        /// The client's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database has no shipped trail.
    #[error(
        "PostgreSQL at {url} has no clawai_audit_events table: nothing was shipped there; ship a trail with `clawai audit ship --postgres URL`"
    )]
    NothingShipped {
        /// The URL, its password hidden.
        url: String,
    },
    /// The trail cannot be read.
    #[error("cannot read the audit trail {path}: {source}; pass it with --audit FILE")]
    Trail {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// How long a connection attempt may take before PostgreSQL counts as away.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A PostgreSQL connection string, checked, with a printable form that hides the password.
#[derive(Debug, Clone)]
pub struct Postgres {
    config: tokio_postgres::Config,
    shown: String,
}

impl Postgres {
    /// Parses `postgres://…` (or `key=value` pairs); refuses `sslmode=require`.
    pub fn parse(url: &str) -> Result<Postgres, Error> {
        let shown = redacted(url);
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|error: tokio_postgres::Error| Error::BadUrl { url: shown.clone(), reason: error.to_string() })?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err(Error::TlsRequired { url: shown });
        }
        if config.get_hosts().is_empty() {
            return Err(Error::BadUrl { url: shown, reason: "it names no host".into() });
        }
        config.connect_timeout(CONNECT_TIMEOUT);
        config.application_name("clawai");
        Ok(Postgres { config, shown })
    }

    /// The URL as it may be printed (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A connection, its I/O driven by a task of its own (ended when the client is dropped).
    pub(crate) async fn connect(&self) -> Result<tokio_postgres::Client, Error> {
        let (client, connection) =
            self.config.connect(tokio_postgres::NoTls).await.map_err(|source| self.error(source))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!("PostgreSQL connection ended: {error}");
            }
        });
        Ok(client)
    }

    pub(crate) fn error(&self, source: tokio_postgres::Error) -> Error {
        Error::Database { url: self.shown.clone(), source }
    }
}

/// A connection URL with its password replaced by `***`, for messages: `scheme://user:***@host/…`,
/// or `password=***` in the key=value form. The CLI shows `--cluster` URLs with it too.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        // key=value form: hide `password=…`.
        return url
            .split_whitespace()
            .map(|pair| if pair.starts_with("password=") { "password=***" } else { pair })
            .collect::<Vec<_>>()
            .join(" ");
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((credentials, host)) if credentials.contains(':') => {
            let user = credentials.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_checked_and_passwords_hidden() {
        let ok = Postgres::parse("postgres://clawai:s3cret@127.0.0.1:5432/audit").expect("a valid URL");
        assert_eq!(ok.shown(), "postgres://clawai:***@127.0.0.1:5432/audit");
        let error = Postgres::parse("postgres://u:s3cret@h:notaport/db").expect_err("bad port").to_string();
        assert!(error.contains("not a PostgreSQL connection URL") && !error.contains("s3cret"), "{error}");
        let error = Postgres::parse("postgres://h/db?sslmode=require").expect_err("TLS").to_string();
        assert!(error.contains("sslmode=require"), "{error}");
        assert_eq!(redacted("host=h password=x user=u"), "host=h password=*** user=u");
    }
}
