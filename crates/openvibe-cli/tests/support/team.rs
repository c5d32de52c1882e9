//! The space `team` of the CRO and CMO examples, as the CLI's tests read
//! it from PostgreSQL.

use openvibe::protocols::{CallerContext, MessageBody, MessageQuery};

/// Each request of space `team` in `tenant` (at `url`) with how many
/// answers it got (none yet when the space does not exist).
pub async fn answers_per_request(url: &str, tenant: &str) -> Vec<(String, usize)> {
    let stores = openvibe::postgres::PgStores::connect(url)
        .await
        .unwrap()
        .stores();
    let log = stores
        .spaces
        .messages(
            &CallerContext::system().with_tenant(tenant),
            "team",
            &MessageQuery::after(0).limit(1000),
        )
        .await
        .unwrap_or_default();
    log.iter()
        .filter(|m| matches!(m.body, MessageBody::Request(_)))
        .map(|r| {
            let answers = log
                .iter()
                .filter(|m| matches!(&m.body, MessageBody::Answer(a) if a.request == r.id))
                .count();
            (r.id.clone(), answers)
        })
        .collect()
}
