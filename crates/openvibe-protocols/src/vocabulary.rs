//! Closed sets of names (a status, a mode, a level): each an enum whose
//! names, parsing and display are written once, by [`vocabulary!`], so a
//! backend's column, the CLI's value list, the MCP and OpenAPI schemas and
//! a SQL check all read the same names from the type ([`Vocabulary`]).

/// A closed set of names: a status, a mode, a level.
///
/// Every vocabulary of the contract implements it (through the crate's
/// `vocabulary!` macro), so code written once for all of them (the CLI's
/// value parsers, the MCP argument schemas, the kind registry's status
/// lists) never spells a name again.
pub trait Vocabulary: Copy + Eq + Send + Sync + 'static {
    /// Every value, in declaration order.
    const VALUES: &'static [Self];
    /// Every name, in declaration order (what [`Vocabulary::name`] gives).
    const NAMES: &'static [&'static str];

    /// This value's name (its serialised form).
    fn name(self) -> &'static str;

    /// The value named `name`, if any.
    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES.iter().copied().find(|v| v.name() == name)
    }

    /// `a, b or c`: the names, for an error message.
    fn names_listed() -> String {
        listed(Self::NAMES)
    }
}

/// A filter on a vocabulary: one of its values, or `any`. Its names are
/// the vocabulary's and `any`; it parses from them (the CLI), reads and
/// writes them as JSON and states them in its schema (MCP, OpenAPI), so
/// a filter's words are never written again where it is offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OrAny<V> {
    /// Any value.
    Any,
    /// Only this one.
    Only(V),
}

impl<V: Vocabulary> OrAny<V> {
    /// The value it keeps, `None` for any.
    pub fn value(self) -> Option<V> {
        match self {
            Self::Any => None,
            Self::Only(v) => Some(v),
        }
    }

    /// Every name it takes: the vocabulary's, then `any`.
    pub fn names() -> impl Iterator<Item = &'static str> {
        V::NAMES.iter().copied().chain(["any"])
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::Only(v) => v.name(),
        }
    }
}

impl<V: Vocabulary> std::fmt::Display for OrAny<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl<V: Vocabulary> std::str::FromStr for OrAny<V> {
    type Err = crate::StoreError;

    /// One of [`OrAny::names`]; anything else is invalid input naming them.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "any" {
            return Ok(Self::Any);
        }
        V::from_name(s).map(Self::Only).ok_or_else(|| {
            let names: Vec<&str> = Self::names().collect();
            crate::StoreError::invalid("status", format!("one of {}", listed(&names)))
        })
    }
}

impl<V: Vocabulary> serde::Serialize for OrAny<V> {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.name())
    }
}

impl<'de, V: Vocabulary> serde::Deserialize<'de> for OrAny<V> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(de)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "schema")]
impl<V: Vocabulary> schemars::JsonSchema for OrAny<V> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StatusFilter".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::names().collect();
        schemars::json_schema!({"type": "string", "enum": names})
    }
}

/// `a, b or c`.
pub(crate) fn listed(names: &[&str]) -> String {
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// Declare a vocabulary: the enum (serialised by name, with a JSON schema
/// under the `schema` feature), its `ALL` values, `as_str`, `parse`,
/// `Display` and its [`Vocabulary`] impl.
///
/// ```ignore
/// vocabulary! {
///     /// Where a belief stands.
///     #[derive(Default)]
///     pub enum BeliefStatus {
///         /// Waiting for a person.
///         #[default]
///         Proposed = "proposed",
///         /// Approved.
///         Active = "active",
///     }
/// }
/// ```
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $text:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [Self; [$(stringify!($variant)),+].len()] = [$(Self::$variant),+];

            /// The name (its serialised form).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)+
                }
            }

            /// The value named `s`.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::Vocabulary for $name {
            const VALUES: &'static [Self] = &Self::ALL;
            const NAMES: &'static [&'static str] = &[$($text),+];

            fn name(self) -> &'static str {
                self.as_str()
            }

            fn from_name(name: &str) -> Option<Self> {
                Self::parse(name)
            }
        }
    };
}
pub(crate) use vocabulary;

#[cfg(test)]
mod tests {
    use super::*;

    vocabulary! {
        /// A test vocabulary.
        #[derive(Default)]
        pub enum Colour {
            /// Red.
            #[default]
            Red = "red",
            /// Dark blue.
            DarkBlue = "dark_blue",
        }
    }

    #[test]
    fn a_vocabulary_names_parses_and_serialises_each_value_one_way() {
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        assert_eq!(Colour::NAMES, ["red", "dark_blue"]);
        for c in Colour::ALL {
            assert_eq!(Colour::parse(c.as_str()), Some(c));
            assert_eq!(c.to_string(), c.as_str());
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.as_str())
            );
        }
        assert_eq!(Colour::parse("green"), None);
        assert_eq!(Colour::default(), Colour::Red);
        assert_eq!(Colour::names_listed(), "red or dark_blue");
        assert_eq!(listed(&["a", "b", "c"]), "a, b or c");
    }

    #[test]
    fn a_filter_takes_the_vocabulary_and_any_in_every_form() {
        assert_eq!("any".parse::<OrAny<Colour>>().unwrap(), OrAny::Any);
        assert_eq!(
            "dark_blue".parse::<OrAny<Colour>>().unwrap(),
            OrAny::Only(Colour::DarkBlue)
        );
        let refused = "green".parse::<OrAny<Colour>>().unwrap_err().to_string();
        assert!(refused.contains("red, dark_blue or any"), "{refused}");
        let json = serde_json::to_value(OrAny::Only(Colour::Red)).unwrap();
        assert_eq!(json, serde_json::json!("red"));
        assert_eq!(
            serde_json::from_value::<OrAny<Colour>>(serde_json::json!("any")).unwrap(),
            OrAny::Any
        );
        assert!(serde_json::from_value::<OrAny<Colour>>(serde_json::json!("green")).is_err());
        assert_eq!(
            OrAny::<Colour>::names().collect::<Vec<_>>(),
            ["red", "dark_blue", "any"]
        );
    }
}
