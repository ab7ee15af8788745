//! Where the remote server is and what to send it: `--upstream URL` and `--header`
//! lines, whose values may name environment variables.

use std::sync::{Arc, Mutex};

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// Where the remote server is and what to send it.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// The MCP endpoint.
    pub url: Url,
    /// Extra headers on every request (e.g. `Authorization`).
    pub headers: HeaderMap,
    /// The `Authorization` of the client this upstream session serves (HTTP front),
    /// forwarded to this upstream only, and only when `headers` has none of its own.
    pub client_authorization: Option<Arc<Mutex<Option<HeaderValue>>>>,
}

impl RemoteOptions {
    /// Options from a URL and `Name: value` header lines whose values may name
    /// environment variables as `${VAR}` (secrets stay out of config files).
    pub fn parse(url: &str, headers: &[String], env: impl Fn(&str) -> Option<String>) -> Result<RemoteOptions, String> {
        let url = Url::parse(url).map_err(|error| format!("--upstream `{url}` is not a URL: {error}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("--upstream `{url}`: only http and https URLs are supported"));
        }
        let mut map = HeaderMap::new();
        for line in headers {
            let (name, value) =
                line.split_once(':').ok_or_else(|| format!("--header `{line}` must look like `Name: value`"))?;
            let value = expand_env(value.trim(), &env)?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| format!("--header `{line}`: `{}` is not a header name", name.trim()))?;
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("--header `{}`: the value is not a valid header value", name))?;
            map.append(name, value);
        }
        Ok(RemoteOptions { url, headers: map, client_authorization: None })
    }
}

/// `${VAR}` replaced by the variable's value; an unset variable is an error naming it.
fn expand_env(value: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed `${{` in header value `{value}`"))?;
        let name = &after[..end];
        out.push_str(
            &env(name).ok_or_else(|| format!("the environment variable {name} (used in a --header) is not set"))?,
        );
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_take_values_from_the_environment() {
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        let options = RemoteOptions::parse(
            "https://mcp.example.com/mcp",
            &["Authorization: Bearer ${TOKEN}".into(), "X-Team: a:b".into()],
            env,
        )
        .unwrap();
        assert_eq!(options.headers["authorization"], "Bearer s3cret");
        assert_eq!(options.headers["x-team"], "a:b");
        let missing = RemoteOptions::parse("https://x/mcp", &["Authorization: Bearer ${NOPE}".into()], env);
        assert!(missing.unwrap_err().contains("NOPE"));
        assert!(RemoteOptions::parse("https://x/mcp", &["no colon".into()], env).is_err());
        assert!(RemoteOptions::parse("ftp://x/mcp", &[], env).is_err());
        assert!(RemoteOptions::parse("https://x/mcp", &["X: ${UNCLOSED".into()], env).is_err());
    }
}
