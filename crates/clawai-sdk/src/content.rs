//! What a tool returns: [`ToolResult`] and its [`ToolContent`] blocks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The result of a `tools/call`: content blocks, and whether the tool failed.
///
/// A failed tool still answers with a *successful* JSON-RPC response whose `isError` is
/// `true`, so that the model reads the message and can correct itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The content blocks, in order.
    pub content: Vec<ToolContent>,
    /// `Some(true)` when the tool failed; omitted from the JSON when `None`.
    #[serde(rename = "isError", skip_serializing_if = "Option::is_none", default)]
    pub is_error: Option<bool>,
    /// Structured output matching the tool's `outputSchema` (set by [`crate::Json`]).
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none", default)]
    pub structured_content: Option<Value>,
}

impl ToolResult {
    /// A successful result with these content blocks.
    pub fn new(content: Vec<ToolContent>) -> Self {
        ToolResult { content, is_error: None, structured_content: None }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult::new(vec![ToolContent::text(text)])
    }

    /// A failed result (`isError: true`) with one text block that says what went wrong.
    pub fn error(message: impl Into<String>) -> Self {
        ToolResult { is_error: Some(true), ..ToolResult::text(message) }
    }

    /// Whether this result reports a failure.
    pub fn failed(&self) -> bool {
        self.is_error == Some(true)
    }
}

/// One content block of a [`ToolResult`]. Binary data (`image`, `audio`) is base64.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolContent {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Base64-encoded image bytes.
        data: String,
        /// For example `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An audio clip.
    Audio {
        /// Base64-encoded audio bytes.
        data: String,
        /// For example `audio/wav`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource's URI and contents.
        resource: EmbeddedResource,
    },
    /// A link to a resource the client can read with `resources/read`.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        description: Option<String>,
        /// Its MIME type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none", default)]
        mime_type: Option<String>,
    },
}

/// The contents of an embedded resource: text or base64 `blob`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none", default)]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub text: Option<String>,
    /// Base64-encoded binary contents.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub blob: Option<String>,
}

impl ToolContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolContent::Text { text: text.into() }
    }

    /// An image block from base64 data and a MIME type.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ToolContent::Image { data: data.into(), mime_type: mime_type.into() }
    }

    /// An audio block from base64 data and a MIME type.
    pub fn audio(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        ToolContent::Audio { data: data.into(), mime_type: mime_type.into() }
    }

    /// An embedded text resource.
    pub fn resource_text(uri: impl Into<String>, mime_type: impl Into<String>, text: impl Into<String>) -> Self {
        ToolContent::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        }
    }

    /// An embedded binary resource (base64 `blob`).
    pub fn resource_blob(uri: impl Into<String>, mime_type: impl Into<String>, blob: impl Into<String>) -> Self {
        ToolContent::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(blob.into()),
            },
        }
    }

    /// A link to a resource.
    pub fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ToolContent::ResourceLink { uri: uri.into(), name: name.into(), description: None, mime_type: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_serialise_as_the_specification_says() {
        assert_eq!(
            serde_json::to_value(ToolResult::text("hi")).unwrap(),
            json!({"content": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(
            serde_json::to_value(ToolResult::error("no")).unwrap(),
            json!({"content": [{"type": "text", "text": "no"}], "isError": true})
        );
        let mixed = ToolResult::new(vec![
            ToolContent::image("AAA", "image/png"),
            ToolContent::audio("BBB", "audio/wav"),
            ToolContent::resource_text("test://r", "text/plain", "body"),
            ToolContent::resource_link("file:///a", "a"),
        ]);
        assert_eq!(
            serde_json::to_value(mixed).unwrap(),
            json!({"content": [
                {"type": "image", "data": "AAA", "mimeType": "image/png"},
                {"type": "audio", "data": "BBB", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "body"}},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
            ]})
        );
        assert!(ToolResult::error("x").failed());
        assert!(!ToolResult::text("x").failed());
    }
}
