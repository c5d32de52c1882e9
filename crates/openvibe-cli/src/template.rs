//! `{key}` templates over the workflow state.

use openvibe::protocols::{State, StateError};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Key(String),
}

/// A string with `{key}` placeholders (`{{` and `}}` are literal braces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parse a template. An unclosed `{` is kept as text.
    pub fn parse(text: &str) -> Self {
        let mut parts = Vec::new();
        let mut buf = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    buf.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    buf.push('}');
                }
                '{' => {
                    let mut key = String::new();
                    let mut closed = false;
                    for k in chars.by_ref() {
                        if k == '}' {
                            closed = true;
                            break;
                        }
                        key.push(k);
                    }
                    if closed && !key.trim().is_empty() {
                        if !buf.is_empty() {
                            parts.push(Part::Text(std::mem::take(&mut buf)));
                        }
                        parts.push(Part::Key(key.trim().to_owned()));
                    } else {
                        buf.push('{');
                        buf.push_str(&key);
                        if closed {
                            buf.push('}');
                        }
                    }
                }
                other => buf.push(other),
            }
        }
        if !buf.is_empty() {
            parts.push(Part::Text(buf));
        }
        Self { parts }
    }

    /// The text when the template has no placeholder.
    pub fn as_constant(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Key(_) => return None,
            }
        }
        Some(out)
    }

    /// Fill in the placeholders: strings as they are, other values as JSON;
    /// a missing key is an error naming it.
    pub fn render(&self, state: &State) -> Result<String, StateError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Key(key) => match state.require(key)? {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_keys_and_escapes() {
        let state = State::from_value(json!({"lead": "Acme", "n": 3, "obj": {"a": 1}})).unwrap();
        let t = Template::parse("Score {lead} ({n}) {obj} {{literal}}");
        assert_eq!(
            t.render(&state).unwrap(),
            "Score Acme (3) {\"a\":1} {literal}"
        );
        assert_eq!(
            Template::parse("no keys").as_constant().as_deref(),
            Some("no keys")
        );
        assert_eq!(Template::parse("{lead}").as_constant(), None);
        assert_eq!(
            Template::parse("open { brace").render(&state).unwrap(),
            "open { brace"
        );
        let err = Template::parse("{missing}").render(&state).unwrap_err();
        assert!(err.to_string().contains("`missing`"));
    }
}
