//! `openvibe beliefs ls | show | approve | reject | retire`: the beliefs
//! (L4) roles propose and people approve, in PostgreSQL or through the
//! memory service. Who decides comes from the API key, as for
//! `openvibe proposals` ([`crate::proposals::connect`]).

use std::io::Write;

use openvibe::protocols::{BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, StoreError, Verdict};

use crate::CliError;
use crate::proposals::Desk;

/// `beliefs ls`: one line per belief, newest first.
pub async fn ls(desk: &Desk, query: &BeliefQuery, out: &mut impl Write) -> Result<(), CliError> {
    let page = desk.stores.beliefs.list(&desk.ctx, query).await?;
    if page.items.is_empty() {
        writeln!(out, "no beliefs")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<34} {:<9} {:<10} {:<12} {:>5}  STATEMENT",
        "ID", "STATUS", "ROLE", "DOMAIN", "CONF"
    )?;
    for b in &page.items {
        writeln!(
            out,
            "{:<34} {:<9} {:<10} {:<12} {:>5.2}  {}{}",
            b.id,
            b.status,
            b.role_id,
            if b.domain.is_empty() { "-" } else { &b.domain },
            b.confidence,
            b.statement,
            if b.constraint { " [constraint]" } else { "" }
        )?;
    }
    if let Some(cursor) = page.next_cursor {
        writeln!(out, "(more: --after {cursor})")?;
    }
    Ok(())
}

/// A belief for a person: what it holds, where it came from, where it
/// stands.
pub fn describe(b: &Belief) -> String {
    let mut s = format!(
        "belief {} (version {})\n  status:     {}\n  role:       {}\n  domain:     {}\n  statement:  {}\n  confidence: {:.2}{}\n",
        b.id,
        b.version,
        b.status,
        b.role_id,
        if b.domain.is_empty() { "-" } else { &b.domain },
        b.statement,
        b.confidence,
        if b.constraint {
            " (a constraint: actions it bears on are proposed)"
        } else {
            ""
        }
    );
    if !b.insight_ids.is_empty() {
        s.push_str(&format!(
            "  from:       insights {} (evidence {})\n",
            b.insight_ids.join(", "),
            b.evidence
        ));
    }
    if let Some(old) = &b.supersedes {
        s.push_str(&format!("  supersedes: {old}\n"));
    }
    if let Some(new) = &b.superseded_by {
        s.push_str(&format!("  superseded by: {new}\n"));
    }
    s.push_str(&format!(
        "  proposed:   {} by {}\n",
        b.meta.created_at.to_rfc3339(),
        b.meta.owner
    ));
    if let (Some(by), Some(at)) = (&b.decided_by, b.decided_at) {
        s.push_str(&format!(
            "  decided:    {} by {by}{}\n",
            at.to_rfc3339(),
            b.reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    s
}

/// `beliefs show ID`.
pub async fn show(desk: &Desk, id: &str, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let b = desk
        .stores
        .beliefs
        .get(&desk.ctx, id)
        .await?
        .ok_or_else(|| StoreError::NotFound {
            kind: BELIEF_KIND,
            id: id.to_owned(),
        })?;
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&b)?)?;
    } else {
        write!(out, "{}", describe(&b))?;
    }
    Ok(())
}

/// `beliefs approve` / `reject`: the verdict, as the desk's person.
pub async fn decide(
    desk: &Desk,
    id: &str,
    verdict: &Verdict,
    out: &mut impl Write,
) -> Result<Belief, CliError> {
    let b = desk.stores.decide_belief(&desk.ctx, id, verdict).await?;
    let what = match (b.status, &b.supersedes) {
        (BeliefStatus::Active, Some(old)) => {
            format!("active: it shapes the role's prompts and decisions; {old} is retired")
        }
        (BeliefStatus::Active, None) => {
            "active: it shapes the role's prompts and decisions".to_owned()
        }
        _ => "rejected: it never reaches the role".to_owned(),
    };
    writeln!(out, "{} {what} (decided by {})", b.id, desk.ctx.principal())?;
    Ok(b)
}

/// `beliefs retire ID --reason`.
pub async fn retire(
    desk: &Desk,
    id: &str,
    reason: &str,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let b = desk.stores.beliefs.retire(&desk.ctx, id, reason).await?;
    writeln!(
        out,
        "{} retired: it no longer reaches the role (by {})",
        b.id,
        desk.ctx.principal()
    )?;
    Ok(())
}
