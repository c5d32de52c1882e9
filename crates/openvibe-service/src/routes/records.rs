//! Facts, episodes, insights and semantic knowledge.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode};
use openvibe_api::dto::{
    AppendRaw, DeletedCount, EmbeddingModel, MaybeInsight, PruneRaw, SimilarInsight, Strengthen,
    Touch, Touched,
};
use openvibe_api::paths;
use openvibe_protocols::{
    Episode, EpisodeQuery, Fact, FactQuery, Insight, InsightQuery, Knowledge, KnowledgeHit,
    KnowledgeQuery, NewKnowledge, Page, RawCall, RawCallQuery,
};

use super::{Answer, Api, AppState, not_found, on};
use crate::auth::Ctx;
use crate::error::Failure;
use crate::extract::{Body, Record};
use crate::openapi::Op;

pub(super) fn routes(api: Api) -> Api {
    use Method as M;
    api
        // facts
        .op(
            Op::new(
                M::POST,
                paths::FACTS,
                "storeFact",
                "Store a fact (its namespace and owner are set from the caller)",
            )
            .body::<Fact>()
            .returns::<Fact>(),
            on(&M::POST, store_fact),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/facts/{id}",
                "getFact",
                "A fact the caller may read",
            )
            .returns::<Fact>(),
            on(&M::GET, get_fact),
        )
        .op(
            Op::new(
                M::PUT,
                "/v1/memory/facts/{id}",
                "updateFact",
                "Replace a fact (the body's id must match)",
            )
            .body::<Fact>()
            .returns::<Fact>(),
            on(&M::PUT, update_fact),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/facts/{id}",
                "deleteFact",
                "Delete a fact",
            ),
            on(&M::DELETE, delete_fact),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/facts/query",
                "queryFacts",
                "Facts matching a query",
            )
            .body::<FactQuery>()
            .returns::<Vec<Fact>>(),
            on(&M::POST, query_facts),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/facts/touch",
                "touchFacts",
                "Count facts as accessed",
            )
            .body::<Touch>()
            .returns::<Touched>(),
            on(&M::POST, touch_facts),
        )
        // episodes
        .op(
            Op::new(M::POST, paths::EPISODES, "storeEpisode", "Store an episode")
                .body::<Episode>()
                .returns::<Episode>(),
            on(&M::POST, store_episode),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/episodes/{id}",
                "getEpisode",
                "An episode the caller may read",
            )
            .returns::<Episode>(),
            on(&M::GET, get_episode),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/episodes/{id}",
                "deleteEpisode",
                "Delete an episode",
            ),
            on(&M::DELETE, delete_episode),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/episodes/query",
                "queryEpisodes",
                "Episodes matching a query",
            )
            .body::<EpisodeQuery>()
            .returns::<Vec<Episode>>(),
            on(&M::POST, query_episodes),
        )
        // the raw log
        .op(
            Op::new(
                M::POST,
                paths::RAW,
                "appendRawCalls",
                "Append LLM calls to the raw log, all or none",
            )
            .body::<AppendRaw>()
            .returns::<Vec<RawCall>>(),
            on(&M::POST, append_raw),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/raw/{id}",
                "getRawCall",
                "A raw call the caller may read",
            )
            .returns::<RawCall>(),
            on(&M::GET, get_raw),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/raw/query",
                "queryRawCalls",
                "A page of raw calls, newest first",
            )
            .body::<RawCallQuery>()
            .returns::<Page<RawCall>>(),
            on(&M::POST, query_raw),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/raw/prune",
                "pruneRawCalls",
                "Delete an agent's raw calls beyond a retention",
            )
            .body::<PruneRaw>()
            .returns::<DeletedCount>(),
            on(&M::POST, prune_raw),
        )
        // insights
        .op(
            Op::new(M::POST, paths::INSIGHTS, "storeInsight", "Store an insight")
                .body::<Insight>()
                .returns::<Insight>(),
            on(&M::POST, store_insight),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/insights/{id}",
                "getInsight",
                "An insight the caller may read",
            )
            .returns::<Insight>(),
            on(&M::GET, get_insight),
        )
        .op(
            Op::new(
                M::PUT,
                "/v1/memory/insights/{id}",
                "updateInsight",
                "Replace an insight (the body's id must match)",
            )
            .body::<Insight>()
            .returns::<Insight>(),
            on(&M::PUT, update_insight),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/insights/{id}",
                "deleteInsight",
                "Delete an insight",
            ),
            on(&M::DELETE, delete_insight),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/insights/query",
                "queryInsights",
                "Insights matching a query",
            )
            .body::<InsightQuery>()
            .returns::<Vec<Insight>>(),
            on(&M::POST, query_insights),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/insights/similar",
                "similarInsight",
                "The agent's insight most similar to a text",
            )
            .body::<SimilarInsight>()
            .returns::<MaybeInsight>(),
            on(&M::POST, similar_insight),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/insights/touch",
                "touchInsights",
                "Count insights as accessed",
            )
            .body::<Touch>()
            .returns::<Touched>(),
            on(&M::POST, touch_insights),
        )
        .op(
            Op::new(
                M::POST,
                "/v1/memory/insights/{id}/strengthen",
                "strengthenInsight",
                "Observe an insight again, atomically (confidence +0.1 up to 1, evidence +1)",
            )
            .body::<Strengthen>()
            .returns::<Insight>(),
            on(&M::POST, strengthen_insight),
        )
        // semantic knowledge
        .op(
            Op::new(
                M::POST,
                paths::SEMANTIC,
                "storeKnowledge",
                "Store knowledge, upserting on external_id or on the content hash",
            )
            .body::<NewKnowledge>()
            .returns::<Knowledge>(),
            on(&M::POST, store_knowledge),
        )
        .op(
            Op::new(
                M::POST,
                paths::SEMANTIC_QUERY,
                "queryKnowledge",
                "Search knowledge (private to the caller plus public)",
            )
            .body::<KnowledgeQuery>()
            .returns::<Vec<KnowledgeHit>>(),
            on(&M::POST, query_knowledge),
        )
        .op(
            Op::new(
                M::POST,
                paths::SEMANTIC_SEARCH,
                "searchKnowledge",
                "The seed's name for queryKnowledge",
            )
            .body::<KnowledgeQuery>()
            .returns::<Vec<KnowledgeHit>>(),
            on(&M::POST, query_knowledge),
        )
        .op(
            Op::new(
                M::GET,
                paths::SEMANTIC_MODEL,
                "embeddingModel",
                "The embedding model semantic knowledge uses",
            )
            .returns::<EmbeddingModel>(),
            on(&M::GET, embedding_model),
        )
        .op(
            Op::new(
                M::GET,
                "/v1/memory/semantic/{id}",
                "getKnowledge",
                "Knowledge the caller may read",
            )
            .returns::<Knowledge>(),
            on(&M::GET, get_knowledge),
        )
        .op(
            Op::new(
                M::DELETE,
                "/v1/memory/semantic/{id}",
                "deleteKnowledge",
                "Delete knowledge",
            ),
            on(&M::DELETE, delete_knowledge),
        )
}

async fn store_fact(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(fact): Record<Fact>,
) -> Answer<Fact> {
    Ok(Json(s.stores.facts.store(&ctx, fact).await?))
}

async fn get_fact(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Fact> {
    let fact = s.stores.facts.get(&ctx, &id).await?;
    Ok(Json(fact.ok_or_else(|| not_found("fact", &id))?))
}

async fn update_fact(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Record(fact): Record<Fact>,
) -> Answer<Fact> {
    same_id(&id, &fact.id)?;
    Ok(Json(s.stores.facts.update(&ctx, fact).await?))
}

async fn delete_fact(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.facts.delete(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query_facts(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(q): Record<FactQuery>,
) -> Answer<Vec<Fact>> {
    Ok(Json(s.stores.facts.query(&ctx, &q).await?))
}

async fn touch_facts(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(t): Body<Touch>,
) -> Answer<Touched> {
    let touched = s.stores.facts.touch(&ctx, &t.ids).await?;
    Ok(Json(Touched { touched }))
}

async fn store_episode(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(e): Record<Episode>,
) -> Answer<Episode> {
    Ok(Json(s.stores.episodes.store(&ctx, e).await?))
}

async fn get_episode(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Episode> {
    let episode = s.stores.episodes.get(&ctx, &id).await?;
    Ok(Json(episode.ok_or_else(|| not_found("episode", &id))?))
}

async fn delete_episode(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.episodes.delete(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query_episodes(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(q): Record<EpisodeQuery>,
) -> Answer<Vec<Episode>> {
    Ok(Json(s.stores.episodes.query(&ctx, &q).await?))
}

async fn append_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<AppendRaw>,
) -> Answer<Vec<RawCall>> {
    Ok(Json(s.stores.raw.append(&ctx, b.calls).await?))
}

async fn get_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<RawCall> {
    let call = s.stores.raw.get(&ctx, &id).await?;
    Ok(Json(call.ok_or_else(|| not_found("raw_call", &id))?))
}

async fn query_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<RawCallQuery>,
) -> Answer<Page<RawCall>> {
    Ok(Json(s.stores.raw.query(&ctx, &q).await?))
}

async fn prune_raw(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(b): Body<PruneRaw>,
) -> Answer<DeletedCount> {
    let deleted_count = s.stores.raw.prune(&ctx, &b.agent_id, &b.retention).await?;
    Ok(Json(DeletedCount { deleted_count }))
}

async fn store_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(i): Record<Insight>,
) -> Answer<Insight> {
    Ok(Json(s.stores.insights.store(&ctx, i).await?))
}

async fn get_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Insight> {
    let insight = s.stores.insights.get(&ctx, &id).await?;
    Ok(Json(insight.ok_or_else(|| not_found("insight", &id))?))
}

async fn update_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Record(insight): Record<Insight>,
) -> Answer<Insight> {
    same_id(&id, &insight.id)?;
    Ok(Json(s.stores.insights.update(&ctx, insight).await?))
}

async fn delete_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.insights.delete(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn query_insights(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(q): Record<InsightQuery>,
) -> Answer<Vec<Insight>> {
    Ok(Json(s.stores.insights.query(&ctx, &q).await?))
}

async fn similar_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(q): Body<SimilarInsight>,
) -> Answer<MaybeInsight> {
    let insight = s
        .stores
        .insights
        .find_similar(&ctx, &q.agent_id, &q.content)
        .await?;
    Ok(Json(MaybeInsight { insight }))
}

async fn touch_insights(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Body(t): Body<Touch>,
) -> Answer<Touched> {
    let touched = s.stores.insights.touch(&ctx, &t.ids).await?;
    Ok(Json(Touched { touched }))
}

async fn strengthen_insight(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
    Body(b): Body<Strengthen>,
) -> Answer<Insight> {
    Ok(Json(
        s.stores
            .insights
            .strengthen(&ctx, &id, &b.episode_ids)
            .await?,
    ))
}

async fn store_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(k): Record<NewKnowledge>,
) -> Answer<Knowledge> {
    Ok(Json(s.stores.knowledge.store_knowledge(&ctx, k).await?))
}

async fn query_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Record(q): Record<KnowledgeQuery>,
) -> Answer<Vec<KnowledgeHit>> {
    Ok(Json(s.stores.knowledge.query_knowledge(&ctx, &q).await?))
}

async fn embedding_model(State(s): State<AppState>, Ctx(_): Ctx) -> Json<EmbeddingModel> {
    let (model, dimensions) = s.stores.knowledge.embedding_model();
    Json(EmbeddingModel {
        model: model.to_owned(),
        dimensions,
    })
}

async fn get_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Answer<Knowledge> {
    let k = s.stores.knowledge.get_knowledge(&ctx, &id).await?;
    Ok(Json(k.ok_or_else(|| not_found("knowledge", &id))?))
}

async fn delete_knowledge(
    State(s): State<AppState>,
    Ctx(ctx): Ctx,
    Path(id): Path<String>,
) -> Result<StatusCode, Failure> {
    s.stores.knowledge.delete_knowledge(&ctx, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A body's id must match the path's.
fn same_id(path: &str, body: &str) -> Result<(), Failure> {
    if path == body {
        Ok(())
    } else {
        Err(openvibe_protocols::StoreError::invalid(
            "id",
            format!("the body's id `{body}` is not the path's `{path}`"),
        )
        .into())
    }
}
