//! `web_fetch`: an http(s) GET for the agent, bounded in size and time.
//!
//! Redirects are followed only within the origin (scheme, host and port) the policy
//! decided: a redirect elsewhere is returned to the caller, who fetches the new URL
//! with a call of its own, decided anew.

use std::time::Duration;

use clawai_sdk::{ToolResult, claw_tool};
use futures_util::StreamExt;
use reqwest::redirect::{Attempt, Policy};

/// The most bytes of a body returned, and the default.
pub(crate) const FETCH_MAX_BYTES: u64 = 1 << 20;
/// The time a whole fetch gets.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// The most redirects followed within one origin.
const MAX_REDIRECTS: usize = 5;

/// Fetch a web page or file with an http or https GET. Returns the status, the content
/// type and the body as text (at most `max_bytes`, 1 MiB by default and at most).
/// Redirects to another host are not followed: the answer names the new URL.
#[claw_tool(name = "web_fetch")]
pub(crate) async fn web_fetch(
    /// The address, http:// or https://.
    url: String,
    /// The most bytes of the body to return (default and at most 1048576).
    max_bytes: Option<u64>,
) -> ToolResult {
    let cap = max_bytes.unwrap_or(FETCH_MAX_BYTES).min(FETCH_MAX_BYTES) as usize;
    let start = match url::Url::parse(&url) {
        Ok(start) if matches!(start.scheme(), "http" | "https") && start.host().is_some() => start,
        Ok(other) => {
            return ToolResult::error(format!(
                "`{url}` is a `{}:` address; only http and https are fetched",
                other.scheme()
            ));
        }
        Err(error) => return ToolResult::error(format!("`{url}` is not a URL: {error}")),
    };
    let origin = start.origin();
    let same_origin = Policy::custom(move |attempt: Attempt| {
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else if attempt.url().origin() == origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    let client = match reqwest::Client::builder().redirect(same_origin).timeout(FETCH_TIMEOUT).build() {
        Ok(client) => client,
        Err(error) => return ToolResult::error(format!("cannot fetch: {error}")),
    };
    let response = match client.get(start.clone()).send().await {
        Ok(response) => response,
        Err(error) => {
            return ToolResult::error(format!("fetching `{url}` failed: {}", clawai_http::error_chain(&error)));
        }
    };
    let status = response.status();
    if status.is_redirection()
        && let Some(location) = response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok())
    {
        let next = response.url().join(location).map(|u| u.to_string()).unwrap_or_else(|_| location.to_owned());
        return ToolResult::text(format!(
            "HTTP {status}: `{url}` redirects to `{next}`, on another host; it was not followed. To fetch it, call \
             builtin__web_fetch with that URL."
        ));
    }
    let content_type =
        response.headers().get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let mut body = Vec::new();
    let mut cut = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = match chunk {
            Ok(chunk) => chunk,
            Err(error) => {
                return ToolResult::error(format!("reading `{url}` failed: {}", clawai_http::error_chain(&error)));
            }
        };
        let room = cap.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if chunk.len() > room {
            cut = true;
            break;
        }
    }
    let shown_type = if content_type.is_empty() { "no content type".to_owned() } else { content_type.clone() };
    let mut text = format!("HTTP {status} ({shown_type})\n\n");
    match crate::text::text_prefix(&body, cap) {
        Some(body) => text.push_str(body),
        None => text.push_str(&format!("[{} bytes of binary content, not shown]", body.len())),
    }
    if cut {
        text.push_str(&format!("\n[cut at {cap} bytes: the body is longer]"));
    }
    if status.is_client_error() || status.is_server_error() { ToolResult::error(text) } else { ToolResult::text(text) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn fetch(args: Value) -> (bool, String) {
        let result = web_fetch().call(args).await.unwrap();
        let text = serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
        (result.failed(), text)
    }

    /// A server that answers each connection with the response `answer` gives for the
    /// request's path.
    async fn serve(answer: fn(&str, u16) -> String) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = vec![0u8; 4096];
                let n = socket.read(&mut request).await.unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..n]).into_owned();
                let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let _ = socket.write_all(answer(&path, port).as_bytes()).await;
            }
        });
        port
    }

    fn answer(path: &str, port: u16) -> String {
        let (status, headers, body) = match path {
            "/page" => ("200 OK", "Content-Type: text/plain\r\n".to_owned(), "hello".to_owned()),
            "/big" => ("200 OK", String::new(), "x".repeat(5000)),
            "/here" => ("302 Found", "Location: /page\r\n".to_owned(), String::new()),
            // The same port on another name is another origin.
            "/away" => ("302 Found", format!("Location: http://localhost:{port}/page\r\n"), String::new()),
            _ => ("404 Not Found", String::new(), "no".to_owned()),
        };
        format!("HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
    }

    #[tokio::test]
    async fn a_page_is_fetched_and_a_redirect_within_the_origin_followed() {
        let port = serve(answer).await;
        let (failed, text) = fetch(json!({"url": format!("http://127.0.0.1:{port}/page")})).await;
        assert!(!failed);
        assert_eq!(text, "HTTP 200 OK (text/plain)\n\nhello");
        let (_, text) = fetch(json!({"url": format!("http://127.0.0.1:{port}/here")})).await;
        assert!(text.ends_with("hello"), "{text}");
    }

    #[tokio::test]
    async fn a_redirect_to_another_host_is_not_followed() {
        let port = serve(answer).await;
        let (failed, text) = fetch(json!({"url": format!("http://127.0.0.1:{port}/away")})).await;
        assert!(!failed);
        assert!(text.contains(&format!("redirects to `http://localhost:{port}/page`")), "{text}");
        assert!(!text.contains("hello"), "{text}");
    }

    #[tokio::test]
    async fn a_body_is_cut_at_the_cap_and_errors_are_marked() {
        let port = serve(answer).await;
        let (_, text) = fetch(json!({"url": format!("http://127.0.0.1:{port}/big"), "max_bytes": 100})).await;
        assert!(text.ends_with("[cut at 100 bytes: the body is longer]"), "{text}");
        assert_eq!(text.matches('x').count(), 100);
        let (failed, _) = fetch(json!({"url": format!("http://127.0.0.1:{port}/nothing")})).await;
        assert!(failed);
        let (failed, text) = fetch(json!({"url": "file:///etc/passwd"})).await;
        assert!(failed && text.contains("only http and https"), "{text}");
    }
}
