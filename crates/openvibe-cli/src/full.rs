//! `openvibe demo --full`: the source design's full example
//! ([`openvibe::full_example`]) with a report of the memory pyramid it
//! leaves: the raw calls (L1) by episode (L2), the insights (L3) with the
//! calls they cite, and what was published.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use openvibe::RoleRuntime;
use openvibe::full_example::{self, CASSETTE, FullRun, stand_in};

use openvibe::memory::SubjectScore;
use openvibe::protocols::{Belief, Outcome, Verdict};

use crate::CliError;
use crate::demo::{
    EmbedderChoice, Options, finish, indent, make_embedder, make_llm_for, make_stores,
    recording_embeddings, tree,
};
use crate::proposals::{Desk, decide};
use openvibe::protocols::Embedder;

/// A directory of its own for the configuration files, removed on drop.
struct ConfigDir(PathBuf);

impl ConfigDir {
    fn new() -> Result<Self, CliError> {
        let dir = std::env::temp_dir().join(format!(
            "openvibe-full-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        full_example::write_config(&dir).map_err(|e| CliError::Io {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        Ok(Self(dir))
    }
}

impl Drop for ConfigDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run the full example as `options` say and print what happened.
pub async fn execute(
    options: &Options,
    llm_label: &str,
    out: &mut dyn Write,
) -> Result<(), CliError> {
    let llm = make_llm_for(
        options,
        (CASSETTE, "examples/full/cassette.jsonl"),
        Arc::new(stand_in()),
    )?;
    let (embedder, retrieval) = match options.embedder {
        // The vectors all-MiniLM-L6-v2 gave the example's texts, replayed.
        EmbedderChoice::Auto => (
            Some(Arc::new(
                full_example::embeddings().map_err(|e| CliError::Embedding(e.to_string()))?,
            ) as Arc<dyn Embedder>),
            "hybrid (full text + all-MiniLM-L6-v2 vectors, replayed from examples/full/embeddings.jsonl)"
                .to_owned(),
        ),
        choice => make_embedder(choice)?,
    };
    let embedder = recording_embeddings(embedder, options);
    let (stores, tenant, backend, purge) = make_stores(options).await?;
    let config = ConfigDir::new()?;
    writeln!(
        out,
        "== the full example: a CRO with RevenueOps, a CMO with the Content Engine, working together in a space; loaded from a configuration directory"
    )?;
    writeln!(out, "   model: {llm_label}")?;
    writeln!(out, "   memory: {backend}")?;
    writeln!(out, "   retrieval: {retrieval}")?;
    let mut runtime = RoleRuntime::new(llm)
        .with_tenant(tenant.clone())
        .with_stores(stores);
    if let Some(embedder) = embedder {
        runtime = runtime.with_embedder(embedder);
    }
    let result = async {
        let run = full_example::run(&config.0, runtime).await?;
        report(&run, out).await?;
        goals(&run, out)?;
        decisions(&run, &tenant, out).await?;
        worked(&run, out)?;
        two_weeks(&run, &tenant, out).await?;
        pace(&run, out).await?;
        writeln!(out, "\n== memory tree")?;
        tree(&run.filesystem, out).await
    }
    .await;
    finish(purge, &tenant, result).await
}

async fn report(run: &FullRun, out: &mut dyn Write) -> Result<(), CliError> {
    for (workflow, state) in &run.states {
        writeln!(out, "\n== {workflow}")?;
        let shown = serde_json::to_string_pretty(state)?;
        writeln!(out, "{}", indent(&shown))?;
    }
    writeln!(
        out,
        "\n== the CRO asked the owner of marketing in the space `team`; the CMO's loop took the request:"
    )?;
    let trace = &run.delegation;
    writeln!(
        out,
        "  event {} of role {} ({}, from the space)",
        trace.event.id, trace.role_id, trace.event.kind,
    )?;
    for stage in &trace.stages {
        writeln!(out, "    {:<10} {}", stage.stage.as_str(), stage.outcome)?;
    }
    if let Some(decision) = &run.delegation.decision {
        writeln!(out, "  its decision:")?;
        for line in decision.explain() {
            writeln!(out, "    {line}")?;
        }
        for e in &decision.confidence.evidence {
            writeln!(out, "    evidence: {} ({:.2}), by {}", e.id, e.value, e.why)?;
        }
    }
    writeln!(
        out,
        "\n== L1 raw log: {} LLM calls ({} tokens in, {} out)",
        run.raw_calls.len(),
        run.raw_calls.iter().map(|c| c.tokens_in).sum::<u64>(),
        run.raw_calls.iter().map(|c| c.tokens_out).sum::<u64>(),
    )?;
    writeln!(
        out,
        "\n== L2 episodes, each with the raw calls it was made from"
    )?;
    for episode in run.episodes.iter().rev() {
        let calls: Vec<_> = run
            .raw_calls
            .iter()
            .filter(|c| c.episode_id.as_deref() == Some(episode.id.as_str()))
            .collect();
        writeln!(
            out,
            "- {}/{}: {} call(s), {} tokens in, {} out",
            episode.operator_id,
            episode.node_name,
            calls.len(),
            episode.tokens_in,
            episode.tokens_out
        )?;
    }
    let outside = run
        .raw_calls
        .iter()
        .filter(|c| c.episode_id.is_none())
        .count();
    writeln!(
        out,
        "- outside any node (decomposition, prioritization, reflection): {outside} call(s)"
    )?;
    let reflection = &run.distillation.reflection;
    writeln!(
        out,
        "\n== L3 insights from {} episodes, citing {} raw calls",
        reflection.episodes_considered,
        reflection.cited_calls.len()
    )?;
    for insight in reflection.insights() {
        writeln!(out, "- ({:.2}) {}", insight.confidence, insight.content)?;
    }
    writeln!(
        out,
        "\n== published to the workspace: {} fact(s)",
        run.distillation.published.len()
    )?;
    for fact in &run.distillation.published {
        writeln!(out, "- {}", fact.content)?;
    }
    if let Some(first) = reflection.created.first() {
        let lineage = run.pyramid.trace(&first.id).await?;
        writeln!(
            out,
            "\n== trace of \"{}\": {} episodes, {} raw calls",
            lineage.insight.content,
            lineage.episodes.len(),
            lineage.raw_calls.len()
        )?;
    }
    Ok(())
}

/// The CRO's goals: where they stood before the lead was qualified and
/// after (as `openvibe goals status` shows them), the initiatives of the
/// decomposition, and the priorities the scheduler's daily run set.
fn goals(run: &FullRun, out: &mut dyn Write) -> Result<(), CliError> {
    let mean = |goals: &[openvibe::protocols::GoalProgress]| {
        goals.first().map_or(0.0, |g| g.progress * 100.0)
    };
    writeln!(
        out,
        "\n== goals (goals.yaml): progress {:.1}% before the lead was qualified, {:.1}% after \
         (its node reported a qualified lead, a CRM tool call in the enriching agent the opportunity); decomposed by the model, prioritized by the daily schedule",
        mean(&run.goals_before),
        mean(&run.goals)
    )?;
    for r in &run.reports {
        let by = match r.episode_id.as_deref() {
            Some(id) if id.starts_with("call-") => "a tool call in an agent node",
            Some(_) => "a node's output",
            None => "from outside",
        };
        writeln!(
            out,
            "  reported {} {} by {by}: {}",
            r.metric,
            crate::goals::amount(r.value),
            r.note
        )?;
    }
    let table = crate::goals::status_table(&run.goals, std::slice::from_ref(&run.priorities));
    for line in table.lines() {
        if line.is_empty() {
            writeln!(out)?;
        } else {
            writeln!(out, "  {line}")?;
        }
    }
    Ok(())
}

/// The day's work in the CRO's loop: each priority and open initiative
/// decided like any event (act within authority, propose, escalate), and
/// where the initiatives stand after it.
fn worked(run: &FullRun, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(
        out,
        "\n== the day's work: the priorities and the open initiatives become events of the CRO's loop"
    )?;
    for trace in &run.worked {
        let Some(decision) = &trace.decision else {
            continue;
        };
        writeln!(
            out,
            "- {}: {} ({:.2} confidence) · {}",
            trace.event.summary,
            decision.outcome,
            decision.confidence.score,
            act_line(trace.act.as_ref())
        )?;
    }
    for goal in &run.goals_after {
        writeln!(out, "  initiatives of {}:", goal.goal.id())?;
        for i in &goal.goal.initiatives {
            writeln!(out, "  - {}", crate::goals::initiative_line(i))?;
        }
    }
    Ok(())
}

/// What a loop's act stage did, in a few words.
fn act_line(act: Option<&openvibe::roles::ActOutcome>) -> String {
    use openvibe::roles::ActOutcome;
    match act {
        Some(ActOutcome::Ran { output, .. }) => match openvibe::roles::read_result(output) {
            (Some(status), text) => format!("ran, a setback ({status}): {text}"),
            (None, text) => format!("ran: {}", openvibe::protocols::truncate_chars(&text, 120)),
        },
        Some(ActOutcome::Failed { error, .. }) => format!("failed: {error}"),
        Some(ActOutcome::Proposed { proposal_id }) => format!("proposed {proposal_id}"),
        Some(ActOutcome::Nothing { reason }) => reason.clone(),
        None => String::new(),
    }
}

/// The key results behind their pace once the two weeks are gone: each
/// escalates to the goal's people, once per period.
async fn pace(run: &FullRun, out: &mut dyn Write) -> Result<(), CliError> {
    let behind = full_example::pace_after(run, 14).await?;
    writeln!(
        out,
        "\n== pace, two weeks on: {} key result(s) behind (progress against the time gone, a 10-point margin)",
        behind.len()
    )?;
    for b in &behind {
        writeln!(
            out,
            "- {}/{}: escalated to {} (once per {} days)",
            b.goal_id,
            b.key_result_id,
            b.proposal
                .assignee
                .as_deref()
                .unwrap_or("the goal's people"),
            openvibe::roles::PACE_PERIOD_DAYS
        )?;
    }
    Ok(())
}

/// The person who approves in the demo's script (in your deployment, the
/// key of whoever runs `openvibe proposals approve`).
pub const DEMO_APPROVER: &str = "ann";

/// [`DEMO_APPROVER`] at the run's stores.
fn approver(run: &FullRun, tenant: &str) -> Result<Desk, CliError> {
    Ok(Desk {
        stores: run
            .runtime
            .stores()
            .cloned()
            .ok_or_else(|| CliError::Usage("the runtime has no stores".into()))?,
        ctx: crate::proposals::person(tenant, DEMO_APPROVER),
    })
}

/// The discount requests, decided three ways: each decision's four steps;
/// what ran; the proposal a person approves (as `openvibe proposals
/// approve` does), which then runs once.
async fn decisions(run: &FullRun, tenant: &str, out: &mut dyn Write) -> Result<(), CliError> {
    writeln!(
        out,
        "\n== decisions: the CRO decides on three requests (its playbook as evidence: \"{}\")",
        full_example::PLAYBOOK
    )?;
    for handled in &run.decisions {
        let d = &handled.decision;
        writeln!(out, "\n- {}: {}", d.event.summary, d.outcome)?;
        for line in d.explain() {
            writeln!(out, "    {line}")?;
        }
        for e in &d.confidence.evidence {
            writeln!(out, "    evidence: {} ({:.2}), by {}", e.id, e.value, e.why)?;
        }
        match (&handled.result, &handled.proposal) {
            (Some(Ok(result)), _) => writeln!(out, "    ran: {result}")?,
            (Some(Err(error)), _) => writeln!(out, "    failed: {error}")?,
            (None, Some(p)) => writeln!(out, "    proposal {} waits for a person", p.id)?,
            (None, None) if d.outcome == Outcome::Refuse => {
                writeln!(out, "    never runs (refused and recorded)")?;
            }
            (None, None) => {}
        }
    }
    let pending: Vec<_> = run
        .decisions
        .iter()
        .filter_map(|h| h.proposal.as_ref())
        .collect();
    for p in pending {
        let desk = approver(run, tenant)?;
        writeln!(
            out,
            "\n$ openvibe proposals approve {} --reason \"strategic account\"   (as user:{DEMO_APPROVER})",
            p.id
        )?;
        let mut said = Vec::new();
        decide(
            &desk,
            &p.id,
            &Verdict::approve("strategic account"),
            &mut said,
        )
        .await?;
        write!(out, "{}", String::from_utf8_lossy(&said))?;
        let done = run.runtime.run_approved(&p.id).await?;
        writeln!(
            out,
            "the runtime ran it: {} ({})",
            done.status,
            done.result
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default()
        )?;
        let again = run.runtime.run_approved(&p.id).await;
        writeln!(
            out,
            "running it again: {}",
            match again {
                Err(e) if e.is_conflict() => "refused, it runs once".to_owned(),
                Err(e) => format!("failed: {e}"),
                Ok(p) => format!("ran twice ({})", p.status),
            }
        )?;
    }
    Ok(())
}

/// The CRO's cognitive loop over [`full_example::two_weeks`]: leads come
/// in, reflections grow an insight until the learn step proposes it as a
/// belief, a person approves it from the CLI (`openvibe beliefs approve`),
/// the next decisions cite it; then a contradicting insight proposes a
/// belief that supersedes it.
async fn two_weeks(run: &FullRun, tenant: &str, out: &mut dyn Write) -> Result<(), CliError> {
    use openvibe::roles::Stage;
    writeln!(
        out,
        "\n== two weeks of leads, compressed: the CRO's cognitive loop (perceive → decide → act → observe → reflect → learn)"
    )?;
    let desk = approver(run, tenant)?;
    let desk = &desk;
    let days = full_example::run_two_weeks(run, |belief| async move {
        // A belief that follows an active one replaces it: the price
        // change moved deals, so the person approves it superseding.
        let reason = if belief.predecessor().is_some() {
            "the price change moved deals: ask before acting on what it touches"
        } else {
            "matches the Q3 pipeline"
        };
        // The successor is learned from deals that went wrong: a
        // constraint, so the CRO asks before acting on what it bears on.
        let verdict = Verdict {
            supersede: belief.refines.is_some(),
            constraint: belief.refines.is_some(),
            ..Verdict::approve(reason)
        };
        // The command as a person types it, from the verdict it gives.
        let flags: String = [(verdict.supersede, " --supersede"), (verdict.constraint, " --constraint")]
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, flag)| *flag)
            .collect();
        let mut said = format!(
            "\n$ openvibe beliefs approve {}{flags} --reason \"{reason}\"   (as user:{DEMO_APPROVER})\n",
            belief.id
        )
        .into_bytes();
        crate::beliefs::decide(desk, &belief.id, &verdict, &mut said)
            .await
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&said).into_owned())
    })
    .await?;
    let mut last = None;
    for day in &days {
        let trace = &day.trace;
        if trace.is_reflection() {
            writeln!(out, "\n  day {:>2} · reflection", day.day)?;
        } else if !write_decision(day, out)? {
            continue;
        }
        if trace.is_reflection() || trace.reflected_after_experience() {
            for stage in trace
                .stages
                .iter()
                .filter(|s| matches!(s.stage, Stage::Reflect | Stage::Learn))
            {
                writeln!(out, "    {}: {}", stage.stage, stage.outcome)?;
            }
            for i in day.insights.iter().filter(|i| i.id.starts_with("ins_p")) {
                writeln!(
                    out,
                    "    insight ({:.2}, evidence {}): {}",
                    i.confidence, i.evidence_count, i.content
                )?;
            }
            for (belief, said) in &day.proposed {
                let superseding = match (&belief.supersedes, &belief.refines) {
                    (Some(old), _) => format!(", superseding {old}"),
                    (None, Some(old)) => format!(", refining {old}"),
                    (None, None) => String::new(),
                };
                writeln!(
                    out,
                    "    belief proposed{superseding}: \"{}\" (from {}, in the inbox as {})",
                    belief.statement,
                    belief.insight_ids.join(", "),
                    openvibe::protocols::belief_proposal_id(&belief.id)
                )?;
                if let Some(old) = belief.predecessor()
                    && let Some(old) = desk.stores.beliefs.get(&desk.ctx, old).await?
                {
                    writeln!(out, "    {}", same_subject(run, &old, belief).await?)?;
                }
                write!(out, "{said}")?;
                last = Some(belief.id.clone());
            }
        }
    }
    if let Some(id) = last
        && let Some(b) = desk.stores.beliefs.get(&desk.ctx, &id).await?
    {
        writeln!(
            out,
            "\n  beliefs now: {} v{} {}{}",
            b.id,
            b.version,
            b.status,
            b.supersedes
                .as_ref()
                .map(|old| format!("; {old} retired, superseded by it"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}

/// How the CRO judged `new` to be on `old`'s subject: by meaning (the
/// sentence vectors' cosine, less the words they share) or by words.
async fn same_subject(run: &FullRun, old: &Belief, new: &Belief) -> Result<String, CliError> {
    let subjects = run.runtime.get_role("cro")?.subjects();
    let score = subjects.score(&old.statement, &new.statement).await;
    let by_words = SubjectScore {
        similarity: None,
        ..score
    }
    .same_subject(subjects.thresholds());
    Ok(match score.similarity {
        Some(cosine) => format!(
            "same subject as {} by meaning: cosine {cosine:.2} with {} shared word(s){}",
            old.id,
            score.shared_terms,
            if by_words {
                ""
            } else {
                " (by words alone, another subject)"
            }
        ),
        None => format!(
            "same subject as {} by words: {} shared",
            old.id, score.shared_terms
        ),
    })
}

/// One decided day of the two weeks: the decision, what ran, the beliefs it
/// cites and what weighed against it; `false` when nothing was decided.
fn write_decision(day: &full_example::Day, out: &mut dyn Write) -> Result<bool, CliError> {
    use openvibe::protocols::EvidenceKind;
    let trace = &day.trace;
    let Some(decision) = &trace.decision else {
        writeln!(
            out,
            "  day {:>2} · {}: {}",
            day.day,
            trace.event.id,
            trace.failed.clone().unwrap_or_default()
        )?;
        return Ok(false);
    };
    let act = act_line(trace.act.as_ref());
    writeln!(
        out,
        "  day {:>2} · {}: {} ({:.2} confidence) · {act}",
        day.day, decision.event.summary, decision.outcome, decision.confidence.score
    )?;
    writeln!(out, "    why: {}", decision.reason)?;
    for e in decision
        .confidence
        .evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::Belief)
    {
        writeln!(
            out,
            "    cites belief {} ({:.2}{}): {} (found by {})",
            e.id,
            e.value,
            if e.constraint { ", a constraint" } else { "" },
            e.summary,
            e.why
        )?;
    }
    for (belief, without) in &day.moved_by {
        writeln!(
            out,
            "    without {belief}: {} ({:.2} confidence): the belief moved this decision",
            without.outcome, without.confidence.score
        )?;
    }
    for e in decision
        .confidence
        .evidence
        .iter()
        .filter(|e| e.kind == EvidenceKind::Episode && e.why.contains("went against"))
    {
        writeln!(out, "    weighs against: {} ({})", e.summary, e.why)?;
    }
    for e in decision
        .confidence
        .evidence
        .iter()
        .filter(|e| e.id.starts_with("rejected-"))
    {
        writeln!(out, "    cites the rejection: {} ({})", e.summary, e.why)?;
    }
    if let Some((proposal, reason)) = &day.rejected {
        writeln!(
            out,
            "\n$ openvibe proposals reject {proposal} --reason \"{reason}\"   (as user:{DEMO_APPROVER})"
        )?;
    }
    Ok(true)
}
