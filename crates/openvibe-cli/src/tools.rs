//! Tools a role file can declare.

use async_trait::async_trait;
use openvibe::primitives::{Tool, ToolError};
use serde::Deserialize;
use serde_json::{Value, json};

/// Case-insensitive search over the records of a JSON array: a record
/// matches when every query word occurs in one of the searched fields.
#[derive(Debug, Clone)]
pub struct JsonSearchTool {
    name: String,
    description: String,
    records: Vec<Value>,
    fields: Vec<String>,
    action: Option<String>,
}

#[derive(Deserialize)]
struct Args {
    query: String,
}

impl JsonSearchTool {
    /// A tool over `json`, which must be an array of objects.
    pub fn from_json(
        name: &str,
        description: &str,
        json: &str,
        fields: Vec<String>,
    ) -> Result<Self, String> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| format!("tool `{name}`: invalid JSON: {e}"))?;
        let Value::Array(records) = value else {
            return Err(format!(
                "tool `{name}`: the file must hold a JSON array of records"
            ));
        };
        Ok(Self {
            name: name.to_owned(),
            description: description.to_owned(),
            records,
            fields,
            action: None,
        })
    }

    /// Declare the authority action the tool performs.
    #[must_use]
    pub fn with_action(mut self, action: Option<String>) -> Self {
        self.action = action;
        self
    }

    fn haystack(&self, record: &Value) -> String {
        let mut text = String::new();
        if let Value::Object(map) = record {
            for (key, value) in map {
                if (self.fields.is_empty() || self.fields.contains(key))
                    && let Value::String(s) = value
                {
                    text.push_str(&s.to_lowercase());
                    text.push(' ');
                }
            }
        }
        text
    }
}

#[async_trait]
impl Tool for JsonSearchTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words to look for"}},
            "required": ["query"],
        })
    }

    fn action(&self) -> Option<&str> {
        self.action.as_deref()
    }

    async fn call(&self, input: Value) -> Result<String, ToolError> {
        let args: Args = serde_json::from_value(input)
            .map_err(|e| ToolError::invalid_arguments(&self.name, e))?;
        let words: Vec<String> = args
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            return Err(ToolError::new(
                "the query is empty; give a company name or an industry",
            ));
        }
        let hits: Vec<&Value> = self
            .records
            .iter()
            .filter(|r| {
                let hay = self.haystack(r);
                words.iter().all(|w| hay.contains(w.as_str()))
            })
            .collect();
        if hits.is_empty() {
            return Err(ToolError::new(format!(
                "no record matches `{}`",
                args.query
            )));
        }
        Ok(Value::Array(hits.into_iter().cloned().collect()).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn searches_the_named_fields_case_insensitively() {
        let tool = JsonSearchTool::from_json(
            "search_crm",
            "Search.",
            r#"[{"company": "Acme Corp", "industry": "logistics", "notes": "globex partner"},
                {"company": "Globex", "industry": "logistics"}]"#,
            vec!["company".into(), "industry".into()],
        )
        .unwrap();
        let out = tool.call(json!({"query": "acme"})).await.unwrap();
        assert!(
            out.contains("Acme Corp") && !out.contains("\"Globex\""),
            "{out}"
        );
        let out = tool.call(json!({"query": "LOGISTICS"})).await.unwrap();
        assert_eq!(serde_json::from_str::<Vec<Value>>(&out).unwrap().len(), 2);
        let err = tool.call(json!({"query": "initech"})).await.unwrap_err();
        assert!(err.message.contains("no record matches"));
        assert!(tool.call(json!({"q": 1})).await.is_err());
        assert!(JsonSearchTool::from_json("t", "d", "{}", vec![]).is_err());
    }
}
