//! [`Json`]: typed, structured tool output.

use serde::Serialize;

use crate::{ToolContent, ToolResult};

/// Return `Json<T>` (or `Result<Json<T>, E>`) from a `#[claw_tool]` function to give the
/// tool structured output: the result carries `structuredContent` (and the same JSON as
/// text, for clients that read only content), and `tools/list` shows `T`'s JSON Schema as
/// the tool's `outputSchema`. `T` should serialise to a JSON object, as the
/// specification requires of structured content.
///
/// ```
/// use clawai_sdk::{claw_tool, Json};
/// use schemars::JsonSchema;
/// use serde::Serialize;
///
/// #[derive(Serialize, JsonSchema)]
/// struct Weather { celsius: f64 }
///
/// /// Today's weather.
/// #[claw_tool]
/// async fn weather(city: String) -> Json<Weather> {
///     Json(Weather { celsius: if city == "Oslo" { 3.0 } else { 21.0 } })
/// }
///
/// assert_eq!(weather().output_schema.unwrap()["properties"]["celsius"]["type"], "number");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Json<T>(pub T);

impl<T: Serialize> Json<T> {
    /// The tool result that carries this value.
    pub fn into_tool_result(self) -> Result<ToolResult, serde_json::Error> {
        let structured = serde_json::to_value(self.0)?;
        let text = serde_json::to_string(&structured)?;
        Ok(ToolResult { structured_content: Some(structured), ..ToolResult::new(vec![ToolContent::text(text)]) })
    }
}
