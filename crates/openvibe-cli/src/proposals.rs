//! `openvibe proposals ls | show | approve | reject`: what roles ask a
//! person to decide, in PostgreSQL or through the memory service.
//!
//! Who decides comes from the API key: through the service (`--service`,
//! the key's identity as the service answers `GET /v1/whoami`), or
//! against the database with the governance file (`--governance`, the key
//! resolved there). Without a key (development mode: a database with no
//! governance file, or a service without one) it is the local user,
//! `user:$USER`, who may read every proposal.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use openvibe::protocols::{
    CallerContext, Clearance, Principal, Proposal, ProposalQuery, ProposalStatus, Stores, Verdict,
};
use openvibe::service::Access;

use crate::CliError;

/// Where the proposals are and who asks.
#[derive(Debug, Clone, Default)]
pub struct Connect {
    /// A PostgreSQL database.
    pub database_url: Option<String>,
    /// The memory service's URL.
    pub service: Option<String>,
    /// The governance file (with a database).
    pub governance: Option<PathBuf>,
    /// The API key.
    pub api_key: Option<String>,
    /// The tenant (development mode).
    pub tenant: String,
}

/// The proposal stores, and the person acting.
pub struct Desk {
    /// The stores (`proposals` is the one used).
    pub stores: Stores,
    /// Who acts.
    pub ctx: CallerContext,
}

/// A person acting in code the operator runs (no key): user `name` of
/// `tenant`, reading everything.
pub fn person(tenant: &str, name: impl Into<String>) -> CallerContext {
    CallerContext::new(tenant, Principal::user(name)).with_clearance(Clearance::unrestricted())
}

/// The development-mode person: the local user ([`person`] `$USER`).
pub fn local_user(tenant: &str) -> CallerContext {
    let login = std::env::var("USER")
        .ok()
        .filter(|u| {
            !u.is_empty()
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
        .unwrap_or_else(|| "anonymous".to_owned());
    person(tenant, login)
}

/// Open what `c` names.
pub async fn connect(c: &Connect) -> Result<Desk, CliError> {
    match (&c.database_url, &c.service) {
        (Some(url), None) => {
            let stores = openvibe::postgres::PgStores::connect(url).await?.stores();
            let ctx = match (&c.governance, &c.api_key) {
                (Some(path), Some(key)) => {
                    let gov = crate::serve::read_governance(path)?;
                    let (ctx, _) = Access::Governed(Arc::new(gov))
                        .identify(Some(&format!("Bearer {key}")), None)
                        .map_err(|f| CliError::Usage(f.error_body().error.message.clone()))?;
                    ctx
                }
                (Some(_), None) => {
                    return Err(CliError::Usage(
                        "with --governance, say who you are: --api-key KEY (or OPENVIBE_API_KEY)"
                            .into(),
                    ));
                }
                (None, _) => local_user(&c.tenant),
            };
            Ok(Desk { stores, ctx })
        }
        (None, Some(url)) => {
            let remote = openvibe::remote::RemoteMemory::connect(url, c.api_key.clone())
                .await
                .map_err(|e| CliError::Usage(format!("memory service at {url}: {e}")))?;
            let ctx = match &c.api_key {
                Some(_) => remote.whoami().await?,
                None => local_user(&c.tenant),
            };
            Ok(Desk {
                stores: remote.stores(),
                ctx,
            })
        }
        _ => Err(CliError::Usage(
            "say where the memory is: --database-url URL (or OPENVIBE_DATABASE_URL) or --service URL (or OPENVIBE_SERVICE_URL)"
                .into(),
        )),
    }
}

/// `proposals ls`: one line per proposal, newest first.
pub async fn ls(desk: &Desk, query: &ProposalQuery, out: &mut impl Write) -> Result<(), CliError> {
    let page = desk.stores.proposals.list(&desk.ctx, query).await?;
    if page.items.is_empty() {
        writeln!(out, "no proposals")?;
        return Ok(());
    }
    writeln!(
        out,
        "{:<30} {:<9} {:<10} {:<10} {:<16} SUMMARY",
        "ID", "STATUS", "ROLE", "OUTCOME", "ACTION"
    )?;
    for p in &page.items {
        writeln!(
            out,
            "{:<30} {:<9} {:<10} {:<10} {:<16} {}",
            p.id,
            p.status,
            p.role_id,
            p.outcome,
            p.action.as_ref().map_or("-", |a| a.action.as_str()),
            one_line(&p.summary, 60)
        )?;
    }
    if let Some(cursor) = page.next_cursor {
        writeln!(out, "(more: --after {cursor})")?;
    }
    Ok(())
}

fn one_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max - 1).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// A proposal for a person: what, why (the decision's four steps and its
/// evidence), and where it stands.
pub fn describe(p: &Proposal) -> String {
    let mut s = format!(
        "proposal {}\n  status:    {}\n  role:      {}\n  domain:    {}\n  outcome:   {}\n  summary:   {}\n",
        p.id,
        p.status,
        p.role_id,
        if p.domain.is_empty() { "-" } else { &p.domain },
        p.outcome,
        p.summary
    );
    match &p.action {
        Some(a) => s.push_str(&format!("  action:    {} with {}\n", a.action, a.input)),
        None => {
            s.push_str("  action:    none yet (an escalation: the person approving names one)\n")
        }
    }
    if let Some(assignee) = &p.assignee {
        s.push_str(&format!("  assignee:  {assignee}\n"));
    }
    if let Some(deadline) = p.deadline {
        s.push_str(&format!("  deadline:  {}\n", deadline.to_rfc3339()));
    }
    s.push_str(&format!(
        "  proposed:  {} by {}\n",
        p.meta.created_at.to_rfc3339(),
        p.meta.owner
    ));
    if let Some(decision) = &p.decision {
        s.push_str("  why:\n");
        for line in decision.explain() {
            s.push_str(&format!("    {line}\n"));
        }
        if !decision.confidence.evidence.is_empty() {
            s.push_str("  evidence:\n");
            for e in &decision.confidence.evidence {
                s.push_str(&format!(
                    "    {} {} (relevance {:.2}, value {:.2}): {}\n",
                    match e.kind {
                        openvibe::protocols::EvidenceKind::Belief => "belief",
                        openvibe::protocols::EvidenceKind::Insight => "insight",
                        openvibe::protocols::EvidenceKind::Episode => "episode",
                    },
                    e.id,
                    e.relevance,
                    e.value,
                    e.summary
                ));
            }
        }
    }
    if let (Some(by), Some(at)) = (&p.decided_by, p.decided_at) {
        s.push_str(&format!(
            "  decided:   {} by {by}{}\n",
            at.to_rfc3339(),
            p.reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ));
    }
    if let Some(by) = &p.claimed_by {
        s.push_str(&format!("  run by:    {by}\n"));
    }
    if let Some(result) = &p.result {
        s.push_str(&format!("  result:    {result}\n"));
    }
    if let Some(error) = &p.error {
        s.push_str(&format!("  error:     {error}\n"));
    }
    s
}

/// `proposals show ID`.
pub async fn show(desk: &Desk, id: &str, json: bool, out: &mut impl Write) -> Result<(), CliError> {
    let found = desk.stores.proposals.get(&desk.ctx, id).await?;
    let Some(p) = found else {
        return Err(openvibe::protocols::StoreError::NotFound {
            kind: openvibe::protocols::PROPOSAL_KIND,
            id: id.to_owned(),
        }
        .into());
    };
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&p)?)?;
    } else {
        write!(out, "{}", describe(&p))?;
    }
    Ok(())
}

/// `proposals approve` / `reject`: the verdict, as the desk's person.
pub async fn decide(
    desk: &Desk,
    id: &str,
    verdict: &Verdict,
    out: &mut impl Write,
) -> Result<Proposal, CliError> {
    let p = desk.stores.decide_proposal(&desk.ctx, id, verdict).await?;
    let what = if p.status == ProposalStatus::Approved {
        "approved: the role's runtime runs its action once"
    } else {
        "rejected: its action never runs"
    };
    writeln!(out, "{} {what} (decided by {})", p.id, desk.ctx.principal())?;
    Ok(p)
}
