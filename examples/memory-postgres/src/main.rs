//! The same memory code on PostgreSQL + pgvector: only the constructor
//! changes. Needs `DATABASE_URL` (`cargo xtask db up` prints one).

use openvibe_memory::Stores;
use openvibe_memory::protocols::{CallerContext, Classification, Fact, FactQuery};
use openvibe_postgres::{PgStores, purge_tenant};

/// Backend-independent code: it only sees the store traits.
async fn remember_and_recall(
    stores: &Stores,
    me: &CallerContext,
) -> Result<usize, Box<dyn std::error::Error>> {
    stores
        .facts
        .store(
            me,
            Fact::new("", "Acme renewed twice, budget approved for Q3")
                .entity("acme")
                .classification(Classification::Public),
        )
        .await?;
    Ok(stores
        .facts
        .query(me, &FactQuery::new().text("budget"))
        .await?
        .len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("DATABASE_URL").map_err(
        |_| "DATABASE_URL is not set: run `cargo xtask db up` and export the URL it prints",
    )?;
    let tenant = format!("example-{}", std::process::id());
    let me = CallerContext::agent("cro").with_tenant(tenant.as_str());

    let in_process = openvibe_memory::in_memory_stores();
    let pg = PgStores::connect(&url).await?; // migrates the schema when needed
    let found_in_memory = remember_and_recall(&in_process, &me).await?;
    let found_in_postgres = remember_and_recall(&pg.stores(), &me).await?;
    println!("in memory: {found_in_memory} fact found; on PostgreSQL: {found_in_postgres}");
    assert_eq!(found_in_memory, found_in_postgres);

    purge_tenant(pg.pool(), &tenant).await?;
    Ok(())
}
