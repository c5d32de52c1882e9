//! Workflow state: a JSON object with typed accessors.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why a state value could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// A required key is absent.
    #[error("state key `{key}` is missing")]
    Missing {
        /// The key.
        key: String,
    },
    /// The value under a key has the wrong shape.
    #[error("state key `{key}` does not hold {expected}: {source}")]
    WrongType {
        /// The key.
        key: String,
        /// What was expected.
        expected: &'static str,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// A value could not be turned into JSON.
    #[error("value for state key `{key}` cannot be represented as JSON: {source}")]
    NotJson {
        /// The key.
        key: String,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The whole state is not a JSON object.
    #[error("workflow state must be a JSON object, got {found}")]
    NotAnObject {
        /// The JSON type found instead.
        found: &'static str,
    },
}

/// The state a workflow threads through its nodes: a JSON object.
///
/// ```
/// use openvibe_protocols::State;
/// let mut state = State::new();
/// state.set("score", 85).unwrap();
/// state.insert("company", "acme");
/// assert_eq!(state.get_as::<u32>("score").unwrap(), Some(85));
/// assert_eq!(state.require_str("company").unwrap(), "acme");
/// assert!(state.require_str("missing").is_err());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct State(Map<String, Value>);

impl State {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// A state from a JSON value, which must be an object.
    pub fn from_value(value: Value) -> Result<Self, StateError> {
        match value {
            Value::Object(map) => Ok(Self(map)),
            other => Err(StateError::NotAnObject {
                found: json_type_name(&other),
            }),
        }
    }

    /// The raw value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    /// The string under `key`, if it is a string.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    /// The string under `key`, or a [`StateError`] naming the key.
    pub fn require_str(&self, key: &str) -> Result<&str, StateError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Err(StateError::Missing { key: key.into() }),
            Some(value) => value.as_str().ok_or_else(|| StateError::WrongType {
                key: key.into(),
                expected: "a string",
                source: <serde_json::Error as serde::de::Error>::custom(format!(
                    "expected a string, found {}",
                    json_type_name(value)
                )),
            }),
        }
    }

    /// The value under `key`, or a [`StateError`] naming the key.
    pub fn require(&self, key: &str) -> Result<&Value, StateError> {
        self.0
            .get(key)
            .ok_or_else(|| StateError::Missing { key: key.into() })
    }

    /// The value under `key` deserialized as `T`; `Ok(None)` when absent or null.
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, StateError> {
        match self.0.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => {
                T::deserialize(value)
                    .map(Some)
                    .map_err(|source| StateError::WrongType {
                        key: key.into(),
                        expected: std::any::type_name::<T>(),
                        source,
                    })
            }
        }
    }

    /// Serialize `value` and store it under `key`.
    pub fn set(&mut self, key: impl Into<String>, value: impl Serialize) -> Result<(), StateError> {
        let key = key.into();
        match serde_json::to_value(value) {
            Ok(value) => {
                self.0.insert(key, value);
                Ok(())
            }
            Err(source) => Err(StateError::NotJson { key, source }),
        }
    }

    /// Store a JSON value under `key`, returning the previous one.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<Value>) -> Option<Value> {
        self.0.insert(key.into(), value.into())
    }

    /// Remove `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the state has no keys.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The underlying map.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The state as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }

    /// The state as a JSON value, without copying.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

impl From<Map<String, Value>> for State {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}

impl TryFrom<Value> for State {
    type Error = StateError;
    fn try_from(value: Value) -> Result<Self, StateError> {
        Self::from_value(value)
    }
}

impl<K: Into<String>, V: Into<Value>> FromIterator<(K, V)> for State {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// The JSON type name of a value, for error messages.
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_get_reports_the_key_on_wrong_type() {
        let state = State::from_value(json!({"score": "high"})).unwrap();
        let err = state.get_as::<u32>("score").unwrap_err();
        assert!(err.to_string().contains("`score`"), "{err}");
        let err = state.require_str("nope").unwrap_err();
        assert!(matches!(err, StateError::Missing { .. }));
        let state = State::from_value(json!({"n": 3})).unwrap();
        assert!(matches!(
            state.require_str("n").unwrap_err(),
            StateError::WrongType { .. }
        ));
    }

    #[test]
    fn from_value_rejects_non_objects() {
        let err = State::from_value(json!([1, 2])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "workflow state must be a JSON object, got an array"
        );
    }

    #[test]
    fn state_is_a_transparent_json_object() {
        let state: State = [("a", json!(1)), ("b", json!("x"))].into_iter().collect();
        assert_eq!(
            serde_json::to_value(&state).unwrap(),
            json!({"a": 1, "b": "x"})
        );
        assert_eq!(state.len(), 2);
    }
}
