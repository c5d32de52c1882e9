//! The soul: a role's identity text, inline or from a `.md`/`.yaml` file.

use std::path::{Path, PathBuf};

use crate::Error;

/// Where a role's soul comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Soul {
    /// No soul.
    None,
    /// The text itself.
    Inline(String),
    /// A Markdown file (its text) or a YAML file (its `soul` or `prompt`
    /// key, or the whole document).
    File(PathBuf),
}

impl Soul {
    /// Inline text, or a file when `value` is a single line ending in
    /// `.md`, `.yaml` or `.yml` (as in the source design).
    pub fn from_value(value: impl Into<String>) -> Self {
        let value = value.into();
        let trimmed = value.trim();
        let is_path = !trimmed.contains('\n')
            && [".md", ".yaml", ".yml"]
                .iter()
                .any(|ext| trimmed.ends_with(ext));
        if trimmed.is_empty() {
            Self::None
        } else if is_path {
            Self::File(PathBuf::from(trimmed))
        } else {
            Self::Inline(value)
        }
    }

    /// The soul's text (files are read now).
    pub fn load(&self, role: &str) -> Result<String, Error> {
        match self {
            Self::None => Ok(String::new()),
            Self::Inline(text) => Ok(text.trim().to_owned()),
            Self::File(path) => load_file(role, path),
        }
    }
}

fn load_file(role: &str, path: &Path) -> Result<String, Error> {
    let fail =
        |message: String, source: Option<Box<dyn std::error::Error + Send + Sync>>| Error::Soul {
            role: role.to_owned(),
            path: path.to_owned(),
            message,
            source,
        };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string(), Some(Box::new(e))))?;
    let is_yaml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    if !is_yaml {
        return Ok(text.trim().to_owned());
    }
    let doc: yaml_serde::Value = yaml_serde::from_str(&text)
        .map_err(|e| fail(format!("invalid YAML: {e}"), Some(Box::new(e))))?;
    match &doc {
        yaml_serde::Value::String(s) => Ok(s.trim().to_owned()),
        yaml_serde::Value::Mapping(map) => {
            for key in ["soul", "prompt"] {
                if let Some(yaml_serde::Value::String(s)) = map.get(key) {
                    return Ok(s.trim().to_owned());
                }
            }
            Ok(text.trim().to_owned())
        }
        _ => Err(fail("expected a string or a mapping".into(), None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_ending_in_a_known_extension_are_files() {
        assert_eq!(
            Soul::from_value("config/souls/cro.md"),
            Soul::File("config/souls/cro.md".into())
        );
        assert_eq!(
            Soul::from_value("souls/cmo.yaml"),
            Soul::File("souls/cmo.yaml".into())
        );
        assert_eq!(
            Soul::from_value("You are the CRO."),
            Soul::Inline("You are the CRO.".into())
        );
        assert_eq!(Soul::from_value("  "), Soul::None);
        assert!(matches!(
            Soul::from_value("line one\nends with notes.md"),
            Soul::Inline(_)
        ));
    }

    #[test]
    fn files_load_and_missing_files_are_typed_errors() {
        let dir = std::env::temp_dir().join(format!("openvibe-soul-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("cro.md"), "You are the CRO.\n").unwrap();
        std::fs::write(
            dir.join("cmo.yaml"),
            "soul: |\n  You are the CMO.\ntone: warm\n",
        )
        .unwrap();
        std::fs::write(dir.join("bad.yaml"), "soul: [unclosed\n").unwrap();
        assert_eq!(
            Soul::File(dir.join("cro.md")).load("cro").unwrap(),
            "You are the CRO."
        );
        assert_eq!(
            Soul::File(dir.join("cmo.yaml")).load("cmo").unwrap(),
            "You are the CMO."
        );
        let err = Soul::File(dir.join("missing.md")).load("cro").unwrap_err();
        assert!(err.to_string().contains("missing.md"), "{err}");
        let err = Soul::File(dir.join("bad.yaml")).load("x").unwrap_err();
        assert!(err.to_string().contains("invalid YAML"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
