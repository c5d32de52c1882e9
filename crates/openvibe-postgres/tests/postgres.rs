//! PostgreSQL-specific behaviour: concurrency, atomic batches, migrations,
//! typed errors for bad data, row-level security at the SQL level, V1
//! memory and embeddings. (Query semantics, text search included, are the
//! conformance suite's, checked against its reference model.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use chrono::{Duration, TimeZone, Utc};
use openvibe_postgres::{MAX_LABEL_LEN, MAX_WORD_LEN, PgStores, migrate};
use openvibe_protocols::{
    CallerContext, Classification, Episode, EpisodeQuery, Fact, FactQuery, InsightQuery,
    KnowledgeStore, MemoryProvider, NewKnowledge, RecordStore, RevisableStore, StoreError,
};
use sqlx::{Connection, Executor, Row};

/// Fresh stores, or return from the test when it is skipped (reported by name).
macro_rules! pg {
    () => {
        match common::database_url() {
            Some(_) => common::fresh_stores().await,
            None => return,
        }
    };
}

fn sys() -> CallerContext {
    CallerContext::system().with_tenant("t1")
}

fn episode(id: &str, minute: i64) -> Episode {
    Episode {
        id: id.into(),
        agent_id: "cro".into(),
        operator_id: "op".into(),
        node_name: "node".into(),
        timestamp: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::minutes(minute),
        action: "qualify".into(),
        input_summary: format!("lead {id}"),
        output_summary: "score 85".into(),
        outcome: serde_json::json!({"score": 85, "tags": ["a", "b"]}),
        tokens_in: 10,
        tokens_out: 20,
        duration_ms: 450,
        ..Episode::default()
    }
}

#[tokio::test]
async fn tests_connect_as_a_role_subject_to_row_level_security() {
    let pg = pg!();
    let row =
        sqlx::query("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            .fetch_one(pg.pool())
            .await
            .unwrap();
    assert!(!row.get::<bool, _>(0), "tests must not run as a superuser");
    assert!(!row.get::<bool, _>(1), "tests must not bypass RLS");
    for table in ["facts", "episodes", "insights", "memory_entries"] {
        let row = sqlx::query(
            "SELECT relrowsecurity, relforcerowsecurity FROM pg_class \
             WHERE oid = to_regclass($1)",
        )
        .bind(table)
        .fetch_one(pg.pool())
        .await
        .unwrap();
        assert!(row.get::<bool, _>(0) && row.get::<bool, _>(1), "{table}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_concurrent_writers_lose_nothing() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pg = PgStores::from_pool(common::fresh_pool(&url, 8).await);
    let facts = pg.facts();
    let mut tasks = Vec::new();
    for w in 0..8 {
        let facts = facts.clone();
        tasks.push(tokio::spawn(async move {
            let ctx = CallerContext::agent(format!("writer{w}")).with_tenant("t1");
            for i in 0..500 {
                facts
                    .store(
                        &ctx,
                        Fact::new(format!("w{w}_{i:03}"), format!("note {i} of writer {w}"))
                            .entity(format!("e{}", i % 7))
                            .classification(Classification::Public),
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let all = facts
        .query(&sys(), &FactQuery::new().limit(10_000))
        .await
        .unwrap();
    assert_eq!(all.len(), 4000);
    let mut ids: Vec<&str> = all.iter().map(|f| f.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4000);
    // Concurrent tracked reads and touches count every access.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let facts = facts.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                facts.touch(&sys(), &["w0_000".to_owned()]).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let f = facts.get(&sys(), "w0_000").await.unwrap().unwrap();
    assert_eq!(f.access_count, 200, "no lost increments");
}

/// Stores of one caller that run at the same time share transactions
/// (group commit), and each still gets the answer it would get alone: its
/// own row, its own refusal, every write and refusal audited as its own
/// caller's (a second caller writes in the same burst: its writes must not
/// join the first caller's transactions).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_stores_share_transactions_and_answer_each_alone() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 8).await;
    let pg = PgStores::from_pool(pool.clone());
    let facts = pg.facts();
    let me = CallerContext::agent("me").with_tenant("t1");
    let other = CallerContext::agent("other").with_tenant("t1");
    facts
        .store(&other, Fact::new("theirs", "not mine to change"))
        .await
        .unwrap();
    let alone = facts
        .store(&me, Fact::new("theirs", "mine now?"))
        .await
        .expect_err("another agent's fact is refused")
        .to_string();
    let you = CallerContext::agent("you").with_tenant("t1");
    let mut tasks = Vec::new();
    let start = Utc::now();
    let mut spawn = |who: &CallerContext, id: String, content: String, i: i64| {
        let (facts, who) = (facts.clone(), who.clone());
        // Distinct update times: the audit trigger records an update only
        // when `updated_at` changes.
        let mut fact = Fact::new(id.clone(), content.clone());
        fact.meta.updated_at = start + Duration::microseconds(i);
        tasks.push(tokio::spawn(async move {
            let stored = facts.store(&who, fact).await;
            (id, content, stored)
        }));
    };
    for i in 0..200 {
        spawn(&me, format!("g{i:03}"), format!("grouped note {i}"), i);
        if i % 4 == 0 {
            spawn(&you, format!("y{i:03}"), format!("your note {i}"), i);
        }
        if i % 40 == 0 {
            spawn(&me, "theirs".into(), format!("mine now? {i}"), i);
        }
        if i % 20 == 0 {
            spawn(&me, "dup".into(), format!("version {i}"), i);
        }
    }
    let (mut written, mut refused) = (0, 0);
    for task in tasks {
        let (id, content, stored) = task.await.unwrap();
        match stored {
            Ok(fact) => {
                assert_eq!(
                    (fact.id.as_str(), fact.content.as_str()),
                    (id.as_str(), content.as_str())
                );
                assert_ne!(id, "theirs");
                written += 1;
            }
            Err(e) => {
                assert_eq!(id, "theirs", "{e}");
                assert_eq!(e.to_string(), alone);
                refused += 1;
            }
        }
    }
    assert_eq!((written, refused), (260, 5));
    let theirs = facts.get(&sys(), "theirs").await.unwrap().unwrap();
    assert_eq!(theirs.content, "not mine to change");
    assert!(
        facts
            .get(&sys(), "dup")
            .await
            .unwrap()
            .unwrap()
            .content
            .starts_with("version ")
    );
    openvibe_protocols::AuditLog::flush(&*pg.audit())
        .await
        .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let mut tx = common::tenant_tx(&mut conn, "t1").await;
    // Fewer transactions than writes: they were grouped.
    let transactions: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT xmin::text) FROM facts WHERE id LIKE 'g%'")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
    assert!(
        transactions < 100,
        "200 writes in {transactions} transactions"
    );
    // One insert entry per written record, one refusal per refused write.
    let audited: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT operation, status, count(*) FROM audit_log \
         WHERE record_kind = 'fact' AND principal = 'agent:me' \
         GROUP BY operation, status ORDER BY operation, status",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let inserts = 200 + 1; // "dup" is inserted once, then updated
    assert_eq!(
        audited,
        vec![
            ("insert".to_owned(), "ok".to_owned(), inserts),
            ("insert".to_owned(), "refused".to_owned(), 6),
            ("update".to_owned(), "ok".to_owned(), 9),
        ]
    );
    // Each caller's writes are audited, and owned, as that caller's.
    let by_caller: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT a.principal, f.owner, left(a.record_id, 1), count(*) FROM audit_log a \
         JOIN facts f ON f.tenant_id = a.tenant_id AND f.id = a.record_id \
         WHERE a.record_kind = 'fact' AND a.operation = 'insert' AND a.status = 'ok' \
         AND (a.record_id LIKE 'g%' OR a.record_id LIKE 'y%') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let row = |p: &str, prefix: &str, n: i64| (p.to_owned(), p.to_owned(), prefix.to_owned(), n);
    assert_eq!(
        by_caller,
        vec![row("agent:me", "g", 200), row("agent:you", "y", 50)]
    );
}

#[tokio::test]
async fn a_failed_batch_leaves_nothing_behind() {
    let pg = pg!();
    let episodes = pg.episodes();
    let ctx = sys();
    // A duplicate id inside the batch: the database refuses the statement.
    let mut batch: Vec<Episode> = (0..100).map(|i| episode(&format!("ep{i}"), i)).collect();
    batch[60].id = "ep10".into();
    let err = episodes.store_batch(&ctx, batch).await.unwrap_err();
    assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
    // The database's error is kept as the source; retrying cannot help.
    assert!(!err.is_transient());
    let db = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<sqlx::Error>())
        .and_then(|e| e.as_database_error())
        .and_then(|e| e.code())
        .map(|c| c.into_owned());
    assert_eq!(db.as_deref(), Some("23505"), "unique violation: {err:?}");
    // Invalid input in the middle: refused before anything is sent.
    let mut batch: Vec<Episode> = (0..100).map(|i| episode(&format!("ep{i}"), i)).collect();
    batch[70].output_summary = "nul \0 byte".into();
    let err = episodes.store_batch(&ctx, batch).await.unwrap_err();
    match err {
        StoreError::InvalidInput { field, .. } => assert_eq!(field, "[70].output_summary"),
        other => panic!("{other:?}"),
    }
    assert!(
        episodes
            .query(&ctx, &EpisodeQuery::new().limit(1000))
            .await
            .unwrap()
            .is_empty()
    );
    // A batch over an existing id fails whole too.
    episodes.store(&ctx, episode("ep5", 5)).await.unwrap();
    let batch: Vec<Episode> = (0..10).map(|i| episode(&format!("ep{i}"), i)).collect();
    assert!(matches!(
        episodes.store_batch(&ctx, batch).await,
        Err(StoreError::Conflict { .. })
    ));
    assert_eq!(
        episodes
            .query(&ctx, &EpisodeQuery::new().limit(1000))
            .await
            .unwrap()
            .len(),
        1
    );
    // A good batch lands whole, with owner/tenant/project from the caller.
    let cro = CallerContext::agent("cro")
        .with_tenant("t1")
        .with_project("p1");
    let batch: Vec<Episode> = (0..300).map(|i| episode(&format!("b{i:03}"), i)).collect();
    assert_eq!(episodes.store_batch(&cro, batch).await.unwrap(), 300);
    let got = episodes.get(&cro, "b007").await.unwrap().unwrap();
    assert_eq!(got.meta.owner, "agent:cro");
    assert_eq!(got.meta.project_id.as_deref(), Some("p1"));
    assert_eq!(
        got.outcome,
        serde_json::json!({"score": 85, "tags": ["a", "b"]})
    );
    assert_eq!(
        got.content_hash,
        Some(openvibe_protocols::content_hash(&got.searchable_text()))
    );
    let found = episodes
        .query(
            &cro,
            &EpisodeQuery::for_agent("cro").text("lead b00").limit(5),
        )
        .await
        .unwrap();
    assert_eq!(found.len(), 5);
    assert_eq!(found[0].id, "b009", "newest first");
}

#[tokio::test]
async fn fact_and_insight_batches_insert_all_or_nothing() {
    let pg = pg!();
    let ctx = sys();
    let facts: Vec<Fact> = (0..50)
        .map(|i| Fact::new(format!("f{i}"), format!("fact {i}")).tags(["x", "y"]))
        .collect();
    assert_eq!(pg.facts().store_batch(&ctx, facts).await.unwrap(), 50);
    let tagged = pg
        .facts()
        .query(&ctx, &FactQuery::new().tags(["y"]).limit(100))
        .await
        .unwrap();
    assert_eq!(tagged.len(), 50);
    let bad = vec![Fact::new("g1", "ok"), Fact::new("g2", "  ")];
    assert!(pg.facts().store_batch(&ctx, bad).await.is_err());
    assert!(pg.facts().get(&ctx, "g1").await.unwrap().is_none());
    let insights = (0..20)
        .map(|i| {
            openvibe_protocols::Insight::new(format!("i{i}"), "cro", format!("insight {i}"), 0.5)
        })
        .collect();
    assert_eq!(pg.insights().store_batch(&ctx, insights).await.unwrap(), 20);
    assert_eq!(
        pg.insights()
            .query(&ctx, &InsightQuery::for_agent("cro").limit(100))
            .await
            .unwrap()
            .len(),
        20
    );
}

/// A connection the server drops under the pool surfaces as a transient
/// `Backend` error that keeps the driver's error as its source; the pool
/// then replaces the connection and the next call succeeds.
#[tokio::test]
async fn a_dropped_connection_is_a_transient_error_with_its_source() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 1).await;
    let stores = PgStores::from_pool(pool.clone());
    let facts = stores.facts();
    facts
        .store(&sys(), Fact::new("f1", "before"))
        .await
        .unwrap();
    // The pool's only connection, as the server knows it.
    let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(&pool)
        .await
        .unwrap();
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert!(killed, "could not terminate backend {pid}");
    let err = facts
        .store(&sys(), Fact::new("f2", "during"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::Backend { .. }),
        "a lost connection is a backend error: {err:?}"
    );
    assert!(err.is_transient(), "retrying can help: {err:?}");
    let source = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<sqlx::Error>())
        .unwrap_or_else(|| panic!("the sqlx error is the source: {err:?}"));
    assert!(
        matches!(
            source,
            sqlx::Error::Io(_) | sqlx::Error::Database(_) | sqlx::Error::Protocol(_)
        ),
        "{source:?}"
    );
    // The pool dropped the dead connection: the retry succeeds.
    facts.store(&sys(), Fact::new("f2", "after")).await.unwrap();
    assert!(facts.get(&sys(), "f2").await.unwrap().is_some());
}

#[tokio::test]
async fn migrations_run_twice_cleanly() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 2).await;
    migrate(&pool).await.unwrap();
    migrate(&pool).await.unwrap();
    // The SQL itself is idempotent too (every migration applied by hand,
    // in order, twice).
    let schema = common::new_schema(&url).await;
    let pool = common::pool_in(&url, &schema, 1).await;
    for _ in 0..2 {
        for migration in openvibe_postgres::MIGRATOR.iter() {
            sqlx::raw_sql(migration.sql.clone())
                .execute(&pool)
                .await
                .unwrap_or_else(|e| panic!("{}: {e}", migration.description));
        }
    }
    let stores = PgStores::from_pool(pool);
    stores
        .facts()
        .store(&sys(), Fact::new("f1", "works"))
        .await
        .unwrap();
}

/// Knowledge's full-text postings (migration 0012) follow their record
/// through insert, update and delete, carry its read-rule columns, and are
/// isolated by tenant like the record.
#[tokio::test]
async fn knowledge_postings_follow_their_records() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pg = PgStores::from_pool(common::fresh_pool(&url, 2).await)
        .with_embedder(Arc::new(openvibe_protocols::testing::HashEmbedder::new(
            384,
        )))
        .await
        .unwrap();
    let store = pg.knowledge();
    let stored = store
        .store_knowledge(
            &sys(),
            NewKnowledge {
                external_id: Some("k1".into()),
                ..NewKnowledge::new("Melanie paints sunsets, sunsets by the lake")
            },
        )
        .await
        .unwrap();
    let id = stored.id.clone();
    let mut conn = pg.pool().acquire().await.unwrap();
    // (term, tf, len, is_public, reader) of `id`'s postings as `tenant`
    // sees them.
    let mut postings = async |tenant: &str| -> Vec<(String, i32, i32, bool, String)> {
        let mut tx = common::tenant_tx(&mut conn, tenant).await;
        let rows = sqlx::query(
            "SELECT term, tf, len, is_public, reader FROM knowledge_postings \
             WHERE id = $1 ORDER BY term",
        )
        .bind(&id)
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        tx.rollback().await.unwrap();
        rows.iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4)))
            .collect()
    };
    // A private record's postings are read by its owner (migration 0015),
    // a public one's by everyone.
    let owner = stored.meta.owner.clone();
    let row = |t: &str, tf: i32, len: i32, public: bool| {
        let reader = if public {
            "*".to_owned()
        } else {
            owner.clone()
        };
        (t.to_owned(), tf, len, public, reader)
    };
    // The tenant's corpus statistics: (documents, total length).
    let pool = pg.pool().clone();
    let stats = async || -> (i64, i64) {
        let mut conn = pool.acquire().await.unwrap();
        let mut tx = common::tenant_tx(&mut conn, "t1").await;
        let row = sqlx::query(
            "SELECT coalesce(sum(docs), 0)::int8, coalesce(sum(total_len), 0)::int8 \
             FROM knowledge_text_stats",
        )
        .fetch_one(&mut *tx)
        .await
        .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(stats().await, (1, 5));
    assert_eq!(
        postings("t1").await,
        [
            row("lake", 1, 5, false),
            row("melani", 1, 5, false),
            row("paint", 1, 5, false),
            row("sunset", 2, 5, false),
        ]
    );
    assert!(postings("t2").await.is_empty(), "another tenant sees none");
    // An upsert with new words and visibility rewrites them.
    store
        .store_knowledge(
            &sys(),
            NewKnowledge {
                external_id: Some("k1".into()),
                is_public: true,
                ..NewKnowledge::new("Melanie runs")
            },
        )
        .await
        .unwrap();
    assert_eq!(
        postings("t1").await,
        [row("melani", 1, 2, true), row("run", 1, 2, true)]
    );
    assert_eq!(stats().await, (1, 2), "one document, its new length");
    // A batch: every row's postings and statistics, in one statement.
    pg.knowledge()
        .store_knowledge_batch(
            &sys(),
            vec![
                NewKnowledge::new("red kites over the lake"),
                NewKnowledge::new("blue lake"),
            ],
        )
        .await
        .unwrap();
    assert_eq!(stats().await, (3, 2 + 3 + 2), "\"over the\": stop words");
    store.delete_knowledge(&sys(), &id).await.unwrap();
    assert!(postings("t1").await.is_empty(), "deleted with the record");
    assert_eq!(stats().await, (2, 5));
}

#[tokio::test]
async fn bad_data_gets_typed_errors_and_writes_nothing() {
    let pg = pg!();
    let ctx = sys();
    let facts = pg.facts();
    let invalid = |r: Result<Fact, StoreError>| matches!(r, Err(StoreError::InvalidInput { .. }));
    assert!(invalid(
        facts.store(&ctx, Fact::new("f1", "nul \0 here")).await
    ));
    assert!(invalid(
        facts.store(&ctx, Fact::new("f1", "x").entity("a\0b")).await
    ));
    assert!(invalid(
        facts
            .store(
                &ctx,
                Fact::new("f1", "x").entity("e".repeat(MAX_LABEL_LEN + 1))
            )
            .await
    ));
    assert!(invalid(
        facts
            .store(
                &ctx,
                Fact::new("f1", "x").tags(["t".repeat(MAX_LABEL_LEN + 1)])
            )
            .await
    ));
    assert!(invalid(
        facts.store(&ctx, Fact::new("i".repeat(300), "x")).await
    ));
    let mut ep = episode("e1", 0);
    ep.outcome = serde_json::json!({"k": "nul \u{0}"});
    assert!(matches!(
        pg.episodes().store(&ctx, ep).await,
        Err(StoreError::InvalidInput { .. })
    ));
    let mut ep = episode("e1", 0);
    ep.tokens_in = u64::MAX;
    assert!(matches!(
        pg.episodes().store(&ctx, ep).await,
        Err(StoreError::InvalidInput { .. })
    ));
    // A caller from a tenant with a NUL byte is refused, not sent.
    let weird = CallerContext::system().with_tenant("t\0x");
    assert!(matches!(
        facts.get(&weird, "f1").await,
        Err(StoreError::InvalidInput { .. })
    ));
    assert!(
        facts
            .query(&ctx, &FactQuery::new().limit(100))
            .await
            .unwrap()
            .is_empty(),
        "nothing was written"
    );
    assert!(
        pg.episodes()
            .query(&ctx, &EpisodeQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    // A query term longer than any stored word matches nothing, without error.
    assert!(
        facts
            .query(&ctx, &FactQuery::new().text("q".repeat(MAX_WORD_LEN + 5)))
            .await
            .unwrap()
            .is_empty()
    );

    // The database's own checks back the store's: an invalid classification
    // written by raw SQL is refused...
    let mut tx = pg.pool().begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let raw = sqlx::query(
        "INSERT INTO facts (tenant_id, id, owner, content, classification) \
         VALUES ('t1', 'raw', 'service:system', 'raw row', 'secret')",
    )
    .execute(&mut *tx)
    .await
    .unwrap_err();
    assert!(
        raw.to_string().contains("facts_classification_check"),
        "{raw}"
    );
    tx.rollback().await.unwrap();
    // ...and a corrupt row that gets in anyway (constraint dropped, as a
    // legacy or hand-edited table might be) is a typed error on read.
    let mut tx = pg.pool().begin().await.unwrap();
    tx.execute("ALTER TABLE facts DROP CONSTRAINT facts_classification_check")
        .await
        .unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO facts (tenant_id, id, owner, content, classification) \
         VALUES ('t1', 'raw', 'service:system', 'raw row', 'secret')",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();
    match facts.get(&ctx, "raw").await {
        Err(StoreError::Backend { message, .. }) => {
            assert!(message.contains("secret"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    // The owner reads it regardless of clearance, so queries hit it too.
    assert!(matches!(
        facts.query(&ctx, &FactQuery::new()).await,
        Err(StoreError::Backend { .. })
    ));
}

#[tokio::test]
async fn row_level_security_isolates_tenants_in_sql() {
    let pg = pg!();
    pg.facts()
        .store(
            &sys(),
            Fact::new("f1", "tenant one secret").classification(Classification::Public),
        )
        .await
        .unwrap();
    pg.episodes().store(&sys(), episode("e1", 0)).await.unwrap();
    let mut conn = pg.pool().acquire().await.unwrap();
    let count = |tenant: Option<&'static str>, table: &'static str| {
        let sql = format!("SELECT count(*) FROM {table}");
        async move { (tenant, sql) }
    };
    for table in ["facts", "episodes"] {
        for (tenant, expected) in [(Some("t2"), 0i64), (None, 0), (Some("t1"), 1)] {
            let (tenant, sql) = count(tenant, table).await;
            let mut tx = match tenant {
                Some(t) => common::tenant_tx(&mut conn, t).await,
                None => conn.begin().await.unwrap(),
            };
            // No tenant filter in the statement: only the policy applies.
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            assert_eq!(n, expected, "{table} as {tenant:?}");
            tx.rollback().await.unwrap();
        }
    }
    // The setting is transaction-local: it does not leak to the next one.
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM facts")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(n, 0);
    // Writing a row for another tenant is refused by the policy.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't2', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = sqlx::query(
        "INSERT INTO facts (tenant_id, id, owner, content) VALUES ('t1', 'x', 'o', 'c')",
    )
    .execute(&mut *tx)
    .await
    .unwrap_err();
    assert!(err.to_string().contains("row-level security"), "{err}");
    tx.rollback().await.unwrap();
    // Updating another tenant's rows changes nothing.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't2', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let done = sqlx::query("UPDATE facts SET content = 'hijacked'")
        .execute(&mut *tx)
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 0);
    tx.commit().await.unwrap();
    let f = pg.facts().get(&sys(), "f1").await.unwrap().unwrap();
    assert_eq!(f.content, "tenant one secret");
}

#[tokio::test]
async fn v1_memory_provider_stores_recalls_and_deletes() {
    let pg = pg!();
    let v1 = pg.memory_provider_as(CallerContext::agent("cro").with_tenant("t1"));
    v1.store("cro", "lead", "Acme wants a VP sponsor")
        .await
        .unwrap();
    v1.store("cro", "other", "Beta is cold").await.unwrap();
    v1.store("cmo", "lead", "Brand voice").await.unwrap();
    let found = v1.recall("cro", "sponsor", 10).await.unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].key, "lead");
    assert_eq!(found[0].namespace, "cro");
    assert_eq!(v1.recall("cro", "", 10).await.unwrap().len(), 2);
    assert_eq!(v1.recall("cro", "", 1).await.unwrap().len(), 1);
    assert!(v1.recall("cro", "ponsor", 10).await.unwrap().is_empty());
    v1.store("cro", "lead", "Acme signed").await.unwrap();
    let found = v1.recall("cro", "acme", 10).await.unwrap();
    assert_eq!(found[0].content, "Acme signed", "store replaces");
    // Another agent cannot overwrite or delete it.
    let cmo = pg.memory_provider_as(CallerContext::agent("cmo").with_tenant("t1"));
    assert!(
        cmo.recall("cro", "", 10).await.unwrap().is_empty(),
        "internal, not cleared"
    );
    assert!(matches!(
        cmo.store("cro", "lead", "hijack").await,
        Err(StoreError::Unauthorized { .. })
    ));
    assert!(
        !cmo.delete("cro", "lead").await.unwrap(),
        "unreadable looks missing"
    );
    assert!(v1.delete("cro", "lead").await.unwrap());
    assert!(!v1.delete("cro", "lead").await.unwrap());
    // Another tenant sees nothing.
    let other = pg.memory_provider_as(CallerContext::system().with_tenant("t2"));
    assert!(other.recall("cro", "", 10).await.unwrap().is_empty());
}

#[tokio::test]
async fn embeddings_live_beside_records_with_an_hnsw_index() {
    let pg = pg!();
    pg.facts()
        .store(&sys(), Fact::new("f1", "Acme has 200 employees"))
        .await
        .unwrap();
    pg.facts()
        .store(&sys(), Fact::new("f2", "Beta is cold"))
        .await
        .unwrap();
    let unit = |axis: usize| {
        let mut v = vec![0.0f32; 384];
        v[axis] = 1.0;
        pgvector::Vector::from(v)
    };
    let index: String = sqlx::query_scalar(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'embeddings_all_minilm_l6_v2_hnsw' \
         AND schemaname = current_schema()",
    )
    .fetch_one(pg.pool())
    .await
    .unwrap();
    assert!(
        index.contains("hnsw") && index.contains("vector_cosine_ops"),
        "{index}"
    );
    let mut tx = pg.pool().begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    for (id, axis) in [("f1", 0), ("f2", 1)] {
        sqlx::query(
            "INSERT INTO embeddings_all_minilm_l6_v2 (tenant_id, record_kind, record_id, embedding) \
             VALUES ('t1', 'fact', $1, $2)",
        )
        .bind(id)
        .bind(unit(axis))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    let nearest: String = sqlx::query_scalar(
        "SELECT record_id FROM embeddings_all_minilm_l6_v2 WHERE record_kind = 'fact' \
         ORDER BY embedding <=> $1 LIMIT 1",
    )
    .bind(unit(1))
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    assert_eq!(nearest, "f2");
    tx.commit().await.unwrap();
    // Deleting the record deletes its embeddings.
    pg.facts().delete(&sys(), "f2").await.unwrap();
    let mut tx = pg.pool().begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    let left: Vec<String> =
        sqlx::query_scalar("SELECT record_id FROM embeddings_all_minilm_l6_v2 ORDER BY 1")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    assert_eq!(left, ["f1"]);
}

/// The provisioned server's pgvector must run on this CPU: the wheel's
/// AVX-512 build crashes (SIGILL) on an HNSW insert or a 384-d distance
/// without AVX-512, so `cargo xtask db up` builds a portable one there.
#[tokio::test]
async fn hnsw_insert_and_cosine_query_work_on_the_provisioned_server() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 2).await;
    pool.execute(
        "CREATE TABLE hnsw_probe (id int PRIMARY KEY, embedding vector(384) NOT NULL); \
         CREATE INDEX hnsw_probe_embedding ON hnsw_probe \
           USING hnsw (embedding vector_cosine_ops)",
    )
    .await
    .unwrap();
    // Deterministic pseudo-random vectors, inserted after the index exists
    // (so every row goes through the HNSW insert path).
    let mut rng = fastrand::Rng::with_seed(384);
    let vectors: Vec<Vec<f32>> = (0..500)
        .map(|_| (0..384).map(|_| rng.f32() * 2.0 - 1.0).collect())
        .collect();
    let mut tx = pool.begin().await.unwrap();
    for (id, v) in vectors.iter().enumerate() {
        sqlx::query("INSERT INTO hnsw_probe (id, embedding) VALUES ($1, $2)")
            .bind(i32::try_from(id).unwrap())
            .bind(pgvector::Vector::from(v.clone()))
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    sqlx::query("ANALYZE hnsw_probe")
        .execute(&pool)
        .await
        .unwrap();

    let probe = 137;
    let target = pgvector::Vector::from(vectors[probe].clone());
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SET LOCAL enable_seqscan = off")
        .execute(&mut *tx)
        .await
        .unwrap();
    let query = "SELECT id FROM hnsw_probe ORDER BY embedding <=> $1 LIMIT 5";
    let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("EXPLAIN {query}")))
        .bind(target.clone())
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan using hnsw_probe_embedding"),
        "the HNSW index is not used:\n{plan}"
    );
    let nearest: Vec<i32> = sqlx::query_scalar(query)
        .bind(target.clone())
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    assert_eq!(nearest.len(), 5, "{nearest:?}");
    assert_eq!(nearest[0], i32::try_from(probe).unwrap(), "{nearest:?}");
    // The distance itself is computed too (and is zero for the vector itself).
    let distance: f64 = sqlx::query_scalar("SELECT embedding <=> $1 FROM hnsw_probe WHERE id = $2")
        .bind(target)
        .bind(i32::try_from(probe).unwrap())
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert!(distance.abs() < 1e-6, "{distance}");
    tx.commit().await.unwrap();
}

/// Knowledge batches: one call, duplicates of one upsert key collapse (the
/// last wins), a bad item names its index and nothing is written, and two
/// writers racing on one key leave one row (the unique index decides).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knowledge_batches_and_racing_upserts_leave_one_row_per_key() {
    use openvibe_protocols::KnowledgeQuery;
    use openvibe_protocols::testing::HashEmbedder;
    let Some(url) = common::database_url() else {
        return;
    };
    let pg = PgStores::from_pool(common::fresh_pool(&url, 8).await)
        .with_embedder(Arc::new(HashEmbedder::new(384)))
        .await
        .unwrap();
    let store = pg.knowledge();
    let alice = CallerContext::user("alice").with_tenant("t1");
    let item = |content: &str, ext: Option<&str>| NewKnowledge {
        external_id: ext.map(str::to_owned),
        ..NewKnowledge::new(content)
    };
    let n = store
        .store_knowledge_batch(
            &alice,
            vec![
                item("docker v1", Some("doc")),
                item("python", None),
                item("docker v2", Some("doc")),
                item("python", None),
            ],
        )
        .await
        .unwrap();
    assert_eq!(n, 2, "one per upsert key");
    let all = store
        .query_knowledge(
            &alice,
            &KnowledgeQuery {
                top_k: 10,
                ..KnowledgeQuery::by_text("docker python")
            },
        )
        .await
        .unwrap();
    let mut contents: Vec<String> = all.into_iter().map(|h| h.knowledge.content).collect();
    contents.sort();
    assert_eq!(contents, vec!["docker v2", "python"]);
    let bad = store
        .store_knowledge_batch(
            &alice,
            vec![
                item("fine", None),
                NewKnowledge {
                    embedding: Some(vec![0.1; 3]),
                    ..NewKnowledge::new("short")
                },
            ],
        )
        .await;
    match bad {
        Err(StoreError::InvalidInput { field, .. }) => assert_eq!(field, "[1].embedding"),
        other => panic!("{other:?}"),
    }
    // Racing writers of one external id: one row, one embedding.
    let writers: Vec<_> = (0..8)
        .map(|i| {
            let store = store.clone();
            let alice = alice.clone();
            tokio::spawn(async move {
                store
                    .store_knowledge(&alice, item(&format!("race {i}"), Some("race")))
                    .await
                    .map(|k| k.id)
            })
        })
        .collect();
    let mut ids = Vec::new();
    for w in writers {
        match w.await.unwrap() {
            Ok(id) => ids.push(id),
            Err(e) => assert!(
                e.is_transient() || matches!(e, StoreError::Conflict { .. }),
                "{e:?}"
            ),
        }
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "every writer got the same record: {ids:?}");
    let rows: i64 = {
        let pool = pg.pool();
        let mut tx = pool.begin().await.unwrap();
        sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
            .execute(&mut *tx)
            .await
            .unwrap();
        sqlx::query_scalar("SELECT count(*) FROM knowledge WHERE external_id = 'race'")
            .fetch_one(&mut *tx)
            .await
            .unwrap()
    };
    assert_eq!(rows, 1);
}

/// Governance below the stores: with a governed caller's settings
/// (`openvibe.namespaces`, `openvibe.project_id`), a hand-written
/// `SELECT *` through the application role (no superuser, no BYPASSRLS)
/// sees only rows of readable namespaces in a visible project, and cannot
/// write outside them.
#[tokio::test]
async fn row_level_security_isolates_namespaces_and_projects_in_sql() {
    use openvibe_protocols::{Grants, Rights};
    let pg = pg!();
    let grants = Grants::new("ns-a")
        .grant("ns-a", Rights::OWN, true)
        .grant("ns-b", Rights::OWN, false)
        .grant("global", Rights::OWN, false);
    for (id, ns, project) in [
        ("a-p1", "ns-a", "p1"),
        ("a-p2", "ns-a", "p2"),
        ("b", "ns-b", "p1"),
        ("g", "global", "p2"),
    ] {
        let writer = CallerContext::agent("w")
            .with_tenant("t1")
            .with_project(project)
            .with_grants(grants.clone());
        pg.facts()
            .store(&writer, Fact::new(id, "x").namespace(ns))
            .await
            .unwrap();
    }
    let mut conn = pg.pool().acquire().await.unwrap();
    let (superuser, bypass): (bool, bool) =
        sqlx::query_as("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert!(
        !superuser && !bypass,
        "the test must run as a role subject to RLS"
    );
    let visible = |namespaces: &'static str, project: &'static str| (namespaces, project);
    for ((namespaces, project), expected) in [
        (visible("{ns-a,global}", "p1"), vec!["a-p1", "g"]),
        (visible("{ns-a,ns-b,global}", "p2"), vec!["a-p2", "b", "g"]),
        (visible("{global}", ""), vec!["g"]),
        (visible("{}", "p1"), vec![]),
        (visible("", ""), vec!["a-p1", "a-p2", "b", "g"]), // ungoverned: tenant only
    ] {
        let mut tx = conn.begin().await.unwrap();
        sqlx::query(
            "SELECT set_config('openvibe.tenant_id', 't1', true), \
             set_config('openvibe.namespaces', $1, true), \
             set_config('openvibe.project_id', $2, true)",
        )
        .bind(namespaces)
        .bind(project)
        .execute(&mut *tx)
        .await
        .unwrap();
        let ids: Vec<String> = sqlx::query_scalar("SELECT id FROM facts ORDER BY id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        assert_eq!(
            ids, expected,
            "namespaces {namespaces:?}, project {project:?}"
        );
        if !namespaces.is_empty() {
            let err = sqlx::query(
                "INSERT INTO facts (tenant_id, id, owner, content, namespace) \
                 VALUES ('t1', 'sneaky', 'o', 'c', 'l-private')",
            )
            .execute(&mut *tx)
            .await
            .unwrap_err();
            assert!(err.to_string().contains("row-level security"), "{err}");
        }
        tx.rollback().await.unwrap();
    }
}

/// The audit trail is append-only for the application role (privileges and
/// a trigger), and written in the changing transaction: a batch that fails
/// leaves no audit row, one that succeeds leaves one per record.
#[tokio::test]
async fn the_audit_trail_is_append_only_and_transactional() {
    use openvibe_protocols::{AuditLog, AuditOp, AuditQuery};
    let pg = pg!();
    let ctx = sys();
    let mut batch: Vec<Episode> = (0..20).map(|i| episode(&format!("ep{i}"), i)).collect();
    batch[15].id = "ep3".into();
    assert!(pg.episodes().store_batch(&ctx, batch).await.is_err());
    let audit = pg.audit();
    let inserts = AuditQuery {
        operation: Some(AuditOp::Insert),
        ..AuditQuery::new()
    };
    assert!(
        audit.query(&ctx, &inserts).await.unwrap().is_empty(),
        "rolled back with the batch"
    );
    let batch: Vec<Episode> = (0..20).map(|i| episode(&format!("ep{i}"), i)).collect();
    pg.episodes().store_batch(&ctx, batch).await.unwrap();
    let rows = audit.query(&ctx, &inserts).await.unwrap();
    assert_eq!(rows.len(), 20);
    assert!(
        rows.iter()
            .all(|r| r.principal == "service:system" && r.kind == "episode")
    );
    // Access statistics are not changes.
    pg.facts().store(&ctx, Fact::new("f1", "x")).await.unwrap();
    pg.facts().touch(&ctx, &["f1".into()]).await.unwrap();
    let updates = AuditQuery {
        operation: Some(AuditOp::Update),
        ..AuditQuery::new()
    };
    assert!(audit.query(&ctx, &updates).await.unwrap().is_empty());

    let mut conn = pg.pool().acquire().await.unwrap();
    for statement in [
        "UPDATE audit_log SET principal = 'someone else'",
        "DELETE FROM audit_log",
        "TRUNCATE audit_log",
    ] {
        let mut tx = conn.begin().await.unwrap();
        sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
            .execute(&mut *tx)
            .await
            .unwrap();
        let err = sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *tx)
            .await
            .expect_err(statement);
        let text = err.to_string();
        assert!(
            text.contains("permission denied") || text.contains("append-only"),
            "{statement}: {text}"
        );
        tx.rollback().await.unwrap();
    }
    // Should the privileges come back, row-level security (no update or
    // delete policy) reaches no row, and the trigger refuses any it would.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("GRANT UPDATE, DELETE ON audit_log TO CURRENT_USER")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    for statement in ["DELETE FROM audit_log", "UPDATE audit_log SET reason = 'x'"] {
        match sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut *tx)
            .await
        {
            Ok(done) => assert_eq!(done.rows_affected(), 0, "{statement}"),
            Err(e) => assert!(e.to_string().contains("append-only"), "{statement}: {e}"),
        }
    }
    tx.rollback().await.unwrap();
    assert_eq!(
        audit.query(&ctx, &AuditQuery::new()).await.unwrap().len(),
        21
    );
}

/// Under forced row-level security a tag-only query still uses the GIN
/// index on `tags` (and a text query may use the one on `search`): the
/// operators' functions are LEAKPROOF (`cargo xtask db up` marks them), so
/// the planner may run them as index conditions below the policy.
#[tokio::test]
async fn tag_and_text_queries_use_their_gin_indexes_under_rls() {
    use openvibe_protocols::{Grants, Rights};
    let pg = pg!();
    let mut conn = pg.pool().acquire().await.unwrap();
    let leakproof: Vec<(String, bool)> = sqlx::query_as(
        "SELECT proname::text, proleakproof FROM pg_proc \
         WHERE proname IN ('arrayoverlap', 'ts_match_vq') ORDER BY proname",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    assert!(
        leakproof.iter().all(|(_, l)| *l) && leakproof.len() == 2,
        "{leakproof:?}: as a superuser run ALTER FUNCTION pg_catalog.arrayoverlap(anyarray, anyarray) \
         LEAKPROOF and ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF \
         (`cargo xtask db up` does)"
    );
    let ctx = sys();
    let facts: Vec<Fact> = (0..5000)
        .map(|i| {
            Fact::new(format!("f{i}"), format!("common words number {i}"))
                .tags([format!("t{}", i % 50)])
                .namespace("team")
                .classification(Classification::Public)
        })
        .collect();
    pg.facts().store_batch(&ctx, facts).await.unwrap();
    let rare = Fact::new("rare", "a zanzibar fact")
        .tags(["rare-tag"])
        .namespace("team")
        .classification(Classification::Public);
    pg.facts().store(&ctx, rare).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    sqlx::query("SELECT set_config('openvibe.tenant_id', 't1', true)")
        .execute(&mut *tx)
        .await
        .unwrap();
    sqlx::query("ANALYZE facts")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let governed = CallerContext::agent("reader")
        .with_tenant("t1")
        .with_grants(
            Grants::new("team")
                .grant("team", Rights::READ, false)
                .recall(["team"]),
        );
    for (reader, who) in [(&ctx, "ungoverned"), (&governed, "governed")] {
        let plan = pg
            .facts()
            .explain_query(reader, &FactQuery::new().tags(["rare-tag"]))
            .await
            .unwrap();
        assert!(plan.contains("facts_tags"), "{who} tag query:\n{plan}");
        let found = pg
            .facts()
            .query(reader, &FactQuery::new().tags(["rare-tag"]))
            .await
            .unwrap();
        assert_eq!(found.len(), 1);
    }
    // Text: over 5,000 rows a sequential scan is cheaper, so show that the
    // index is *allowed* under the policy: with sequential scans priced
    // out, a non-leakproof `@@` would still be a filter above a scan.
    let mut tx = conn.begin().await.unwrap();
    sqlx::query(
        "SELECT set_config('openvibe.tenant_id', 't1', true), \
         set_config('openvibe.namespaces', '{team}', true), set_config('enable_seqscan', 'off', true)",
    )
    .execute(&mut *tx)
    .await
    .unwrap();
    let plan: Vec<String> =
        sqlx::query_scalar("EXPLAIN SELECT id FROM facts WHERE search @@ 'zanzibar:*'::tsquery")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan on facts_search"),
        "text query under RLS:\n{plan}"
    );
    tx.rollback().await.unwrap();
}

/// Row-level security on the owner: a governed transaction's hand-written
/// `DELETE` removes only the principal's own rows, or rows of namespaces
/// where it may delete others' (`openvibe.delete_any`).
#[tokio::test]
async fn row_level_security_limits_deletes_to_owned_or_managed_rows() {
    use openvibe_protocols::{Grants, Rights};
    let pg = pg!();
    let grants = Grants::new("a")
        .grant("a", Rights::OWN, false)
        .grant("b", Rights::OWN, false);
    for (who, id, ns) in [
        ("ann", "ann-a", "a"),
        ("bob", "bob-a", "a"),
        ("bob", "bob-b", "b"),
    ] {
        let ctx = CallerContext::user(who)
            .with_tenant("t1")
            .with_grants(grants.clone());
        pg.facts()
            .store(
                &ctx,
                Fact::new(id, "x")
                    .namespace(ns)
                    .classification(Classification::Public),
            )
            .await
            .unwrap();
    }
    let mut conn = pg.pool().acquire().await.unwrap();
    for (delete_any, expected_left) in [
        ("{}", vec!["bob-a", "bob-b"]),
        ("{b}", vec!["bob-a"]),
        ("{*}", vec![]),
    ] {
        let mut tx = conn.begin().await.unwrap();
        sqlx::query(
            "SELECT set_config('openvibe.tenant_id', 't1', true), \
             set_config('openvibe.namespaces', '{a,b}', true), \
             set_config('openvibe.project_id', '', true), \
             set_config('openvibe.principal', 'user:ann', true), \
             set_config('openvibe.delete_any', $1, true)",
        )
        .bind(delete_any)
        .execute(&mut *tx)
        .await
        .unwrap();
        sqlx::query("DELETE FROM facts")
            .execute(&mut *tx)
            .await
            .unwrap();
        let left: Vec<String> = sqlx::query_scalar("SELECT id FROM facts ORDER BY id")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        assert_eq!(left, expected_left, "delete_any {delete_any}");
        tx.rollback().await.unwrap();
    }
}

/// A batch holds at most `MAX_BATCH_LEN` records: at the limit stored, one
/// over refused with `InvalidInput` and nothing written.
#[tokio::test]
async fn batches_hold_at_most_the_limit() {
    use openvibe_protocols::MAX_BATCH_LEN;
    let pg = pg!();
    let ctx = sys();
    let batch = |n: usize, prefix: &str| -> Vec<Episode> {
        (0..n)
            .map(|i| episode(&format!("{prefix}{i}"), 0))
            .collect()
    };
    let err = pg
        .episodes()
        .store_batch(&ctx, batch(MAX_BATCH_LEN + 1, "over"))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::InvalidInput { .. }), "{err:?}");
    assert_eq!(
        pg.episodes()
            .store_batch(&ctx, batch(MAX_BATCH_LEN, "at"))
            .await
            .unwrap(),
        MAX_BATCH_LEN as u64
    );
    let over = pg
        .episodes()
        .query(&ctx, &EpisodeQuery::new().text("over0").limit(5))
        .await
        .unwrap();
    assert!(over.is_empty());
}

/// A hybrid query runs its full-text list on a second connection while the
/// first walks the HNSW graph, when the pool has one idle; with a pool of
/// one connection it runs them one after the other. Both give the same
/// hits, scores and retrievers.
#[tokio::test]
async fn hybrid_lists_on_one_or_two_connections_agree() {
    use openvibe_protocols::KnowledgeQuery;
    use openvibe_protocols::testing::HashEmbedder;
    let Some(url) = common::database_url() else {
        return;
    };
    let schema = common::new_schema(&url).await;
    let stores = |max: u32| {
        let (url, schema) = (url.clone(), schema.clone());
        async move {
            let pool = common::pool_in(&url, &schema, max).await;
            migrate(&pool).await.unwrap();
            let pg = PgStores::from_pool(pool.clone())
                .with_embedder(Arc::new(HashEmbedder::new(64)))
                .await
                .unwrap();
            (pool, pg)
        }
    };
    let (_, single) = stores(1).await;
    let (pool, wide) = stores(4).await;
    let alice = CallerContext::user("alice").with_tenant("t1");
    let words = ["docker", "python", "deploy", "kernel", "garden", "violin"];
    let items: Vec<NewKnowledge> = (0..60)
        .map(|i| NewKnowledge {
            is_public: i % 3 == 0,
            ..NewKnowledge::new(format!(
                "{} {} note {i}",
                words[i % words.len()],
                words[(i * 7 + 1) % words.len()]
            ))
        })
        .collect();
    // Indexed before the queries, not during them: an HNSW walk and an
    // exact comparison may keep different records among equal distances.
    single.knowledge().set_background_indexing(false);
    wide.knowledge().set_background_indexing(false);
    single
        .knowledge()
        .store_knowledge_batch(&alice, items)
        .await
        .unwrap();
    single.knowledge().index_pending(&alice).await.unwrap();
    assert_eq!(single.knowledge().pending_vectors(&alice).await.unwrap(), 0);
    // Two connections open and idle in the wide pool.
    let (a, b) = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
    drop((a, b));
    let bob = CallerContext::user("bob").with_tenant("t1");
    for (caller, text) in [(&alice, "docker kernel"), (&bob, "python garden note")] {
        let query = KnowledgeQuery {
            top_k: 8,
            include_public: true,
            ..KnowledgeQuery::by_text(text)
        };
        let one = single
            .knowledge()
            .query_knowledge(caller, &query)
            .await
            .unwrap();
        let two = wide
            .knowledge()
            .query_knowledge(caller, &query)
            .await
            .unwrap();
        assert!(!one.is_empty(), "{text}");
        assert!(
            one.iter().any(|h| h.retrievers.len() == 2),
            "{text}: both lists ran: {one:?}"
        );
        assert_eq!(one, two, "{text}");
    }
}

/// Knowledge vectors are written pending and indexed after the write: a
/// query finds a pending vector exactly as an indexed one (same hits, same
/// scores), the store's background indexer drains what a write left, and
/// `index_pending` indexes the rest at once. A rewrite with a new vector
/// goes pending again; one with the same vector stays indexed.
#[tokio::test]
async fn knowledge_vectors_are_found_pending_and_indexed_after_the_write() {
    use openvibe_protocols::KnowledgeQuery;
    use openvibe_protocols::testing::HashEmbedder;
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 4).await;
    let pg = PgStores::from_pool(pool.clone())
        .with_embedder(Arc::new(HashEmbedder::new(64)))
        .await
        .unwrap();
    let store = pg.knowledge();
    let alice = CallerContext::user("alice").with_tenant("t1");
    let items: Vec<NewKnowledge> = (0..40)
        .map(|i| NewKnowledge {
            external_id: Some(format!("k{i}")),
            ..NewKnowledge::new(format!("note {i} about topic {}", i % 7))
        })
        .collect();
    store.store_knowledge_batch(&alice, items).await.unwrap();
    // The background indexer drains the write's pending vectors.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while store.pending_vectors(&alice).await.unwrap() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the indexer never drained"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let query = KnowledgeQuery {
        top_k: 5,
        ..KnowledgeQuery::by_text("topic 3")
    }
    .mode(openvibe_protocols::RetrievalMode::Vector);
    let indexed = store.query_knowledge(&alice, &query).await.unwrap();
    assert_eq!(indexed.len(), 5);
    // A vector list alone brings its records in its own statement: whole,
    // vector included, as a get returns them.
    for hit in &indexed {
        let got = store
            .get_knowledge(&alice, &hit.knowledge.id)
            .await
            .unwrap();
        assert_eq!(got.as_ref(), Some(&hit.knowledge));
        assert_eq!(hit.knowledge.embedding.len(), 64);
    }
    let table: String =
        sqlx::query_scalar("SELECT table_name FROM embedding_models WHERE model = $1")
            .bind(HashEmbedder::MODEL)
            .fetch_one(&pool)
            .await
            .unwrap();
    let set_indexed = |value: bool| {
        let (pool, table) = (pool.clone(), table.clone());
        async move {
            let mut conn = pool.acquire().await.unwrap();
            let mut tx = common::tenant_tx(&mut conn, "t1").await;
            let n = sqlx::query(sqlx::AssertSqlSafe(format!(
                "UPDATE {table} SET indexed = $1 WHERE record_kind = 'knowledge' AND indexed <> $1"
            )))
            .bind(value)
            .execute(&mut *tx)
            .await
            .unwrap()
            .rows_affected();
            tx.commit().await.unwrap();
            n
        }
    };
    // All pending: the same hits and scores, by exact comparison.
    assert_eq!(set_indexed(false).await, 40);
    let pending = store.query_knowledge(&alice, &query).await.unwrap();
    assert_eq!(pending, indexed);
    assert_eq!(store.index_pending(&alice).await.unwrap(), 40);
    assert_eq!(store.pending_vectors(&alice).await.unwrap(), 0);
    assert_eq!(
        store.query_knowledge(&alice, &query).await.unwrap(),
        indexed
    );
    // Another tenant's pending rows are not this caller's to index.
    let bob = CallerContext::user("bob").with_tenant("t2");
    assert_eq!(store.index_pending(&bob).await.unwrap(), 0);
    // Rewrites: the same vector stays indexed, a new one waits (for
    // `index_pending`: no background indexing now).
    store.set_background_indexing(false);
    let flags = || {
        let (pool, table) = (pool.clone(), table.clone());
        async move {
            let mut conn = pool.acquire().await.unwrap();
            let mut tx = common::tenant_tx(&mut conn, "t1").await;
            let rows: Vec<(String, bool)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT k.external_id, e.indexed FROM {table} e JOIN knowledge k \
                 ON k.tenant_id = e.tenant_id AND k.id = e.record_id \
                 WHERE k.external_id IN ('k1', 'k2') ORDER BY 1"
            )))
            .fetch_all(&mut *tx)
            .await
            .unwrap();
            rows
        }
    };
    store
        .store_knowledge_batch(
            &alice,
            vec![
                NewKnowledge {
                    external_id: Some("k1".into()),
                    ..NewKnowledge::new("note 1 about topic 1")
                },
                NewKnowledge {
                    external_id: Some("k2".into()),
                    ..NewKnowledge::new("an entirely new text")
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(
        flags().await,
        [("k1".to_owned(), true), ("k2".to_owned(), false)]
    );
    let found = store
        .query_knowledge(
            &alice,
            &KnowledgeQuery {
                top_k: 1,
                ..KnowledgeQuery::by_text("an entirely new text")
            }
            .mode(openvibe_protocols::RetrievalMode::Vector),
        )
        .await
        .unwrap();
    assert_eq!(found[0].knowledge.external_id.as_deref(), Some("k2"));
    store.index_pending(&alice).await.unwrap();
    assert_eq!(flags().await[1], ("k2".to_owned(), true));
}

/// No one decides what they proposed or own, held by the database itself
/// (migration 0028): a client connected as the application role, with the
/// owner's principal set or recording the owner as the decider, cannot
/// approve a pending proposal or a proposed belief; nor record another
/// decider than the principal it runs as. Another principal can.
#[tokio::test]
async fn the_database_refuses_a_verdict_on_ones_own_proposal_or_belief() {
    use openvibe_protocols::{Action, Belief, Proposal, ProposalStore};
    let pg = pg!();
    let boss = CallerContext::user("boss")
        .with_tenant("t1")
        .with_privileged(true);
    pg.proposals()
        .create(
            &boss,
            Proposal::new("cro", "mine", Action::tool("t", "t", serde_json::json!({}))).id("p1"),
        )
        .await
        .unwrap();
    pg.stores()
        .beliefs
        .propose(&boss, Belief::new("cro", "mine", 0.8).id("b1"))
        .await
        .unwrap();
    let mut conn = pg.pool().acquire().await.unwrap();
    let verdicts = [
        (
            "proposals",
            "UPDATE proposals SET status = 'approved', decided_by = $1, decided_at = now() WHERE id = 'p1'",
        ),
        (
            "beliefs",
            "UPDATE beliefs SET status = 'active', decided_by = $1, decided_at = now() WHERE id = 'b1'",
        ),
    ];
    for (table, verdict) in verdicts {
        // (principal set, decider recorded, refused)
        for (principal, decider, refused) in [
            ("user:boss", "user:boss", true),
            ("user:ann", "user:boss", true),
            ("", "user:boss", true),
            ("user:ann", "user:bob", true),
            ("user:ann", "user:ann", false),
        ] {
            let mut tx = conn.begin().await.unwrap();
            sqlx::query(
                "SELECT set_config('openvibe.tenant_id', 't1', true), \
                 set_config('openvibe.principal', $1, true)",
            )
            .bind(principal)
            .execute(&mut *tx)
            .await
            .unwrap();
            let result = sqlx::query(verdict).bind(decider).execute(&mut *tx).await;
            match (result, refused) {
                (Err(sqlx::Error::Database(db)), true) => {
                    assert_eq!(db.code().as_deref(), Some("OV403"), "{table}: {db}");
                }
                (Ok(done), false) => assert_eq!(done.rows_affected(), 1, "{table}"),
                (other, _) => panic!("{table} as {principal:?} deciding as {decider}: {other:?}"),
            }
            tx.rollback().await.unwrap();
        }
    }
    // Through the stores, the refusal is the typed one.
    let refused = pg
        .proposals()
        .decide(&boss, "p1", &openvibe_protocols::Verdict::approve("mine"))
        .await;
    assert!(
        matches!(refused, Err(StoreError::Unauthorized { .. })),
        "{refused:?}"
    );
}
