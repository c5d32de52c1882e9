//! # openvibe-config — configuration files with positioned errors
//!
//! Every configuration file of openvibe (operators, roles, the governance
//! file, role files) is YAML read into a typed value. A malformed document
//! is a [`Positioned`] problem: the line and column where the reader
//! stopped, the key it was reading (`operators[0].workflows[1].id`), and
//! what was wrong; each crate puts it in its own error with the file's
//! path. [`position_of`] places a problem found after parsing (a duplicate
//! id, an unknown node) at the first line that names it.
//!
//! ```
//! #[derive(serde::Deserialize, Debug)]
//! #[serde(deny_unknown_fields)]
//! struct Trigger { id: String, schedule: String }
//!
//! let err = openvibe_config::from_yaml::<Vec<Trigger>>("- id: daily\n  schedul: '0 3 * * *'\n")
//!     .unwrap_err();
//! assert_eq!((err.line, err.column, err.key.as_str()), (2, 3, "[0].schedul"));
//! assert!(err.message.contains("unknown field `schedul`"));
//! assert_eq!(openvibe_config::position_of("a: 1\nb: 2\n", "b:"), (2, 1));
//! ```

use serde::de::DeserializeOwned;

/// A problem in a configuration document: where it is and what it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}{}: {message}", if key.is_empty() || key == "." { String::new() } else { format!(", at `{key}`") })]
#[non_exhaustive]
pub struct Positioned {
    /// The line (1-based; 0 when the reader could not tell).
    pub line: usize,
    /// The column (1-based; 0 when the reader could not tell).
    pub column: usize,
    /// The key being read, as a path (`operators[0].id`; `.` at the top).
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// Read YAML `text` into a `T`; a malformed document, a wrong type, a
/// missing or (with `deny_unknown_fields`) unknown key is a [`Positioned`]
/// problem naming the key.
pub fn from_yaml<T: DeserializeOwned>(text: &str) -> Result<T, Positioned> {
    let deserializer = yaml_serde::Deserializer::from_str(text);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let (line, column) = inner
            .location()
            .map_or((0, 0), |loc| (loc.line(), loc.column()));
        Positioned {
            line,
            column,
            key,
            message: inner.to_string(),
        }
    })
}

/// The line and column (1-based) of the first occurrence of `needle` in
/// `text`; `(0, 0)` when it does not occur (e.g. a value built in code).
pub fn position_of(text: &str, needle: &str) -> (usize, usize) {
    text.lines()
        .enumerate()
        .find_map(|(i, l)| l.find(needle).map(|c| (i + 1, c + 1)))
        .unwrap_or((0, 0))
}

/// The README's example, compiled and run as a doc test.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        name: String,
        items: Vec<u32>,
    }

    #[test]
    fn problems_name_their_line_column_and_key() {
        let e = from_yaml::<Doc>("name: x\nitems: [1, two]\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 12));
        assert_eq!(e.key, "items[1]");
        let e = from_yaml::<Doc>("name: [\n").unwrap_err();
        assert!(e.line > 0, "{e}");
        assert_eq!(
            from_yaml::<Doc>("name: x\nitems: []\n").unwrap().items,
            Vec::<u32>::new()
        );
        assert_eq!(position_of("a\n  needle: 1\n", "needle"), (2, 3));
        assert_eq!(position_of("a\n", "absent"), (0, 0));
    }

    proptest! {
        /// Any text reads to a value or a positioned problem, never a panic.
        #[test]
        fn any_text_reads_or_is_positioned(text in "\\PC{0,200}") {
            let _ = from_yaml::<Doc>(&text);
        }
    }
}
