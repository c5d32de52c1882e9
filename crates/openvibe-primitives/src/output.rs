//! Parsing model output into state values.

use serde_json::Value;

/// The model's text as a JSON value when it is JSON (also inside a
/// ```` ```json ```` or plain ```` ``` ```` fence), else as a JSON string.
///
/// ```
/// use openvibe_primitives::parse_output;
/// use serde_json::json;
/// assert_eq!(parse_output(r#"{"score": 85}"#), json!({"score": 85}));
/// assert_eq!(parse_output("Here:\n```json\n[1, 2]\n```\n"), json!([1, 2]));
/// assert_eq!(parse_output("just text"), json!("just text"));
/// ```
pub fn parse_output(text: &str) -> Value {
    let trimmed = text.trim();
    if looks_like_json(trimmed)
        && let Ok(value) = serde_json::from_str(trimmed)
    {
        return value;
    }
    if let Some(inner) = fenced_block(trimmed)
        && let Ok(value) = serde_json::from_str(inner.trim())
    {
        return value;
    }
    Value::String(text.to_owned())
}

/// Cheap pre-check so plain prose never goes through the JSON parser.
fn looks_like_json(s: &str) -> bool {
    match s.as_bytes().first() {
        Some(b'{' | b'[' | b'"' | b'-' | b'0'..=b'9') => true,
        Some(b't' | b'f' | b'n') => matches!(s, "true" | "false" | "null"),
        _ => false,
    }
}

/// The body of the first fenced code block (```` ```json ```` or ```` ``` ````).
fn fenced_block(s: &str) -> Option<&str> {
    let start = s.find("```")?;
    let after = &s[start + 3..];
    // Skip the info string (e.g. `json`) up to the end of the line.
    let body_start = after.find('\n')? + 1;
    let body = &after[body_start..];
    let end = body.find("```")?;
    Some(&body[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_plain_and_fenced_json() {
        assert_eq!(parse_output(" {\"a\": 1} "), json!({"a": 1}));
        assert_eq!(parse_output("85"), json!(85));
        assert_eq!(parse_output("```\n{\"a\": 2}\n```"), json!({"a": 2}));
        assert_eq!(
            parse_output("Sure! ```json\n{\"score\": 90}\n``` hope this helps"),
            json!({"score": 90})
        );
    }

    #[test]
    fn keeps_text_that_is_not_json() {
        assert_eq!(parse_output("{not json"), json!("{not json"));
        assert_eq!(
            parse_output("```json\nnope\n```"),
            json!("```json\nnope\n```")
        );
        assert_eq!(parse_output("trueish"), json!("trueish"));
        assert_eq!(parse_output(""), json!(""));
    }
}
