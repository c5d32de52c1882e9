//! openvibe-memory alone: governed memory in process, no database.

use openvibe_memory::in_memory_stores;
use openvibe_memory::protocols::{CallerContext, Classification, Fact, FactQuery};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stores = in_memory_stores();
    let cro = CallerContext::agent("cro")
        .with_tenant("acme")
        .with_domain_clearance("revenue", Classification::Confidential);
    let intern = CallerContext::agent("intern").with_tenant("acme");

    stores
        .facts
        .store(
            &cro,
            Fact::new("f1", "Acme renewed twice, budget approved for Q3")
                .entity("acme")
                .domain("revenue")
                .classification(Classification::Confidential),
        )
        .await?;
    stores
        .facts
        .store(
            &cro,
            Fact::new("f2", "Acme prefers email over calls")
                .entity("acme")
                .classification(Classification::Public),
        )
        .await?;

    let query = FactQuery::new().entity("acme");
    let seen_by_cro = stores.facts.query(&cro, &query).await?;
    let seen_by_intern = stores.facts.query(&intern, &query).await?;
    println!("the CRO sees {} facts about acme", seen_by_cro.len());
    println!("the intern sees {} (public only)", seen_by_intern.len());
    assert_eq!(seen_by_cro.len(), 2);
    assert_eq!(seen_by_intern.len(), 1);

    let found = stores
        .facts
        .query(&cro, &FactQuery::new().text("budget"))
        .await?;
    assert_eq!(found[0].id, "f1");
    println!("search `budget`: {}", found[0].content);
    Ok(())
}
