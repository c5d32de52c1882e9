//! A deterministic stand-in for a model, used to record the demo's cassette
//! where no real model is reachable (`openvibe demo --llm standin --record`).
//!
//! It answers the demo's three kinds of request the way a good model would,
//! from the request's content alone: qualification (JSON score, and it
//! visibly applies a learned insight when one is in its system prompt), CRM
//! enrichment (calls `search_crm`, then summarises the record it got back),
//! and reflection (a JSON list of insights drawn from the episodes shown).

use openvibe::primitives::testing::StandIn;
use openvibe::protocols::{ContentBlock, LlmRequest, LlmResponse};
use serde_json::{Value, json};

/// The insight the stand-in draws from webinar leads with a VP contact.
pub const VP_INSIGHT: &str = "Webinar leads whose contact is a VP qualify as tier A";

/// The stand-in model: reflection, enrichment (a request with tools) and
/// qualification (everything else), in that order.
pub fn stand_in() -> StandIn {
    StandIn::new()
        .rule(|request| {
            request
                .system
                .contains("You are reflecting on recent work experiences")
                .then(|| LlmResponse::text(reflect(&request.first_user_text())))
        })
        .rule(|request| (!request.tools.is_empty()).then(|| enrich(request)))
        .rule(|request| {
            Some(LlmResponse::text(qualify(
                &request.system,
                &request.first_user_text(),
            )))
        })
}

/// "Acme Corp, 200 employees, ..." → ("Acme Corp", 200).
fn lead_parts(user: &str) -> (String, u64) {
    let lead = user.split_once(": ").map_or(user, |(_, rest)| rest);
    let company = lead.split(',').next().unwrap_or(lead).trim().to_owned();
    let employees = lead
        .split(',')
        .find_map(|part| part.trim().strip_suffix(" employees")?.trim().parse().ok())
        .unwrap_or(0);
    (company, employees)
}

fn qualify(system: &str, user: &str) -> String {
    let (company, employees) = lead_parts(user);
    let webinar = user.contains("webinar");
    let vp = user.contains("VP ");
    let mut score = 50 + (employees / 20).min(30) + if webinar { 10 } else { 0 };
    let mut tier = if score >= 80 {
        "A"
    } else if score >= 65 {
        "B"
    } else {
        "C"
    };
    let mut reason = format!(
        "{company}: {employees} employees{}",
        if webinar { ", webinar lead" } else { "" }
    );
    if webinar && vp && system.contains(VP_INSIGHT) {
        score = score.max(85);
        tier = "A";
        reason.push_str(&format!("; applying a learned insight: \"{VP_INSIGHT}\""));
    }
    json!({"score": score, "tier": tier, "reason": reason}).to_string()
}

fn enrich(request: &LlmRequest) -> LlmResponse {
    let last_results = StandIn::last_tool_result(request);
    match last_results {
        None => {
            let (company, _) = lead_parts(&request.first_user_text());
            let tool = request
                .tools
                .first()
                .map_or("search_crm", |t| t.name.as_str());
            LlmResponse::from_blocks(vec![
                ContentBlock::text(format!("Looking up {company} in the CRM.")),
                ContentBlock::ToolUse {
                    id: format!("toolu_{:02}", request.messages.len()),
                    name: tool.to_owned(),
                    input: json!({"query": company}),
                },
            ])
        }
        Some((content, true)) => LlmResponse::text(
            json!({"company": null, "next_step": format!("ask the lead for details ({content})")})
                .to_string(),
        ),
        Some((content, false)) => {
            let record = serde_json::from_str::<Vec<Value>>(&content)
                .ok()
                .and_then(|records| records.into_iter().next())
                .unwrap_or(Value::Null);
            let stage = record["stage"].as_str().unwrap_or("unknown");
            let next_step = match stage {
                "open deal" => "book the pilot the champion asked for",
                "prospect" => "invite the champion to a discovery call",
                _ => "qualify the account again before reaching out",
            };
            LlmResponse::text(format!(
                "```json\n{}\n```",
                json!({
                    "company": record["company"],
                    "employees": record["employees"],
                    "stage": stage,
                    "champion": record["champion"],
                    "next_step": next_step,
                })
            ))
        }
    }
}

fn reflect(episodes: &str) -> String {
    let mut insights = Vec::new();
    if episodes.contains("webinar") && episodes.contains("VP") {
        insights.push(json!({
            "content": VP_INSIGHT,
            "confidence": 0.8,
            "domain": "revenue",
            "tags": ["qualification", "webinar"],
        }));
    }
    if episodes.contains("open deal") {
        insights.push(json!({
            "content": "An open CRM deal with a named champion is the strongest enrichment signal",
            "confidence": 0.65,
            "domain": "revenue",
            "tags": ["enrichment"],
        }));
    }
    format!("Patterns I see:\n```json\n{}\n```", Value::Array(insights))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_parts_reads_company_and_headcount() {
        assert_eq!(
            lead_parts("Score this lead: Acme Corp, 200 employees, logistics"),
            ("Acme Corp".to_owned(), 200)
        );
        assert_eq!(lead_parts("Globex"), ("Globex".to_owned(), 0));
    }

    #[test]
    fn qualification_applies_the_insight_only_when_it_is_in_the_prompt() {
        let lead = "Score this lead: Globex, 850 employees, came from the webinar; contact is the VP Supply Chain.";
        let before: Value = serde_json::from_str(&qualify("You qualify.", lead)).unwrap();
        let after: Value =
            serde_json::from_str(&qualify(&format!("## Insights\n- {VP_INSIGHT}"), lead)).unwrap();
        assert!(!before["reason"].as_str().unwrap().contains("insight"));
        assert!(after["reason"].as_str().unwrap().contains(VP_INSIGHT));
        assert_eq!(after["tier"], "A");
    }
}
