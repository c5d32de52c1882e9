//! [`Sql`]: a statement under construction, its SQL text and typed binds
//! (each also writable as a literal, for statements sent as one message).

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use openvibe_protocols::StoreError;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{Arguments, AssertSqlSafe, Encode, Postgres, Type};

/// A statement under construction: SQL text plus its binds, numbered as
/// they are added. A bind that cannot be encoded is reported when the
/// statement is built, never as a panic.
#[derive(Clone)]
pub struct Sql {
    text: String,
    args: PgArguments,
    count: usize,
    error: Option<String>,
    /// The binds as SQL literals with their types, in a statement made with
    /// [`Sql::one_trip`] while no bind was [`Sql::bind_raw`].
    literals: Option<Vec<(&'static str, String)>>,
}

/// A bind that can also be written as an SQL literal of a known type, so a
/// statement can run as `EXECUTE name(literal, …)` ([`one_trip`]).
pub(crate) trait Literal {
    /// The SQL type the literal is given as.
    const SQL_TYPE: &'static str;
    /// The SQL type of an array of it.
    const ARRAY_TYPE: &'static str;
    /// The value as an SQL literal (or expression of constants).
    fn literal(&self) -> String;
}

macro_rules! literal_as_text {
    ($($t:ty => $sql:literal, $array:literal, |$v:ident| $text:expr;)*) => {$(
        impl Literal for $t {
            const SQL_TYPE: &'static str = $sql;
            const ARRAY_TYPE: &'static str = $array;
            fn literal(&self) -> String {
                let $v = self;
                literal(&$text)
            }
        }
    )*};
}

literal_as_text! {
    String => "text", "text[]", |v| v;
    &str => "text", "text[]", |v| v;
    serde_json::Value => "jsonb", "jsonb[]", |v| v.to_string();
    // Rust prints the shortest text that reads back as the same float, and
    // PostgreSQL reads it to the nearest: the same bits (non-finite
    // values as NaN, inf, -inf, which it reads too).
    f32 => "real", "real[]", |v| v.to_string();
    f64 => "double precision", "double precision[]", |v| v.to_string();
    DateTime<Utc> => "timestamptz", "timestamptz[]",
        |v| v.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    chrono::NaiveDate => "date", "date[]", |v| v.to_string();
}

impl Literal for i64 {
    const SQL_TYPE: &'static str = "bigint";
    const ARRAY_TYPE: &'static str = "bigint[]";
    fn literal(&self) -> String {
        self.to_string()
    }
}

impl Literal for i32 {
    const SQL_TYPE: &'static str = "integer";
    const ARRAY_TYPE: &'static str = "integer[]";
    fn literal(&self) -> String {
        self.to_string()
    }
}

impl Literal for bool {
    const SQL_TYPE: &'static str = "boolean";
    const ARRAY_TYPE: &'static str = "boolean[]";
    fn literal(&self) -> String {
        self.to_string()
    }
}

impl<T: Literal> Literal for Option<T> {
    const SQL_TYPE: &'static str = T::SQL_TYPE;
    const ARRAY_TYPE: &'static str = T::ARRAY_TYPE;
    fn literal(&self) -> String {
        self.as_ref().map_or_else(|| "NULL".to_owned(), T::literal)
    }
}

impl<T: Literal> Literal for Vec<T> {
    const SQL_TYPE: &'static str = T::ARRAY_TYPE;
    // No arrays of arrays are bound.
    const ARRAY_TYPE: &'static str = T::ARRAY_TYPE;
    fn literal(&self) -> String {
        let items: Vec<String> = self.iter().map(T::literal).collect();
        format!("ARRAY[{}]::{}", items.join(", "), T::ARRAY_TYPE)
    }
}

impl Sql {
    /// The statement's SQL text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The binds as literals ([`Sql::one_trip`] statements without a raw
    /// bind), taken out; `None` for any other statement. A bind that could
    /// not be encoded is [`StoreError::InvalidInput`].
    pub(crate) fn take_literals(
        &mut self,
    ) -> Result<Option<Vec<(&'static str, String)>>, StoreError> {
        if let Some(e) = &self.error {
            return Err(StoreError::invalid("value", e.clone()));
        }
        Ok(self.literals.take())
    }

    pub(crate) fn new(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            args: PgArguments::default(),
            count: 0,
            error: None,
            literals: None,
        }
    }

    /// A statement for [`one_trip`]: its binds' literals are kept.
    pub(crate) fn one_trip(text: &str) -> Self {
        Self {
            literals: Some(Vec::new()),
            ..Self::new(text)
        }
    }

    /// Append SQL text.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Append a placeholder (`$n`) bound to `value` (and, in a statement
    /// made with [`Sql::one_trip`], keep its literal).
    pub(crate) fn bind<'q, T>(&mut self, value: T) -> &mut Self
    where
        T: Literal + Encode<'q, Postgres> + Type<Postgres> + 'q,
    {
        if let Some(literals) = self.literals.as_mut() {
            let literal = value.literal();
            // A NUL would end the message early; PostgreSQL text holds none.
            if literal.contains('\0') {
                self.error
                    .get_or_insert_with(|| "contains a NUL character".to_owned());
            }
            literals.push((T::SQL_TYPE, literal));
        }
        self.add(value)
    }

    /// [`Sql::bind`] for a value with no literal (a pgvector vector): the
    /// statement then runs as three messages in [`one_trip`].
    pub(crate) fn bind_raw<'q, T>(&mut self, value: T) -> &mut Self
    where
        T: Encode<'q, Postgres> + Type<Postgres> + 'q,
    {
        self.literals = None;
        self.add(value)
    }

    fn add<'q, T>(&mut self, value: T) -> &mut Self
    where
        T: Encode<'q, Postgres> + Type<Postgres> + 'q,
    {
        match self.args.add(value) {
            Ok(()) => {
                self.count += 1;
                let _ = write!(self.text, "${}", self.count);
            }
            Err(e) => {
                self.error.get_or_insert_with(|| e.to_string());
            }
        }
        self
    }

    /// The placeholder of the last bind (`$n`), to use its value again
    /// without sending it twice.
    pub(crate) fn last_placeholder(&self) -> String {
        format!("${}", self.count)
    }

    /// Append another statement, renumbering nothing: only valid when
    /// `self` has no binds yet (e.g. an `EXPLAIN` prefix).
    pub(crate) fn append(&mut self, other: Sql) -> &mut Self {
        if self.count == 0 && self.error.is_none() {
            self.text.push_str(&other.text);
            self.args = other.args;
            self.count = other.count;
            self.error = other.error;
            self.literals = other.literals;
        } else {
            self.error
                .get_or_insert_with(|| "cannot append to a statement with binds".to_owned());
        }
        self
    }

    /// The text with every bind's type and literal, of a statement made
    /// with [`Sql::one_trip`]: equal fingerprints, equal statements. `None`
    /// when a bind has no literal or could not be encoded.
    pub(crate) fn fingerprint(&self) -> Option<String> {
        if self.error.is_some() {
            return None;
        }
        let literals = self.literals.as_ref()?;
        let mut out = self.text.clone();
        for (ty, literal) in literals {
            // Length-prefixed: no literal can pass for two.
            let _ = write!(out, "\u{1}{ty}:{}:{literal}", literal.len());
        }
        Some(out)
    }

    /// The statement, ready to run (prepared and cached per connection).
    pub(crate) fn build(self) -> Result<Query<'static, Postgres, PgArguments>, StoreError> {
        if let Some(e) = self.error {
            return Err(StoreError::invalid("value", e));
        }
        Ok(sqlx::query_with(AssertSqlSafe(self.text), self.args))
    }
}

/// `s` as an SQL string literal that means `s` whatever
/// `standard_conforming_strings` says (an `E'...'` literal).
pub(crate) fn literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    out.push_str("E'");
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// `items` as a Postgres text array literal (`{"a","b"}`).
pub(crate) fn array_literal(items: &[String]) -> String {
    let elements: Vec<String> = items.iter().map(|n| array_element(n)).collect();
    format!("{{{}}}", elements.join(","))
}

/// `s` as an element of a Postgres array literal: double-quoted, with `"`
/// and `\` escaped.
fn array_element(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_statements_and_values_apart() {
        let print = |text: &str, value: &str| {
            let mut sql = Sql::one_trip(text);
            sql.bind(value.to_owned()).push(" AND ").bind(Some(2i64));
            sql.fingerprint()
        };
        assert_eq!(print("a = ", "x"), print("a = ", "x"));
        assert_ne!(print("a = ", "x"), print("b = ", "x"));
        assert_ne!(print("a = ", "x"), print("a = ", "y"));
        // A literal cannot pass for two.
        assert_ne!(print("a = ", "x\u{1}text:1:y"), print("a = ", "x"));
        // No literals kept, or one missing: no fingerprint.
        let mut plain = Sql::new("a = ");
        plain.bind("x".to_owned());
        assert_eq!(plain.fingerprint(), None);
        let mut raw = Sql::one_trip("v = ");
        raw.bind_raw(pgvector::Vector::from(vec![1.0]));
        assert_eq!(raw.fingerprint(), None);
    }

    #[test]
    fn literals_escape_quotes_and_backslashes() {
        assert_eq!(literal("t1"), "E't1'");
        assert_eq!(literal("a'b\\c"), "E'a''b\\\\c'");
    }

    #[test]
    fn literal_binds_keep_their_literals_until_a_raw_bind() {
        let mut sql = Sql::one_trip("SELECT ");
        let at = DateTime::parse_from_rfc3339("2026-11-26T01:02:03.456789Z")
            .unwrap()
            .with_timezone(&Utc);
        sql.bind("a'b".to_owned())
            .push(", ")
            .bind(vec!["x\"y".to_owned()])
            .push(", ")
            .bind(serde_json::json!({"k": "it's"}))
            .push(", ")
            .bind(-7_i64)
            .push(", ")
            .bind(Some(0.1_f32))
            .push(", ")
            .bind(None::<String>)
            .push(", ")
            .bind(vec![Some(at), None]);
        assert_eq!(sql.text, "SELECT $1, $2, $3, $4, $5, $6, $7");
        let expected: Vec<(&str, String)> = vec![
            ("text", "E'a''b'".into()),
            ("text[]", "ARRAY[E'x\"y']::text[]".into()),
            ("jsonb", "E'{\"k\":\"it''s\"}'".into()),
            ("bigint", "-7".into()),
            ("real", "E'0.1'".into()),
            ("text", "NULL".into()),
            (
                "timestamptz[]",
                "ARRAY[E'2026-11-26T01:02:03.456789Z', NULL]::timestamptz[]".into(),
            ),
        ];
        assert_eq!(sql.literals.as_deref(), Some(&expected[..]));
        sql.bind_raw(1_i32);
        assert_eq!(sql.literals, None, "a raw bind has no literal");
        let mut plain = Sql::new("SELECT ");
        plain.bind(1_i64);
        assert_eq!(
            plain.literals, None,
            "only one_trip statements keep literals"
        );
        let mut nul = Sql::one_trip("SELECT ");
        nul.bind("a\0b".to_owned());
        assert!(nul.build().is_err(), "a NUL is refused before it is sent");
    }
}
