//! The governed tables as the database holds them: for every kind of the
//! registry, its row-level security (forced), its policies as PostgreSQL
//! deparsed them and its audit triggers, in one snapshot; and the
//! statuses its CHECK constraint accepts, which must be the contract's
//! vocabulary. Installing a table through `openvibe_govern` (migration
//! 0027) must leave this exactly as the migrations before it wrote it;
//! proposals and beliefs also hold the rule that no one decides their own
//! (migration 0028).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use openvibe_protocols::KINDS;
use sqlx::Row;

#[tokio::test]
async fn every_kind_has_its_policies_and_audit_triggers() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 1).await;
    let mut out = String::new();
    for kind in KINDS {
        let table = kind.table;
        let row = sqlx::query(
            "SELECT c.relrowsecurity, c.relforcerowsecurity FROM pg_class c \
             WHERE c.oid = to_regclass($1)",
        )
        .bind(table)
        .fetch_one(&pool)
        .await
        .unwrap();
        let (rls, forced): (bool, bool) = (row.get(0), row.get(1));
        out.push_str(&format!(
            "== {} ({table}): row-level security {rls}, forced {forced}\n",
            kind.name
        ));
        let policies = sqlx::query(
            "SELECT policyname::text, permissive, cmd, coalesce(qual, ''), \
             coalesce(with_check, '') FROM pg_policies \
             WHERE schemaname = current_schema() AND tablename = $1 ORDER BY policyname",
        )
        .bind(table)
        .fetch_all(&pool)
        .await
        .unwrap();
        for p in policies {
            let (name, permissive, cmd, using, check): (String, String, String, String, String) =
                (p.get(0), p.get(1), p.get(2), p.get(3), p.get(4));
            out.push_str(&format!(
                "policy {name} {permissive} {cmd}\n  using {using}\n  check {check}\n"
            ));
        }
        let triggers = sqlx::query(
            "SELECT t.tgname::text, p.proname::text, encode(t.tgargs, 'escape') \
             FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid \
             WHERE t.tgrelid = to_regclass($1) AND NOT t.tgisinternal ORDER BY t.tgname",
        )
        .bind(table)
        .fetch_all(&pool)
        .await
        .unwrap();
        for t in triggers {
            let (name, function, args): (String, String, String) = (t.get(0), t.get(1), t.get(2));
            out.push_str(&format!("trigger {name} -> {function}({args})\n"));
        }
    }
    insta::assert_snapshot!(out);
}

#[tokio::test]
async fn the_statuses_a_table_accepts_are_its_kinds_vocabulary() {
    let Some(url) = common::database_url() else {
        return;
    };
    let pool = common::fresh_pool(&url, 1).await;
    for kind in KINDS.iter().filter(|k| !k.statuses.is_empty()) {
        let check: String = sqlx::query_scalar(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE conrelid = to_regclass($1) AND conname = $2",
        )
        .bind(kind.table)
        .bind(format!("{}_status_check", kind.table))
        .fetch_one(&pool)
        .await
        .unwrap();
        let mut accepted: Vec<&str> = check.split('\'').skip(1).step_by(2).collect();
        let mut statuses = kind.statuses.to_vec();
        accepted.sort_unstable();
        statuses.sort_unstable();
        assert_eq!(
            accepted, statuses,
            "{}: the table's check ({check}) and the contract's statuses",
            kind.name
        );
    }
}
