//! The web console (issue 42): group `pg_console` (PostgreSQL, needs
//! `DATABASE_URL`; `cargo xtask bench pg_console` provides it).
//!
//! - `console_inbox_render_p50_ms` / `_p99_ms`: `GET /console/inbox` of a
//!   signed-in approver, over loopback HTTP from the same process, with
//!   1,000 pending proposals in the namespace they approve (the page shows
//!   the newest 50 with their decision forms): session lookup, the governed
//!   proposal list on PostgreSQL (row-level security, the approver's read
//!   rule), rendering, the security headers.

use std::cell::Cell;

use openvibe_bench::{report, sample};
use openvibe_governance::Governance;
use openvibe_postgres::PgStores;
use openvibe_protocols::{Action, Proposal};
use openvibe_service::Service;

const SCHEMA: &str = "openvibe_bench_console";
const PENDING: usize = 1_000;

const POLICY: &str = "\
namespaces:
  cro:
    read: [ann, cro]
    write: [cro]
    approve: [ann]
api_keys:
  - { principal: ann, kind: user, env: BENCH_KEY_ANN, tenant: bench, clearance: { everywhere: restricted } }
  - { principal: cro, kind: agent, env: BENCH_KEY_CRO, tenant: bench, namespace: cro, clearance: { everywhere: restricted } }
";

fn governance() -> Result<Governance, String> {
    Governance::from_yaml_with_keys(
        POLICY,
        "bench.yaml",
        &[
            ("BENCH_KEY_ANN", "bench-ann"),
            ("BENCH_KEY_CRO", "bench-cro"),
        ],
    )
    .map_err(|e| e.to_string())
}

async fn run_pg_inner(url: &str) -> Result<(), String> {
    crate::pg::drop_schema(url, SCHEMA).await?;
    let pool = crate::pg::schema_pool(url, SCHEMA, 4).await?;
    let stores = PgStores::from_pool(pool).stores();
    let g = governance()?;
    let cro = g.key_context(g.api_key("bench-cro").ok_or("no cro key")?);
    let batches: Vec<Vec<usize>> = (0..PENDING)
        .collect::<Vec<_>>()
        .chunks(100)
        .map(<[usize]>::to_vec)
        .collect();
    for batch in batches {
        let writes = batch.into_iter().map(|i| {
            let p = Proposal::new(
                "cro",
                format!("Acme asks a discount of {}% on deal {i}", 5 + i % 20),
                Action::tool(
                    "give_discount",
                    "apply_discount",
                    serde_json::json!({"pct": 5 + i % 20, "deal": i}),
                ),
            )
            .id(format!("bench-proposal-{i:04}"))
            .domain("revenue");
            stores.proposals.create(&cro, p)
        });
        for done in futures::future::join_all(writes).await {
            done.map_err(|e| e.to_string())?;
        }
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let base = format!(
        "http://{}",
        listener.local_addr().map_err(|e| e.to_string())?
    );
    tokio::spawn(Service::governed(stores.clone(), g).serve(listener, std::future::pending()));
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())?;
    let signed = http
        .post(format!("{base}/console/login"))
        .form(&[("key", "bench-ann")])
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let cookie = signed
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .ok_or("sign-in set no cookie")?
        .to_owned();
    let failed = Cell::new(0u32);
    let inbox = format!("{base}/console/inbox");
    let renders = sample(20, 300, || async {
        let page = http.get(&inbox).header("cookie", &cookie).send().await;
        match page {
            Ok(r) if r.status().is_success() => match r.text().await {
                Ok(html) if html.matches("data-proposal=").count() == 50 => {}
                other => {
                    failed.set(failed.get() + 1);
                    eprintln!("inbox: unexpected page {:?}", other.map(|h| h.len()));
                }
            },
            other => {
                failed.set(failed.get() + 1);
                eprintln!("inbox: {other:?}");
            }
        }
    })
    .await;
    if failed.get() > 0 {
        return Err(format!("{} renders failed", failed.get()));
    }
    report(
        "console_inbox_render_p50_ms",
        renders.quantile_us(0.50) / 1000.0,
        "ms",
    );
    report(
        "console_inbox_render_p99_ms",
        renders.quantile_us(0.99) / 1000.0,
        "ms",
    );
    Ok(())
}

/// Run the PostgreSQL group.
pub async fn run_pg() {
    let Some(url) = openvibe_bench::database_url("pg_console") else {
        return;
    };
    if let Err(e) = run_pg_inner(&url).await {
        eprintln!("pg_console: benchmark failed: {e}");
    }
}
