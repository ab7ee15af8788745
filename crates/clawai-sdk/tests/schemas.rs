//! The JSON Schemas `#[claw_tool]` generates, one parameter type at a time (snapshots in
//! `tests/snapshots/`), and that arguments of those types arrive as declared.

use std::collections::BTreeMap;

use clawai_sdk::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[claw_tool]
async fn text(value: String) -> ToolResult {
    ToolResult::text(value)
}

#[claw_tool]
async fn integers(
    a: i8,
    b: i16,
    c: i32,
    d: i64,
    e: i128,
    f: u8,
    g: u16,
    h: u32,
    i: u64,
    j: u128,
    k: usize,
) -> ToolResult {
    ToolResult::text(format!("{a} {b} {c} {d} {e} {f} {g} {h} {i} {j} {k}"))
}

#[claw_tool]
async fn floats(x: f32, y: f64) -> ToolResult {
    ToolResult::text(format!("{x} {y}"))
}

#[claw_tool]
async fn flag(on: bool) -> ToolResult {
    ToolResult::text(on.to_string())
}

#[claw_tool]
async fn optional(name: Option<String>, count: Option<u32>) -> ToolResult {
    ToolResult::text(format!("{name:?} {count:?}"))
}

#[claw_tool]
async fn lists(words: Vec<String>, matrix: Vec<Vec<f64>>, maybe: Option<Vec<bool>>) -> ToolResult {
    ToolResult::text(format!("{words:?} {matrix:?} {maybe:?}"))
}

/// Where to ship.
#[allow(dead_code)] // the fields are read through Debug
#[derive(Debug, Deserialize, JsonSchema)]
struct Address {
    /// Street and number.
    street: String,
    city: String,
    zip: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    Standard,
    Express,
}

#[claw_tool]
async fn custom(to: Address, speed: Speed, labels: BTreeMap<String, String>, parcels: Vec<Address>) -> ToolResult {
    ToolResult::text(format!("{to:?} {speed:?} {labels:?} {}", parcels.len()))
}

/// Ships a parcel.
///
/// Costs money.
#[claw_tool]
async fn documented(
    /// Who receives it.
    recipient: String,
    /// Grams.
    weight: Option<u32>,
) -> ToolResult {
    ToolResult::text(format!("{recipient} {weight:?}"))
}

#[derive(Serialize, JsonSchema)]
struct Quote {
    price: f64,
    currency: String,
}

#[claw_tool(name = "quote", description = "Prices a parcel")]
async fn structured(weight: u32) -> Result<Json<Quote>, ClawError> {
    if weight == 0 {
        return Err(ClawError::InvalidParams("weight must be positive".into()));
    }
    Ok(Json(Quote { price: f64::from(weight) * 0.01, currency: "EUR".into() }))
}

#[claw_tool(name = "r#type")]
async fn r#type(r#type: String) -> ToolResult {
    ToolResult::text(r#type)
}

#[test]
fn input_schemas_per_parameter_type() {
    for tool in [text(), integers(), floats(), flag(), optional(), lists(), custom(), documented(), r#type()] {
        insta::assert_json_snapshot!(format!("input_schema_{}", tool.name.replace(['#', '-'], "_")), tool.definition());
    }
}

#[test]
fn structured_output_schema() {
    insta::assert_json_snapshot!("structured_quote", structured().definition());
}

#[test]
fn names_and_descriptions() {
    assert_eq!(text().name, "text");
    assert_eq!(text().description, "Tool: text");
    assert_eq!(documented().description, "Ships a parcel.\n\nCosts money.");
    assert_eq!(structured().name, "quote");
    assert_eq!(structured().description, "Prices a parcel");
    assert_eq!(r#type().input_schema["required"], json!(["type"]), "raw identifiers lose their r#");
}

async fn run(tool: SdkMcpTool, args: Value) -> Result<ToolResult, ClawError> {
    tool.call(args).await
}

fn text_of(result: &ToolResult) -> &str {
    match &result.content[0] {
        ToolContent::Text { text } => text,
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn arguments_arrive_as_declared() {
    let result = run(integers(), json!({"a": -8, "b": 300, "c": 1, "d": -9_000_000_000i64, "e": 1, "f": 255, "g": 2, "h": 3, "i": u64::MAX, "j": 5, "k": 6})).await.unwrap();
    assert_eq!(text_of(&result), format!("-8 300 1 -9000000000 1 255 2 3 {} 5 6", u64::MAX));
    let overflow = run(
        integers(),
        json!({"a": 128, "b": 0, "c": 0, "d": 0, "e": 0, "f": 0, "g": 0, "h": 0, "i": 0, "j": 0, "k": 0}),
    )
    .await;
    assert!(matches!(overflow, Err(ClawError::InvalidParams(message)) if message.contains("`a`")));

    let result = run(optional(), json!({"name": null})).await.unwrap();
    assert_eq!(text_of(&result), "None None");
    let result = run(optional(), json!({"name": "x", "count": 2})).await.unwrap();
    assert_eq!(text_of(&result), "Some(\"x\") Some(2)");
    assert!(
        matches!(run(optional(), json!({"count": -1})).await, Err(ClawError::InvalidParams(m)) if m.contains("`count`"))
    );

    let result = run(lists(), json!({"words": ["a", "b"], "matrix": [[1.5], []]})).await.unwrap();
    assert_eq!(text_of(&result), "[\"a\", \"b\"] [[1.5], []] None");
    assert!(run(lists(), json!({"words": "a", "matrix": []})).await.is_err());

    let shipment = json!({
        "to": {"street": "Main 1", "city": "Oslo"},
        "speed": "express",
        "labels": {"fragile": "yes"},
        "parcels": [{"street": "A", "city": "B", "zip": "0150"}],
    });
    let result = run(custom(), shipment).await.unwrap();
    assert!(text_of(&result).contains("Express"), "{}", text_of(&result));
    let bad_enum = json!({"to": {"street": "", "city": ""}, "speed": "teleport", "labels": {}, "parcels": []});
    assert!(matches!(run(custom(), bad_enum).await, Err(ClawError::InvalidParams(m)) if m.contains("`speed`")));

    let quoted = run(structured(), json!({"weight": 250})).await.unwrap();
    assert_eq!(quoted.structured_content, Some(json!({"price": 2.5, "currency": "EUR"})));
    assert_eq!(serde_json::from_str::<Value>(text_of(&quoted)).unwrap(), json!({"price": 2.5, "currency": "EUR"}));
    assert!(matches!(run(structured(), json!({"weight": 0})).await, Err(ClawError::InvalidParams(_))));
}
