//! The caller's transactions: BEGIN with the caller's settings in one
//! message ([`begin`]), writes that replace expired rows, and single-statement
//! writes sent as one message with one implicit transaction ([`one_trip`]).

use openvibe_protocols::{CallerContext, Change, NamespaceScope, StoreError, check_label};
use sqlx::postgres::{PgConnection, PgRow};
use sqlx::{AssertSqlSafe, PgPool, Postgres, Transaction};

use crate::error::store_error;
use crate::sql::{Sql, array_literal, literal};

/// A transaction of a caller (see [`begin`]).
pub(crate) type Tx = Transaction<'static, Postgres>;

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

/// Run the statement `sql` in a transaction confined to `ctx` ([`begin`])
/// and commit; the rows it affected.
pub(crate) async fn execute_confined(
    pool: &PgPool,
    ctx: &CallerContext,
    sql: crate::sql::Sql,
) -> Result<u64, StoreError> {
    let mut tx = begin(pool, ctx).await?;
    let done = sql.build()?.execute(&mut *tx).await.map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    Ok(done.rows_affected())
}

/// [`begin`], then run `then` (statements without binds) in the same round trip.
pub(crate) async fn begin_then(
    pool: &PgPool,
    ctx: &CallerContext,
    then: Option<&str>,
) -> Result<Transaction<'static, Postgres>, StoreError> {
    let statement = begin_statement(ctx, then)?;
    let pool = pool.clone();
    uncancelled(async move { pool.begin_with(AssertSqlSafe(statement)).await }).await
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
    let pool = pool.clone();
    uncancelled(async move { pool.try_begin_with(AssertSqlSafe(statement)).await }).await
}

/// Run `begin` (a pool's `begin_with`) to its end in a task of its own.
/// sqlx's `begin` is not cancel-safe on PostgreSQL (sqlx #4393): a future
/// dropped while its BEGIN is unanswered returns the connection to the
/// pool inside a transaction nothing tracks, and the next caller's
/// statements run in it (with whatever the abandoned transaction set, such
/// as `openvibe.include_expired`). In a task, a caller that is cancelled
/// (a `select!`, a timeout, an HTTP client gone) leaves the BEGIN to
/// finish; the transaction it returns is then dropped, which rolls it back
/// before the connection goes back to the pool. The task stays in the
/// caller's span.
async fn uncancelled<T: Send + 'static>(
    begin: impl Future<Output = Result<T, sqlx::Error>> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::spawn(tracing::Instrument::in_current_span(begin))
        .await
        .map_err(|e| StoreError::backend(format!("beginning a transaction: {e}")))?
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
    if let Some(tool) = ctx.tool() {
        check_label("tool", tool)?;
        settings.push(("tool", literal(tool)));
    }
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
    let Some(literals) = sql.take_literals()? else {
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
    let name = prepared_name(&format!("{types} AS {}", sql.text()));
    let run = format!("{}; EXECUTE {name}{args}", context_settings(ctx)?);
    let mut conn = pool.acquire().await.map_err(store_error)?;
    let mut rows = simple(&mut conn, run.clone()).await;
    if has_code(&rows, UNKNOWN_STATEMENT) {
        rows = simple(
            &mut conn,
            format!("PREPARE {name}{types} AS {}; {run}", sql.text()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let via = ctx.with_tool("mcp:saveMemory");
        assert!(
            context_settings(&via)
                .unwrap()
                .ends_with("; SET LOCAL openvibe.tool = E'mcp:saveMemory'")
        );
    }
}
