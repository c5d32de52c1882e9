//! Impact rules: a small typed condition language over an event's data
//! (`amount > 10000`, `customer.tier == "A"`), not free code.
//!
//! ```text
//! condition := or
//! or        := and ("or" and)*
//! and       := unary ("and" unary)*
//! unary     := "not" unary | "(" condition ")" | path test
//! test      := ("==" | "!=") scalar
//!            | (">" | ">=" | "<" | "<=") number
//!            | "in" list
//!            | "contains" scalar
//!            | "exists"
//! path      := name ("." (name | index))*     (name: letters, digits, _ and -)
//! scalar    := number | string | true | false | null
//! list      := "[" (scalar ("," scalar)*)? "]"
//! string    := "…" or '…' (backslash escapes \" \' \\ \n \t)
//! ```
//!
//! A comparison whose path is missing, or whose value is of another type
//! than the literal, does not hold (`!=` included: nothing is known about a
//! missing value). Numbers compare as numbers (`1 == 1.0`). `contains` holds
//! for a string containing a string literal, or an array containing the
//! literal. Keywords are lowercase.
//!
//! ```
//! use openvibe_roles::Condition;
//! use serde_json::json;
//! let rule: Condition = "amount > 10000 or customer.tier == \"A\"".parse().unwrap();
//! assert!(rule.holds(&json!({"amount": 25000})));
//! assert!(rule.holds(&json!({"amount": 10, "customer": {"tier": "A"}})));
//! assert!(!rule.holds(&json!({"amount": 10})));
//! let err = "amount >".parse::<Condition>().unwrap_err();
//! assert_eq!(err.to_string(), "column 9: expected a number after `>`");
//! ```

use std::fmt;
use std::str::FromStr;

use openvibe_protocols::{Impact, ImpactStep};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The most characters a condition may have.
pub const MAX_CONDITION_CHARS: usize = 2_000;

/// How deeply conditions may nest (`not`, parentheses, `and`/`or`).
pub const MAX_CONDITION_DEPTH: usize = 32;

/// A condition that does not parse: where (a 1-based character column) and
/// why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("column {column}: {message}")]
pub struct RuleError {
    /// The 1-based column (in characters) of the problem.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// A literal value in a condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A number.
    Number(f64),
    /// A string.
    String(String),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
}

impl Literal {
    fn matches(&self, value: &Value) -> bool {
        match (self, value) {
            (Self::Number(n), Value::Number(v)) => v.as_f64() == Some(*n),
            (Self::String(s), Value::String(v)) => s == v,
            (Self::Bool(b), Value::Bool(v)) => b == v,
            (Self::Null, Value::Null) => true,
            _ => false,
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => {
                f.write_str("\"")?;
                for c in s.chars() {
                    match c {
                        '"' => f.write_str("\\\"")?,
                        '\\' => f.write_str("\\\\")?,
                        '\n' => f.write_str("\\n")?,
                        '\t' => f.write_str("\\t")?,
                        c => write!(f, "{c}")?,
                    }
                }
                f.write_str("\"")
            }
            Self::Bool(b) => write!(f, "{b}"),
            Self::Null => f.write_str("null"),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Compare {
    fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Lt => "<",
            Self::Le => "<=",
        }
    }
}

/// One segment of a path: a key, or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// An object key.
    Key(String),
    /// An array index (also tried as a key).
    Index(usize),
}

/// A parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Both hold.
    And(Box<Condition>, Box<Condition>),
    /// Either holds.
    Or(Box<Condition>, Box<Condition>),
    /// It does not hold.
    Not(Box<Condition>),
    /// `path op literal`.
    Compare(Vec<Segment>, Compare, Literal),
    /// `path in [..]`.
    In(Vec<Segment>, Vec<Literal>),
    /// `path contains literal`.
    Contains(Vec<Segment>, Literal),
    /// `path exists`.
    Exists(Vec<Segment>),
}

impl Condition {
    /// Whether it holds for `data`.
    pub fn holds(&self, data: &Value) -> bool {
        match self {
            Self::And(a, b) => a.holds(data) && b.holds(data),
            Self::Or(a, b) => a.holds(data) || b.holds(data),
            Self::Not(c) => !c.holds(data),
            Self::Exists(path) => lookup(data, path).is_some(),
            Self::Compare(path, op, literal) => {
                let Some(value) = lookup(data, path) else {
                    return false;
                };
                match op {
                    Compare::Eq => literal.matches(value),
                    Compare::Ne => same_type(literal, value) && !literal.matches(value),
                    _ => match (literal, value.as_f64()) {
                        (Literal::Number(n), Some(v)) => match op {
                            Compare::Gt => v > *n,
                            Compare::Ge => v >= *n,
                            Compare::Lt => v < *n,
                            _ => v <= *n,
                        },
                        _ => false,
                    },
                }
            }
            Self::In(path, list) => {
                lookup(data, path).is_some_and(|v| list.iter().any(|l| l.matches(v)))
            }
            Self::Contains(path, literal) => match (lookup(data, path), literal) {
                (Some(Value::String(s)), Literal::String(part)) => s.contains(part.as_str()),
                (Some(Value::Array(items)), literal) => items.iter().any(|i| literal.matches(i)),
                _ => false,
            },
        }
    }
}

fn same_type(literal: &Literal, value: &Value) -> bool {
    matches!(
        (literal, value),
        (Literal::Number(_), Value::Number(_))
            | (Literal::String(_), Value::String(_))
            | (Literal::Bool(_), Value::Bool(_))
            | (Literal::Null, Value::Null)
    )
}

fn lookup<'a>(data: &'a Value, path: &[Segment]) -> Option<&'a Value> {
    path.iter().try_fold(data, |v, segment| match (segment, v) {
        (Segment::Key(k), Value::Object(map)) => map.get(k),
        (Segment::Index(i), Value::Array(items)) => items.get(*i),
        (Segment::Index(i), Value::Object(map)) => map.get(&i.to_string()),
        _ => None,
    })
}

fn write_path(f: &mut fmt::Formatter<'_>, path: &[Segment]) -> fmt::Result {
    for (i, segment) in path.iter().enumerate() {
        if i > 0 {
            f.write_str(".")?;
        }
        match segment {
            Segment::Key(k) => f.write_str(k)?,
            Segment::Index(n) => write!(f, "{n}")?,
        }
    }
    Ok(())
}

impl fmt::Display for Condition {
    /// The condition written back, fully parenthesised where it nests (it
    /// parses to the same condition).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::And(a, b) => write!(f, "({a} and {b})"),
            Self::Or(a, b) => write!(f, "({a} or {b})"),
            Self::Not(c) => write!(f, "not {c}"),
            Self::Compare(path, op, literal) => {
                write_path(f, path)?;
                write!(f, " {} {literal}", op.as_str())
            }
            Self::In(path, list) => {
                write_path(f, path)?;
                f.write_str(" in [")?;
                for (i, l) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{l}")?;
                }
                f.write_str("]")
            }
            Self::Contains(path, literal) => {
                write_path(f, path)?;
                write!(f, " contains {literal}")
            }
            Self::Exists(path) => {
                write_path(f, path)?;
                f.write_str(" exists")
            }
        }
    }
}

impl FromStr for Condition {
    type Err = RuleError;

    fn from_str(text: &str) -> Result<Self, RuleError> {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() > MAX_CONDITION_CHARS {
            return Err(RuleError {
                column: MAX_CONDITION_CHARS + 1,
                message: format!("a condition has at most {MAX_CONDITION_CHARS} characters"),
            });
        }
        let tokens = lex(&chars)?;
        let mut parser = Parser {
            tokens,
            at: 0,
            end: chars.len() + 1,
            depth: 0,
        };
        let condition = parser.or()?;
        match parser.peek() {
            None => Ok(condition),
            Some(token) => Err(parser.error_at(
                token.column,
                format!("unexpected `{}` after a complete condition", token.kind),
            )),
        }
    }
}

impl TryFrom<String> for Condition {
    type Error = RuleError;
    fn try_from(text: String) -> Result<Self, RuleError> {
        text.parse()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Name(String),
    Number(f64),
    Str(String),
    Op(Compare),
    Dot,
    Comma,
    Open,
    Close,
    OpenList,
    CloseList,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(n) => f.write_str(n),
            Self::Number(n) => write!(f, "{n}"),
            Self::Str(s) => write!(f, "{:?}", s),
            Self::Op(op) => f.write_str(op.as_str()),
            Self::Dot => f.write_str("."),
            Self::Comma => f.write_str(","),
            Self::Open => f.write_str("("),
            Self::Close => f.write_str(")"),
            Self::OpenList => f.write_str("["),
            Self::CloseList => f.write_str("]"),
        }
    }
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    column: usize,
}

fn lex(chars: &[char]) -> Result<Vec<Token>, RuleError> {
    let mut tokens = Vec::new();
    let mut i = 0;
    let err = |column: usize, message: String| RuleError { column, message };
    while let Some(&c) = chars.get(i) {
        let column = i + 1;
        let single = match c {
            '.' => Some(Kind::Dot),
            ',' => Some(Kind::Comma),
            '(' => Some(Kind::Open),
            ')' => Some(Kind::Close),
            '[' => Some(Kind::OpenList),
            ']' => Some(Kind::CloseList),
            _ => None,
        };
        if c.is_whitespace() {
            i += 1;
        } else if let Some(kind) = single {
            tokens.push(Token { kind, column });
            i += 1;
        } else if matches!(c, '=' | '!' | '<' | '>') {
            let next = chars.get(i + 1) == Some(&'=');
            let op = match (c, next) {
                ('=', true) => Compare::Eq,
                ('!', true) => Compare::Ne,
                ('<', true) => Compare::Le,
                ('>', true) => Compare::Ge,
                ('<', false) => Compare::Lt,
                ('>', false) => Compare::Gt,
                _ => {
                    return Err(err(
                        column,
                        format!("`{c}` is no operator (use ==, !=, >, >=, <, <=)"),
                    ));
                }
            };
            tokens.push(Token {
                kind: Kind::Op(op),
                column,
            });
            i += if next { 2 } else { 1 };
        } else if c == '"' || c == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(err(column, "this string is never closed".into())),
                    Some(&q) if q == c => break,
                    Some('\\') => {
                        let escaped = match chars.get(i + 1) {
                            Some('"') => '"',
                            Some('\'') => '\'',
                            Some('\\') => '\\',
                            Some('n') => '\n',
                            Some('t') => '\t',
                            _ => {
                                return Err(err(
                                    i + 1,
                                    "unknown escape (use \\\" \\' \\\\ \\n \\t)".into(),
                                ));
                            }
                        };
                        s.push(escaped);
                        i += 2;
                    }
                    Some(&other) => {
                        s.push(other);
                        i += 1;
                    }
                }
            }
            i += 1;
            tokens.push(Token {
                kind: Kind::Str(s),
                column,
            });
        } else if c.is_ascii_digit()
            || (c == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            let start = i;
            i += 1;
            // After a `.` of a path, an array index: digits only.
            let index = matches!(
                tokens.last(),
                Some(Token {
                    kind: Kind::Dot,
                    ..
                })
            );
            let digit = |at: usize| chars.get(at).is_some_and(char::is_ascii_digit);
            loop {
                match chars.get(i) {
                    Some(d) if d.is_ascii_digit() || *d == '_' => i += 1,
                    Some('.') if !index && digit(i + 1) => i += 1,
                    Some('e' | 'E')
                        if !index
                            && (digit(i + 1)
                                || (matches!(chars.get(i + 1), Some('-' | '+'))
                                    && digit(i + 2))) =>
                    {
                        i += 2
                    }
                    _ => break,
                }
            }
            let text: String = chars
                .get(start..i)
                .unwrap_or_default()
                .iter()
                .filter(|c| **c != '_')
                .collect();
            let number: f64 = text
                .parse()
                .ok()
                .filter(|n: &f64| n.is_finite())
                .ok_or_else(|| err(column, format!("`{text}` is not a number")))?;
            tokens.push(Token {
                kind: Kind::Number(number),
                column,
            });
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while chars
                .get(i)
                .is_some_and(|d| d.is_alphanumeric() || matches!(d, '_' | '-'))
            {
                i += 1;
            }
            tokens.push(Token {
                kind: Kind::Name(chars.get(start..i).unwrap_or_default().iter().collect()),
                column,
            });
        } else {
            return Err(err(column, format!("unexpected character `{c}`")));
        }
    }
    Ok(tokens)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// The column just past the end (where "expected …" at the end points).
    end: usize,
    depth: usize,
}

const KEYWORDS: [&str; 9] = [
    "and", "or", "not", "in", "contains", "exists", "true", "false", "null",
];

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += usize::from(token.is_some());
        token
    }

    fn column(&self) -> usize {
        self.peek().map_or(self.end, |t| t.column)
    }

    fn error_at(&self, column: usize, message: String) -> RuleError {
        RuleError { column, message }
    }

    fn keyword(&mut self, word: &str) -> bool {
        if matches!(self.peek(), Some(Token { kind: Kind::Name(n), .. }) if n == word) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn deeper(&mut self) -> Result<(), RuleError> {
        self.depth += 1;
        if self.depth > MAX_CONDITION_DEPTH {
            return Err(self.error_at(
                self.column(),
                format!("conditions nest at most {MAX_CONDITION_DEPTH} deep"),
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Condition, RuleError> {
        self.deeper()?;
        let mut left = self.and()?;
        while self.keyword("or") {
            let right = self.and()?;
            left = Condition::Or(Box::new(left), Box::new(right));
        }
        self.depth -= 1;
        Ok(left)
    }

    fn and(&mut self) -> Result<Condition, RuleError> {
        let mut left = self.unary()?;
        while self.keyword("and") {
            let right = self.unary()?;
            left = Condition::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Condition, RuleError> {
        if self.keyword("not") {
            self.deeper()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Condition::Not(Box::new(inner)));
        }
        if matches!(
            self.peek(),
            Some(Token {
                kind: Kind::Open,
                ..
            })
        ) {
            self.at += 1;
            let inner = self.or()?;
            return match self.next() {
                Some(Token {
                    kind: Kind::Close, ..
                }) => Ok(inner),
                Some(t) => {
                    Err(self.error_at(t.column, format!("expected `)`, found `{}`", t.kind)))
                }
                None => Err(self.error_at(self.end, "expected `)`".into())),
            };
        }
        let path = self.path()?;
        self.test(path)
    }

    fn path(&mut self) -> Result<Vec<Segment>, RuleError> {
        let column = self.column();
        let mut path = match self.next() {
            Some(Token {
                kind: Kind::Name(n),
                column,
            }) => {
                if KEYWORDS.contains(&n.as_str()) {
                    return Err(self.error_at(
                        column,
                        format!("expected a field of the event's data, found the keyword `{n}`"),
                    ));
                }
                vec![Segment::Key(n)]
            }
            Some(t) => {
                return Err(self.error_at(
                    t.column,
                    format!("expected a field of the event's data, found `{}`", t.kind),
                ));
            }
            None => {
                return Err(self.error_at(column, "expected a condition".into()));
            }
        };
        while matches!(
            self.peek(),
            Some(Token {
                kind: Kind::Dot,
                ..
            })
        ) {
            self.at += 1;
            match self.next() {
                Some(Token {
                    kind: Kind::Name(n),
                    ..
                }) => path.push(Segment::Key(n)),
                Some(Token {
                    kind: Kind::Number(n),
                    column,
                }) => {
                    if n.fract() != 0.0 || !(0.0..=1e9).contains(&n) {
                        return Err(self.error_at(column, format!("`{n}` is no array index")));
                    }
                    // Integral, non-negative and bounded: the cast is exact.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    path.push(Segment::Index(n as usize));
                }
                Some(t) => {
                    return Err(self.error_at(
                        t.column,
                        format!("expected a field name after `.`, found `{}`", t.kind),
                    ));
                }
                None => {
                    return Err(self.error_at(self.end, "expected a field name after `.`".into()));
                }
            }
        }
        Ok(path)
    }

    fn test(&mut self, path: Vec<Segment>) -> Result<Condition, RuleError> {
        let column = self.column();
        match self.next() {
            Some(Token {
                kind: Kind::Op(op), ..
            }) => {
                let value_column = self.column();
                let literal = self.scalar().map_err(|_| {
                    self.error_at(
                        value_column,
                        match op {
                            Compare::Eq | Compare::Ne => {
                                format!("expected a value after `{}`", op.as_str())
                            }
                            _ => format!("expected a number after `{}`", op.as_str()),
                        },
                    )
                })?;
                if !matches!(op, Compare::Eq | Compare::Ne) && !matches!(literal, Literal::Number(_)) {
                    return Err(self.error_at(
                        value_column,
                        format!("`{}` compares numbers; `{literal}` is not one", op.as_str()),
                    ));
                }
                Ok(Condition::Compare(path, op, literal))
            }
            Some(Token {
                kind: Kind::Name(word),
                column,
            }) => match word.as_str() {
                "exists" => Ok(Condition::Exists(path)),
                "contains" => {
                    let value_column = self.column();
                    let literal = self.scalar().map_err(|_| {
                        self.error_at(value_column, "expected a value after `contains`".into())
                    })?;
                    Ok(Condition::Contains(path, literal))
                }
                "in" => Ok(Condition::In(path, self.list()?)),
                other => Err(self.error_at(
                    column,
                    format!("expected an operator (==, !=, >, >=, <, <=, in, contains, exists), found `{other}`"),
                )),
            },
            Some(t) => Err(self.error_at(
                t.column,
                format!("expected an operator (==, !=, >, >=, <, <=, in, contains, exists), found `{}`", t.kind),
            )),
            None => Err(self.error_at(
                column,
                "expected an operator (==, !=, >, >=, <, <=, in, contains, exists)".into(),
            )),
        }
    }

    /// A scalar literal; `Err(())` when the next token is none.
    fn scalar(&mut self) -> Result<Literal, ()> {
        let literal = match self.peek().map(|t| &t.kind) {
            Some(Kind::Number(n)) => Literal::Number(*n),
            Some(Kind::Str(s)) => Literal::String(s.clone()),
            Some(Kind::Name(n)) if n == "true" => Literal::Bool(true),
            Some(Kind::Name(n)) if n == "false" => Literal::Bool(false),
            Some(Kind::Name(n)) if n == "null" => Literal::Null,
            _ => return Err(()),
        };
        self.at += 1;
        Ok(literal)
    }

    fn list(&mut self) -> Result<Vec<Literal>, RuleError> {
        match self.next() {
            Some(Token {
                kind: Kind::OpenList,
                ..
            }) => {}
            Some(t) => {
                return Err(self.error_at(
                    t.column,
                    format!("expected a list `[…]` after `in`, found `{}`", t.kind),
                ));
            }
            None => return Err(self.error_at(self.end, "expected a list `[…]` after `in`".into())),
        }
        let mut items = Vec::new();
        if matches!(
            self.peek(),
            Some(Token {
                kind: Kind::CloseList,
                ..
            })
        ) {
            self.at += 1;
            return Ok(items);
        }
        loop {
            let column = self.column();
            items.push(
                self.scalar()
                    .map_err(|_| self.error_at(column, "expected a value in the list".into()))?,
            );
            match self.next() {
                Some(Token {
                    kind: Kind::Comma, ..
                }) => {}
                Some(Token {
                    kind: Kind::CloseList,
                    ..
                }) => return Ok(items),
                Some(t) => {
                    return Err(
                        self.error_at(t.column, format!("expected `,` or `]`, found `{}`", t.kind))
                    );
                }
                None => return Err(self.error_at(self.end, "expected `]`".into())),
            }
        }
    }
}

/// One impact rule of a role: when the condition holds for an event's
/// data, the action has this impact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImpactRule {
    /// The condition, as written (`amount > 10000`).
    #[serde(with = "as_text")]
    pub when: Condition,
    /// The impact when it holds.
    pub impact: Impact,
}

/// A role's impact rules: the highest impact among the rules that hold
/// (the first rule of that level is recorded), else the default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImpactRules {
    /// The rules.
    #[serde(default)]
    pub rules: Vec<ImpactRule>,
    /// The impact when no rule holds (default `low`).
    #[serde(default = "low")]
    pub default: Impact,
}

fn low() -> Impact {
    Impact::Low
}

impl Default for ImpactRules {
    fn default() -> Self {
        Self::new()
    }
}

impl ImpactRules {
    /// No rules: every action has the default impact, `low`.
    pub fn new() -> Self {
        Self {
            rules: Vec::new(),
            default: Impact::Low,
        }
    }

    /// Add a rule (`when` must parse).
    pub fn rule(mut self, when: &str, impact: Impact) -> Result<Self, RuleError> {
        self.rules.push(ImpactRule {
            when: when.parse()?,
            impact,
        });
        Ok(self)
    }

    /// Set the default impact.
    #[must_use]
    pub fn default_impact(mut self, impact: Impact) -> Self {
        self.default = impact;
        self
    }

    /// The impact of an event with `data`, and why.
    pub fn assess(&self, data: &Value) -> ImpactStep {
        let fired = self.rules.iter().filter(|r| r.when.holds(data)).fold(
            None::<&ImpactRule>,
            |best, r| match best {
                Some(b) if b.impact >= r.impact => Some(b),
                _ => Some(r),
            },
        );
        match fired {
            Some(rule) if rule.impact >= self.default => ImpactStep {
                impact: rule.impact,
                rule: Some(rule.when.to_string()),
                reason: format!("the rule `{}` holds", rule.when),
            },
            _ => ImpactStep {
                impact: self.default,
                rule: None,
                reason: if self.rules.is_empty() {
                    "no impact rules: the default".to_owned()
                } else {
                    "no impact rule holds: the default".to_owned()
                },
            },
        }
    }
}

mod as_text {
    use super::Condition;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(c: &Condition, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(c)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Condition, D::Error> {
        let text = String::deserialize(d)?;
        text.parse()
            .map_err(|e| serde::de::Error::custom(format!("in `{text}`: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Condition {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> String {
        text.parse::<Condition>().unwrap_err().to_string()
    }

    #[test]
    fn conditions_hold_as_the_table_says() {
        let data = json!({
            "amount": 12500,
            "customer": {"tier": "A", "name": "Acme Corp", "tags": ["vip", 3]},
            "items": [{"price": 10.5}],
            "renewal": false,
            "note": null
        });
        let table: &[(&str, bool)] = &[
            ("amount > 10000", true),
            ("amount >= 12500", true),
            ("amount < 12500", false),
            ("amount <= 12500.0", true),
            ("amount == 12500.0", true),
            ("amount != 1", true),
            ("amount > 1_000_000", false),
            ("customer.tier == \"A\"", true),
            ("customer.tier == 'B'", false),
            ("customer.tier != \"B\"", true),
            ("customer.tier > 1", false),
            ("customer.name contains \"Acme\"", true),
            ("customer.tags contains \"vip\"", true),
            ("customer.tags contains 3", true),
            ("customer.tags contains \"gold\"", false),
            ("customer.tier in [\"A\", \"B\"]", true),
            ("customer.tier in []", false),
            ("items.0.price < 11", true),
            ("items.1.price < 11", false),
            ("renewal == false", true),
            ("note == null", true),
            ("note exists", true),
            ("missing exists", false),
            ("missing != 1", false),
            ("missing == null", false),
            ("not missing exists", true),
            ("amount > 10000 and customer.tier == \"B\"", false),
            ("amount > 10000 or customer.tier == \"B\"", true),
            ("not (amount > 10000 or renewal == true)", false),
            ("amount > -5 and amount < 1e6", true),
        ];
        for (text, expected) in table {
            assert_eq!(parse(text).holds(&data), *expected, "{text}");
        }
    }

    #[test]
    fn and_binds_tighter_than_or() {
        let c = parse("a == 1 or b == 1 and c == 1");
        assert!(c.holds(&json!({"a": 1})));
        assert!(!c.holds(&json!({"b": 1})));
        assert_eq!(c.to_string(), "(a == 1 or (b == 1 and c == 1))");
    }

    #[test]
    fn bad_conditions_say_where() {
        assert_eq!(error(""), "column 1: expected a condition");
        assert_eq!(error("amount >"), "column 9: expected a number after `>`");
        assert_eq!(
            error("amount > \"x\""),
            "column 10: `>` compares numbers; `\"x\"` is not one"
        );
        assert_eq!(
            error("amount = 5"),
            "column 8: `=` is no operator (use ==, !=, >, >=, <, <=)"
        );
        assert_eq!(
            error("amount > 5 amount"),
            "column 12: unexpected `amount` after a complete condition"
        );
        assert_eq!(
            error("tier == \"A"),
            "column 9: this string is never closed"
        );
        assert_eq!(
            error("tier in \"A\""),
            "column 9: expected a list `[…]` after `in`, found `\"A\"`"
        );
        assert_eq!(error("(a == 1"), "column 8: expected `)`");
        assert_eq!(
            error("and == 1"),
            "column 1: expected a field of the event's data, found the keyword `and`"
        );
        assert_eq!(
            error("tier is 1"),
            "column 6: expected an operator (==, !=, >, >=, <, <=, in, contains, exists), found `is`"
        );
        assert_eq!(
            error("a.b. == 1"),
            "column 6: expected a field name after `.`, found `==`"
        );
        assert_eq!(error("amount # 5"), "column 8: unexpected character `#`");
        let deep = format!("{}a == 1{}", "(".repeat(40), ")".repeat(40));
        assert!(error(&deep).contains("nest at most"));
        assert!(error(&"a".repeat(MAX_CONDITION_CHARS + 1)).contains("at most"));
    }

    #[test]
    fn rules_pick_the_highest_impact_that_holds() {
        let rules = ImpactRules::new()
            .rule("amount > 1000", Impact::Medium)
            .unwrap()
            .rule("amount > 10000", Impact::High)
            .unwrap()
            .rule("customer.tier == \"A\"", Impact::High)
            .unwrap();
        let step = rules.assess(&json!({"amount": 50000, "customer": {"tier": "A"}}));
        assert_eq!(step.impact, Impact::High);
        assert_eq!(step.rule.as_deref(), Some("amount > 10000"));
        assert_eq!(
            rules.assess(&json!({"amount": 5000})).impact,
            Impact::Medium
        );
        let none = rules.assess(&json!({"amount": 5}));
        assert_eq!((none.impact, none.rule), (Impact::Low, None));
        let floor = ImpactRules::new()
            .rule("amount > 1", Impact::Low)
            .unwrap()
            .default_impact(Impact::Medium);
        assert_eq!(floor.assess(&json!({"amount": 5})).impact, Impact::Medium);
    }

    #[test]
    fn rules_read_from_yaml_with_the_condition_checked() {
        let rules: ImpactRules = yaml_serde::from_str(
            "rules:\n  - { when: 'amount > 10000', impact: high }\ndefault: medium\n",
        )
        .unwrap();
        assert_eq!(rules.rules[0].impact, Impact::High);
        assert_eq!(rules.default, Impact::Medium);
        let bad = yaml_serde::from_str::<ImpactRules>(
            "rules:\n  - { when: 'amount >> 1', impact: high }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(bad.contains("column 9") && bad.contains("line 2"), "{bad}");
        assert!(
            yaml_serde::from_str::<ImpactRules>("rules:\n  - { when: 'a > 1', impact: huge }\n")
                .is_err()
        );
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn literal() -> impl Strategy<Value = Literal> {
            prop_oneof![
                (-1.0e6..1.0e6f64).prop_map(|n| Literal::Number((n * 100.0).round() / 100.0)),
                "[a-zA-Z0-9 \"'\\\\]{0,8}".prop_map(Literal::String),
                any::<bool>().prop_map(Literal::Bool),
                Just(Literal::Null),
            ]
        }

        fn path() -> impl Strategy<Value = Vec<Segment>> {
            (
                "[a-z_][a-z0-9_]{0,5}",
                prop::collection::vec(
                    prop_oneof![
                        "[a-z_][a-z0-9_]{0,5}".prop_map(Segment::Key),
                        (0usize..5).prop_map(Segment::Index),
                    ],
                    0..3,
                ),
            )
                .prop_filter("not a keyword", |(first, _)| {
                    !KEYWORDS.contains(&first.as_str())
                })
                .prop_map(|(first, rest)| {
                    let mut p = vec![Segment::Key(first)];
                    p.extend(rest.into_iter().filter(|s| match s {
                        Segment::Key(k) => !KEYWORDS.contains(&k.as_str()),
                        Segment::Index(_) => true,
                    }));
                    p
                })
        }

        fn condition() -> impl Strategy<Value = Condition> {
            let leaf = prop_oneof![
                (path(), literal()).prop_map(|(p, l)| Condition::Compare(p, Compare::Eq, l)),
                (path(), literal()).prop_map(|(p, l)| Condition::Compare(p, Compare::Ne, l)),
                (path(), -1.0e6..1.0e6f64).prop_map(|(p, n)| {
                    Condition::Compare(p, Compare::Ge, Literal::Number(n.round()))
                }),
                (path(), prop::collection::vec(literal(), 0..3))
                    .prop_map(|(p, l)| Condition::In(p, l)),
                (path(), literal()).prop_map(|(p, l)| Condition::Contains(p, l)),
                path().prop_map(Condition::Exists),
            ];
            leaf.prop_recursive(4, 16, 2, |inner| {
                prop_oneof![
                    (inner.clone(), inner.clone())
                        .prop_map(|(a, b)| Condition::And(Box::new(a), Box::new(b))),
                    (inner.clone(), inner.clone())
                        .prop_map(|(a, b)| Condition::Or(Box::new(a), Box::new(b))),
                    inner.prop_map(|c| Condition::Not(Box::new(c))),
                ]
            })
        }

        proptest! {
            #[test]
            fn a_condition_written_back_parses_to_itself(c in condition()) {
                let text = c.to_string();
                let again: Condition = text.parse().map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
                prop_assert_eq!(again, c);
            }

            #[test]
            fn any_text_parses_or_fails_with_a_column_inside_it(text in "\\PC{0,60}") {
                if let Err(e) = text.parse::<Condition>() {
                    prop_assert!(e.column >= 1 && e.column <= text.chars().count() + 1, "{e}");
                }
            }
        }
    }
}
