//! SQL building blocks shared by the stores: a statement builder with
//! typed binds, tenant-confined transactions, the read and modify rules as
//! SQL predicates, text-search terms, input validation and row decoding.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use openvibe_protocols::{
    CallerContext, Change, Classification, NamespaceScope, Placement, RecordMeta, Retention,
    StoreError, text_terms,
};
use sqlx::postgres::{PgArguments, PgConnection, PgRow};
use sqlx::query::Query;
use sqlx::{Arguments, AssertSqlSafe, Encode, PgPool, Postgres, Row, Transaction, Type};

use crate::error::store_error;

pub use openvibe_protocols::MAX_LABEL_LEN;

pub use openvibe_protocols::memory::{MAX_SEARCH_BYTES, MAX_WORD_LEN};

/// A transaction of a caller (see [`begin`]).
pub(crate) type Tx = Transaction<'static, Postgres>;

/// A statement under construction: SQL text plus its binds, numbered as
/// they are added. A bind that cannot be encoded is reported when the
/// statement is built, never as a panic.
#[derive(Clone)]
pub(crate) struct Sql {
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

/// Begin a transaction confined to the caller: `BEGIN` and the
/// transaction-local settings the row-level security policies and the audit
/// triggers read, sent together in one round trip: `openvibe.tenant_id`,
/// `openvibe.principal` (the caller's owner key), and for a governed
/// caller `openvibe.namespaces` (the namespaces it may read, as a text
/// array literal), `openvibe.project_id` and `openvibe.delete_any` (where it
/// may delete others' records; `{*}` when privileged). The settings end with the
/// transaction, so a pooled connection never carries them over.
pub(crate) async fn begin(
    pool: &PgPool,
    ctx: &CallerContext,
) -> Result<Transaction<'static, Postgres>, StoreError> {
    begin_then(pool, ctx, None).await
}

/// [`begin`], then delete the expired rows of `table` that a write of
/// `ids` would collide with (in the same round trip): an expired record is
/// gone, and storing its id again stores a new record in its place. The
/// deletes are audited by the table's triggers like any other. Stores use
/// it to retry a write that an expired row blocked
/// ([`maybe_blocked_by_expired`](crate::error::maybe_blocked_by_expired)),
/// so writes pay nothing for expiry until one collides.
pub(crate) async fn begin_replacing_expired(
    pool: &PgPool,
    ctx: &CallerContext,
    table: &str,
    ids: &[String],
) -> Result<Transaction<'static, Postgres>, StoreError> {
    let purge = format!(
        "{INCLUDE_EXPIRED}; DELETE FROM {table} WHERE tenant_id = {} AND expires_at <= now() \
         AND id = ANY({}::text[]); {EXCLUDE_EXPIRED}",
        literal(ctx.tenant_id()),
        literal(&array_literal(ids))
    );
    begin_then(pool, ctx, Some(&purge)).await
}

/// How [`write_replacing_expired`] runs its statement.
#[derive(Clone, Copy)]
pub(crate) enum Run {
    /// `fetch_optional`.
    Optional,
    /// `execute` (rows affected).
    Execute,
    /// `fetch_all`.
    All,
}

/// What a statement run as [`Run`] says.
pub(crate) enum Ran {
    /// At most one row.
    Optional(Option<PgRow>),
    /// Rows affected.
    Execute(u64),
    /// Every row.
    All(Vec<PgRow>),
}

impl Ran {
    /// A statement's answer other than the one its [`Run`] gives.
    fn mismatch(run: &str) -> StoreError {
        StoreError::backend(format!("a statement run as `{run}` answered otherwise"))
    }

    /// The rows affected of [`Run::Execute`].
    pub(crate) fn affected(self) -> Result<u64, StoreError> {
        match self {
            Ran::Execute(n) => Ok(n),
            _ => Err(Self::mismatch("execute")),
        }
    }

    /// The row of [`Run::Optional`].
    pub(crate) fn row(self) -> Result<Option<PgRow>, StoreError> {
        match self {
            Ran::Optional(row) => Ok(row),
            _ => Err(Self::mismatch("fetch_optional")),
        }
    }

    /// The rows of [`Run::All`].
    pub(crate) fn rows(self) -> Result<Vec<PgRow>, StoreError> {
        match self {
            Ran::All(rows) => Ok(rows),
            _ => Err(Self::mismatch("fetch_all")),
        }
    }
}

async fn run_in(tx: &mut Tx, sql: Sql, run: Run) -> Result<Ran, StoreError> {
    let query = sql.build()?;
    Ok(match run {
        Run::Optional => Ran::Optional(query.fetch_optional(&mut **tx).await.map_err(store_error)?),
        Run::Execute => Ran::Execute(
            query
                .execute(&mut **tx)
                .await
                .map_err(store_error)?
                .rows_affected(),
        ),
        Run::All => Ran::All(query.fetch_all(&mut **tx).await.map_err(store_error)?),
    })
}

/// Begin a transaction for `ctx` and run the write `sql` of `ids` into
/// `table` in it; when an expired row was in its way
/// ([`maybe_blocked_by_expired`](crate::error::maybe_blocked_by_expired)),
/// roll back and run it once more in a transaction that first deletes the
/// expired rows of those ids ([`begin_replacing_expired`]). Returns the open
/// transaction (for the caller to commit) and what the statement said.
pub(crate) async fn write_replacing_expired(
    pool: &PgPool,
    ctx: &CallerContext,
    table: &str,
    ids: &[String],
    sql: Sql,
    run: Run,
) -> Result<(Tx, Ran), StoreError> {
    let mut tx = begin(pool, ctx).await?;
    match run_in(&mut tx, sql.clone(), run).await {
        Ok(done) => Ok((tx, done)),
        Err(e) if crate::error::maybe_blocked_by_expired(&e) => {
            let _ = tx.rollback().await;
            let mut tx = begin_replacing_expired(pool, ctx, table, ids).await?;
            let done = run_in(&mut tx, sql, run).await?;
            Ok((tx, done))
        }
        Err(e) => Err(e),
    }
}

/// Make expired rows visible to the rest of the transaction (the
/// `unexpired` policy's switch).
pub(crate) const INCLUDE_EXPIRED: &str =
    "SELECT set_config('openvibe.include_expired', 'on', true)";
/// Hide expired rows again.
pub(crate) const EXCLUDE_EXPIRED: &str = "SELECT set_config('openvibe.include_expired', '', true)";

/// [`begin`], then run `then` (statements without binds) in the same round trip.
pub(crate) async fn begin_then(
    pool: &PgPool,
    ctx: &CallerContext,
    then: Option<&str>,
) -> Result<Transaction<'static, Postgres>, StoreError> {
    let statement = begin_statement(ctx, then)?;
    pool.begin_with(AssertSqlSafe(statement))
        .await
        .map_err(store_error)
}

/// [`begin_then`] on an idle connection of the pool, or `None` at once when
/// none is idle (never waits for one: a caller that already holds a
/// connection cannot deadlock the pool by asking for a second).
pub(crate) async fn try_begin_then(
    pool: &PgPool,
    ctx: &CallerContext,
    then: Option<&str>,
) -> Result<Option<Transaction<'static, Postgres>>, StoreError> {
    let statement = begin_statement(ctx, then)?;
    pool.try_begin_with(AssertSqlSafe(statement))
        .await
        .map_err(store_error)
}

/// The statement that begins a transaction as `ctx`: BEGIN, the session
/// settings the row-level security policies read, then `then`.
fn begin_statement(ctx: &CallerContext, then: Option<&str>) -> Result<String, StoreError> {
    let mut statement = format!("BEGIN; {}", context_settings(ctx)?);
    if let Some(then) = then {
        statement.push_str("; ");
        statement.push_str(then);
    }
    Ok(statement)
}

/// The transaction-local settings of `ctx` (see [`begin`]) as `SET LOCAL`
/// statements, which return no rows.
pub(crate) fn context_settings(ctx: &CallerContext) -> Result<String, StoreError> {
    let tenant = ctx.tenant_id();
    check_label("tenant_id", tenant)?;
    let mut settings = vec![
        ("tenant_id", literal(tenant)),
        ("principal", literal(&ctx.owner_key())),
    ];
    if let (NamespaceScope::Only(namespaces), Some(grants)) = (ctx.read_scope(), ctx.grants()) {
        let delete_any: Vec<String> = if ctx.is_privileged() {
            vec!["*".to_owned()]
        } else {
            grants
                .managed(Change::Delete)
                .into_iter()
                .map(str::to_owned)
                .collect()
        };
        settings.push(("namespaces", literal(&array_literal(&namespaces))));
        settings.push(("project_id", literal(ctx.project_id().unwrap_or(""))));
        settings.push(("delete_any", literal(&array_literal(&delete_any))));
    }
    let statements: Vec<String> = settings
        .into_iter()
        .map(|(name, value)| format!("SET LOCAL openvibe.{name} = {value}"))
        .collect();
    Ok(statements.join("; "))
}

/// Run `sql` as `ctx` in one round trip and return its rows (in text
/// format): the caller's settings and `EXECUTE` of the statement go as one
/// simple-protocol message, which PostgreSQL runs as one implicit
/// transaction (committed when every part succeeds, rolled back
/// otherwise). The statement is prepared once per connection with SQL
/// `PREPARE` under a name hashed from its types and text, so it is planned
/// like any prepared statement; a connection that lacks it gets it in a
/// second message (the first did nothing: its `EXECUTE` failed). BEGIN,
/// the statement and COMMIT as three messages cost two round trips more,
/// which is most of a small write's time on a busy server. A statement not
/// made with [`Sql::one_trip`], or with a [`Sql::bind_raw`] bind, runs as
/// three messages.
pub(crate) async fn one_trip(
    pool: &PgPool,
    ctx: &CallerContext,
    mut sql: Sql,
) -> Result<Vec<PgRow>, StoreError> {
    if let Some(e) = sql.error {
        return Err(StoreError::invalid("value", e));
    }
    let Some(literals) = sql.literals.take() else {
        return fetch_committed(pool, ctx, sql).await;
    };
    let (types, args): (Vec<&str>, Vec<&str>) =
        literals.iter().map(|(t, l)| (*t, l.as_str())).unzip();
    let (types, args) = if literals.is_empty() {
        (String::new(), String::new())
    } else {
        (
            format!(" ({})", types.join(", ")),
            format!("({})", args.join(", ")),
        )
    };
    let name = prepared_name(&format!("{types} AS {}", sql.text));
    let run = format!("{}; EXECUTE {name}{args}", context_settings(ctx)?);
    let mut conn = pool.acquire().await.map_err(store_error)?;
    let mut rows = simple(&mut conn, run.clone()).await;
    if has_code(&rows, UNKNOWN_STATEMENT) {
        rows = simple(
            &mut conn,
            format!("PREPARE {name}{types} AS {}; {run}", sql.text),
        )
        .await;
        // Behind a pooler the message may reach a server connection that
        // has it already (the same name: the same statement).
        if has_code(&rows, DUPLICATE_STATEMENT) {
            rows = simple(&mut conn, run).await;
        }
    }
    rows.map_err(store_error)
}

/// The rows of `text` sent as one simple-protocol message.
async fn simple(conn: &mut PgConnection, text: String) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::raw_sql(AssertSqlSafe(text)).fetch_all(conn).await
}

/// Whether `result` failed with SQLSTATE `code`.
fn has_code<T>(result: &Result<T, sqlx::Error>, code: &str) -> bool {
    matches!(result, Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some(code))
}

/// The rows of `sql`, run as `ctx` in a transaction of its own (BEGIN, the
/// statement, COMMIT: three round trips).
pub(crate) async fn fetch_committed(
    pool: &PgPool,
    ctx: &CallerContext,
    sql: Sql,
) -> Result<Vec<PgRow>, StoreError> {
    let mut tx = begin(pool, ctx).await?;
    let rows = sql
        .build()?
        .fetch_all(&mut *tx)
        .await
        .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    Ok(rows)
}

/// SQLSTATE `invalid_sql_statement_name`: no prepared statement of that
/// name on the connection.
const UNKNOWN_STATEMENT: &str = "26000";

/// SQLSTATE `duplicate_prepared_statement`.
const DUPLICATE_STATEMENT: &str = "42P05";

/// The name [`one_trip`] prepares a statement under (`text`: its types and
/// text): a 128-bit FNV-1a hash of it, so the same name always means the
/// same statement, in any process: a server connection shared by several
/// processes (a pooler) never runs another statement than the one asked.
fn prepared_name(text: &str) -> String {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    let hash = text
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u128::from(b)).wrapping_mul(PRIME));
    format!("openvibe_{hash:032x}")
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

/// Classifications readable with `level` ([`Classification::readable_at`]).
fn readable_classes(level: Option<Classification>) -> Vec<&'static str> {
    Classification::ALL
        .into_iter()
        .filter(|c| c.readable_at(level))
        .map(Classification::as_str)
        .collect()
}

/// `CallerContext::sees_project` on `{a}project_id`.
pub(crate) fn push_project(sql: &mut Sql, ctx: &CallerContext, a: &str) {
    match ctx.project_id() {
        None => {
            sql.push(&format!("{a}project_id IS NULL"));
        }
        Some(p) => {
            sql.push(&format!("({a}project_id IS NULL OR {a}project_id = "))
                .bind(p.to_owned())
                .push(")");
        }
    }
}

/// `{a}namespace` within `scope` (nothing for [`NamespaceScope::All`]),
/// preceded by `" AND "`.
pub(crate) fn push_namespace_scope(sql: &mut Sql, scope: &NamespaceScope, a: &str) {
    if let NamespaceScope::Only(namespaces) = scope {
        sql.push(&format!(" AND {a}namespace = ANY("))
            .bind(namespaces.clone())
            .push("::text[])");
    }
}

/// The contract's read rule (`openvibe_protocols::read_allowed`: namespace
/// readable, project visible, and owned or cleared; the tenant is pinned by
/// the caller's statement) as a predicate on the row aliased `a` (`"f."`),
/// for a read by id (the caller's [`CallerContext::read_scope`]).
/// `domain`: the query's domain filter, when it has one (the clearance
/// then reduces to one list of classifications).
pub(crate) fn push_readable(sql: &mut Sql, ctx: &CallerContext, a: &str, domain: Option<&str>) {
    push_readable_in(sql, ctx, a, domain, &ctx.read_scope());
}

/// [`push_readable`] within `scope` (a search's
/// [`CallerContext::search_scope`], which lies within the read scope).
pub(crate) fn push_readable_in(
    sql: &mut Sql,
    ctx: &CallerContext,
    a: &str,
    domain: Option<&str>,
    scope: &NamespaceScope,
) {
    sql.push("(");
    push_project(sql, ctx, a);
    push_namespace_scope(sql, scope, a);
    sql.push(&format!(" AND ({a}owner = "))
        .bind(ctx.owner_key())
        .push(&format!(" OR {a}classification = ANY("));
    match domain {
        Some(d) => {
            sql.bind(readable_classes(ctx.clearance().level_for(d)))
                .push(")");
        }
        None => {
            let everywhere = ctx.clearance().everywhere;
            sql.bind(readable_classes(everywhere)).push(")");
            // Per-domain grants above the everywhere level: (domain, class) pairs.
            let mut domains = Vec::new();
            let mut classes = Vec::new();
            for (d, level) in &ctx.clearance().domains {
                for c in Classification::ALL {
                    if c.readable_at(Some(*level)) && !c.readable_at(everywhere) {
                        domains.push(d.clone());
                        classes.push(c.as_str());
                    }
                }
            }
            if !domains.is_empty() {
                sql.push(" OR EXISTS (SELECT 1 FROM unnest(")
                    .bind(domains)
                    .push("::text[], ")
                    .bind(classes)
                    .push(&format!(
                        "::text[]) AS g(d, c) WHERE g.d = {a}domain AND g.c = {a}classification)"
                    ));
            }
        }
    }
    sql.push("))");
}

/// `CallerContext::can_read && can_change(change)` on the row aliased `a`:
/// what an update, upsert or delete requires. Ungoverned: owned unless
/// privileged. Governed: a namespace with the right, and owned unless the
/// namespace grants manage (or the caller is privileged).
pub(crate) fn push_changeable(sql: &mut Sql, ctx: &CallerContext, a: &str, change: Change) {
    push_readable(sql, ctx, a, None);
    match ctx.grants() {
        None => {
            if !ctx.is_privileged() {
                sql.push(&format!(" AND {a}owner = ")).bind(ctx.owner_key());
            }
        }
        Some(g) => {
            let changeable: Vec<String> = g
                .changeable(change)
                .into_iter()
                .map(str::to_owned)
                .collect();
            sql.push(&format!(" AND {a}namespace = ANY("))
                .bind(changeable)
                .push("::text[])");
            if !ctx.is_privileged() {
                let managed: Vec<String> =
                    g.managed(change).into_iter().map(str::to_owned).collect();
                sql.push(&format!(" AND ({a}owner = "))
                    .bind(ctx.owner_key())
                    .push(&format!(" OR {a}namespace = ANY("))
                    .bind(managed)
                    .push("::text[]))");
            }
        }
    }
}

/// A text filter, resolved.
pub(crate) enum TextFilter {
    /// No terms: no filter.
    None,
    /// Every term as a prefix query (`'a':* & 'b':*`) and each term as an
    /// exact (whole-word) query, for relevance.
    Terms { all: String, exact: Vec<String> },
    /// A term longer than any stored word: nothing can match.
    Impossible,
}

fn quoted(term: &str) -> String {
    let mut out = String::with_capacity(term.len() + 2);
    out.push('\'');
    for c in term.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// The text filter of a query string (see `text_terms`).
pub(crate) fn text_filter(text: Option<&str>) -> TextFilter {
    terms_filter(&text.map(text_terms).unwrap_or_default())
}

/// The text filter of a query's terms.
pub(crate) fn terms_filter(terms: &[String]) -> TextFilter {
    if terms.is_empty() {
        return TextFilter::None;
    }
    if terms.iter().any(|t| t.len() > MAX_WORD_LEN) {
        return TextFilter::Impossible;
    }
    let exact: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
    let all = exact
        .iter()
        .map(|q| format!("{q}:*"))
        .collect::<Vec<_>>()
        .join(" & ");
    TextFilter::Terms { all, exact }
}

/// Whole-word queries for `content` (for `find_similar`): the quoted
/// words that can match, and how many words `content` has in total.
pub(crate) fn word_queries(content: &str) -> (Vec<String>, usize) {
    let words = text_terms(content);
    let total = words.len();
    let queries = words
        .iter()
        .filter(|w| w.len() <= MAX_WORD_LEN)
        .map(|w| quoted(w))
        .collect();
    (queries, total)
}

pub(crate) use openvibe_protocols::memory::record_terms;

/// Space-separated terms (terms never contain spaces), for batch binds.
pub(crate) fn joined_terms(terms: &[String]) -> String {
    terms.join(" ")
}

pub(crate) use openvibe_protocols::memory::{check_label, check_tags, check_text};

/// A count as `bigint`.
pub(crate) fn to_i64(field: &str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value)
        .map_err(|_| StoreError::invalid(field, format!("{value} exceeds {}", i64::MAX)))
}

/// Typed column access; a mismatch is a `Backend` error naming the column.
pub(crate) fn col<'r, T>(row: &'r PgRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Postgres> + Type<Postgres>,
{
    row.try_get(name).map_err(|e| {
        StoreError::backend_from(format!("cannot read column `{name}`: {e}"), false, e)
    })
}

/// A `bigint` count column as `u64`.
pub(crate) fn count_col(row: &PgRow, name: &str) -> Result<u64, StoreError> {
    let v: i64 = col(row, name)?;
    u64::try_from(v)
        .map_err(|_| StoreError::backend(format!("column `{name}` holds a negative count {v}")))
}

/// The column list `a` + each of `cols`, comma-separated.
pub(crate) fn columns(cols: &[&str], a: &str) -> String {
    cols.iter()
        .map(|c| format!("{a}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Bind the identity of a new record, `tenant_id, id, namespace,
/// project_id, owner, created_at, updated_at` (tenant and owner from the
/// caller, namespace and project from its `placement`, both times `now`),
/// each followed by `", "`.
pub(crate) fn push_new_identity(
    sql: &mut Sql,
    ctx: &CallerContext,
    placement: &Placement,
    id: String,
    now: DateTime<Utc>,
) {
    push_identity(sql, ctx, placement, id, now);
    sql.push(", ").bind(now).push(", ");
}

/// A record's tenant, id, namespace, project, owner (the caller's) and
/// creation time, comma-separated.
pub(crate) fn push_identity(
    sql: &mut Sql,
    ctx: &CallerContext,
    placement: &Placement,
    id: String,
    created_at: DateTime<Utc>,
) {
    sql.bind(ctx.tenant_id().to_owned())
        .push(", ")
        .bind(id)
        .push(", ")
        .bind(placement.namespace.clone())
        .push(", ")
        .bind(placement.project_id.clone())
        .push(", ")
        .bind(ctx.owner_key())
        .push(", ")
        .bind(created_at);
}

/// `DELETE FROM <table> WHERE tenant_id = <caller's> AND id = <id>` in
/// `tx` (access already decided); returns how many rows went.
pub(crate) async fn delete_row(
    tx: &mut Transaction<'static, Postgres>,
    ctx: &CallerContext,
    table: &str,
    id: &str,
) -> Result<u64, StoreError> {
    let mut delete = Sql::new(&format!("DELETE FROM {table} WHERE tenant_id = "));
    delete
        .bind(ctx.tenant_id().to_owned())
        .push(" AND id = ")
        .bind(id.to_owned());
    let done = delete
        .build()?
        .execute(&mut **tx)
        .await
        .map_err(store_error)?;
    Ok(done.rows_affected())
}

/// The longest retention SQL is given (about 317 years): longer rules
/// are refused by the governance configuration long before.
const MAX_RETENTION_SECS: u64 = 10_000_000_000;

/// The `expires_at` of a changed record as SQL on the row aliased `a`:
/// `given`, capped by the caller's retention for `kind` counted from the
/// row's `created_at` in the row's namespace (what
/// [`CallerContext::expiry`] computes in Rust for a new record).
pub(crate) fn push_expiry(
    sql: &mut Sql,
    ctx: &CallerContext,
    kind: &str,
    given: Option<DateTime<Utc>>,
    a: &str,
) {
    let rules: Vec<&Retention> = ctx
        .grants()
        .map(|g| {
            g.retention_rules()
                .iter()
                .filter(|r| r.kind.as_deref().is_none_or(|k| k == kind))
                .collect()
        })
        .unwrap_or_default();
    if rules.is_empty() {
        sql.bind(given).push("::timestamptz");
        return;
    }
    let namespaces: Vec<Option<String>> = rules.iter().map(|r| r.namespace.clone()).collect();
    let secs: Vec<i64> = rules
        .iter()
        .map(|r| i64::try_from(r.keep_secs.min(MAX_RETENTION_SECS)).unwrap_or(i64::MAX))
        .collect();
    sql.push("least(")
        .bind(given)
        .push(&format!(
            "::timestamptz, {a}created_at + (SELECT min(r.k) FROM unnest("
        ))
        .bind(namespaces)
        .push("::text[], ")
        .bind(secs)
        .push(&format!(
            "::bigint[]) AS r(n, k) WHERE r.n IS NULL OR r.n = {a}namespace) * interval '1 second')"
        ));
}

/// `Ok` unless `given` (an `expires_at` asked for) is not in the future.
pub(crate) fn check_given_expiry(given: Option<DateTime<Utc>>) -> Result<(), StoreError> {
    match given {
        Some(at) if at <= Utc::now() => Err(StoreError::invalid(
            "expires_at",
            format!("{at} is not in the future"),
        )),
        _ => Ok(()),
    }
}

/// A fresh record id (as the in-memory store makes them).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
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

    #[test]
    fn each_statement_text_has_a_name_of_its_own() {
        let a = prepared_name("(text) AS SELECT $1");
        let b = prepared_name("(bigint) AS SELECT $1");
        assert_ne!(a, b);
        assert_eq!(prepared_name("(text) AS SELECT $1"), a);
        assert_eq!(a.len(), "openvibe_".len() + 32);
    }

    #[test]
    fn settings_are_set_local_statements() {
        let ctx = CallerContext::user("o'neil").with_tenant("t1");
        assert_eq!(
            context_settings(&ctx).unwrap(),
            format!(
                "SET LOCAL openvibe.tenant_id = E't1'; SET LOCAL openvibe.principal = {}",
                literal(&ctx.owner_key())
            )
        );
    }

    #[test]
    fn text_filters_quote_terms() {
        match text_filter(Some("VP sponsor, vp")) {
            TextFilter::Terms { all, exact } => {
                assert_eq!(all, "'vp':* & 'sponsor':*");
                assert_eq!(exact, vec!["'vp'", "'sponsor'"]);
            }
            _ => panic!("expected terms"),
        }
        assert!(matches!(text_filter(Some("  ")), TextFilter::None));
        assert!(matches!(
            text_filter(Some(&"x".repeat(MAX_WORD_LEN + 1))),
            TextFilter::Impossible
        ));
    }

    #[test]
    fn classes_up_to_a_level() {
        assert_eq!(readable_classes(None), vec!["public"]);
        assert_eq!(
            readable_classes(Some(Classification::Confidential)),
            vec!["public", "internal", "confidential"]
        );
    }

    #[test]
    fn record_terms_enforce_tsvector_limits() {
        assert!(record_terms("content", "fine words").is_ok());
        assert!(record_terms("content", &"y".repeat(MAX_WORD_LEN + 1)).is_err());
        assert!(check_label("entity", &"e".repeat(MAX_LABEL_LEN + 1)).is_err());
        assert!(check_text("content", "a\0b").is_err());
        assert!(
            openvibe_protocols::memory::check_json(
                "outcome",
                &serde_json::json!({"k": ["a\u{0}"]})
            )
            .is_err()
        );
    }
}

/// Bind the values of the governance columns every record table starts its
/// mutable columns with: `classification, domain, entity, tags, source,
/// updated_at` (the last is `now()`), followed by `", "`.
pub(crate) fn push_governed(
    sql: &mut Sql,
    meta: &RecordMeta,
    domain: &str,
    entity: &str,
    tags: &[String],
) {
    sql.bind(meta.classification.as_str())
        .push(", ")
        .bind(domain.to_owned())
        .push(", ")
        .bind(entity.to_owned())
        .push(", ")
        .bind(tags.to_vec())
        .push("::text[], ")
        .bind(meta.source.clone())
        .push(", now(), ");
}

/// The columns every batch insert starts its `unnest` arrays with:
/// `id, namespace, project_id, classification, domain, entity, tags (JSON
/// text), source, created_at, expires_at`, in that order.
#[derive(Default)]
pub(crate) struct GovernedColumns {
    ids: Vec<String>,
    namespaces: Vec<String>,
    projects: Vec<Option<String>>,
    classifications: Vec<&'static str>,
    domains: Vec<String>,
    entities: Vec<String>,
    tags: Vec<String>,
    sources: Vec<String>,
    created: Vec<DateTime<Utc>>,
    expires: Vec<Option<DateTime<Utc>>>,
}

impl GovernedColumns {
    /// Columns for `n` records.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            ids: Vec::with_capacity(n),
            namespaces: Vec::with_capacity(n),
            projects: Vec::with_capacity(n),
            classifications: Vec::with_capacity(n),
            domains: Vec::with_capacity(n),
            entities: Vec::with_capacity(n),
            tags: Vec::with_capacity(n),
            sources: Vec::with_capacity(n),
            created: Vec::with_capacity(n),
            expires: Vec::with_capacity(n),
        }
    }

    /// Add one `kind` record's values (placed at `placement` by `ctx`,
    /// which decides when it expires).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        ctx: &CallerContext,
        kind: &str,
        id: String,
        placement: Placement,
        meta: RecordMeta,
        domain: String,
        entity: String,
        tags: Vec<String>,
    ) -> Result<(), StoreError> {
        self.expires.push(ctx.expiry(
            kind,
            &placement.namespace,
            meta.created_at,
            meta.expires_at,
        )?);
        self.ids.push(id);
        self.namespaces.push(placement.namespace);
        self.projects.push(placement.project_id);
        self.classifications.push(meta.classification.as_str());
        self.domains.push(domain);
        self.entities.push(entity);
        self.tags.push(serde_json::Value::from(tags).to_string());
        self.sources.push(meta.source);
        self.created.push(meta.created_at);
        Ok(())
    }

    /// The ids added so far.
    pub(crate) fn ids(&self) -> &[String] {
        &self.ids
    }

    /// When each record added so far expires.
    pub(crate) fn expires(&self) -> &[Option<DateTime<Utc>>] {
        &self.expires
    }

    /// Bind the ten arrays, each followed by its cast and `", "`.
    pub(crate) fn bind(self, sql: &mut Sql) {
        sql.bind(self.ids)
            .push("::text[], ")
            .bind(self.namespaces)
            .push("::text[], ")
            .bind(self.projects)
            .push("::text[], ")
            .bind(self.classifications)
            .push("::text[], ")
            .bind(self.domains)
            .push("::text[], ")
            .bind(self.entities)
            .push("::text[], ")
            .bind(self.tags)
            .push("::text[], ")
            .bind(self.sources)
            .push("::text[], ")
            .bind(self.created)
            .push("::timestamptz[], ")
            .bind(self.expires)
            .push("::timestamptz[], ");
    }
}
