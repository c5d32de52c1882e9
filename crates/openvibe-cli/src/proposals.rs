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

use clap::Subcommand;
use openvibe::memory::Decisions;
use openvibe::protocols::{
    Action, CallerContext, Clearance, OrAny, Principal, Proposal, ProposalQuery, ProposalStatus,
    Stores, Verdict,
};
use openvibe::service::Access;

use crate::CliError;
use crate::args::{DeskArgs, filter};

/// `openvibe proposals`: what roles ask a person to decide.
#[derive(Subcommand)]
pub enum ProposalsCommand {
    /// The proposals you may read, newest first (pending ones by default).
    #[command(after_help = "Examples:
  openvibe proposals ls --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe proposals ls --database-url $DATABASE_URL --status any --role cro
  openvibe proposals ls --database-url $DATABASE_URL --governance governance.yaml --api-key $KEY")]
    Ls {
        /// Where the proposals are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Only proposals with this status.
        #[arg(long, default_value = "pending", value_parser = filter::<ProposalStatus>())]
        status: OrAny<ProposalStatus>,
        /// Only this role's.
        #[arg(long)]
        role: Option<String>,
        /// Only this domain's.
        #[arg(long)]
        domain: Option<String>,
        /// Only those assigned to this person (`user:ann`).
        #[arg(long)]
        assignee: Option<String>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Continue after a page (the cursor `ls` printed).
        #[arg(long)]
        after: Option<String>,
    },
    /// One proposal: what it asks, the decision's four steps and evidence,
    /// and where it stands.
    Show {
        /// The proposal's id.
        id: String,
        /// Where the proposals are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a pending proposal: the role's runtime then runs its action,
    /// once. Needs the `approve` right (people, by default); never your own.
    #[command(
        after_help = "An escalation has no action until you name one: --action NAME --tool TOOL --input JSON.

Examples:
  openvibe proposals approve dec-fnv1a64:4935d77f32e1 --service http://127.0.0.1:8077 --reason \"within budget\""
    )]
    Approve {
        /// The proposal's id.
        id: String,
        /// Where the proposals are, and who decides.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (kept in the proposal and the audit trail).
        #[arg(long, default_value = "")]
        reason: String,
        /// For an escalation: the action to take (its name in the role's authority).
        #[arg(long, requires = "tool")]
        action: Option<String>,
        /// For an escalation: the tool that takes it.
        #[arg(long, requires = "action")]
        tool: Option<String>,
        /// For an escalation: the tool's input (a JSON object).
        #[arg(long, requires = "action", default_value = "{}")]
        input: String,
        /// For a belief's proposal whose belief refines an active one:
        /// retire that one, as the approved belief supersedes it.
        #[arg(long)]
        supersede: bool,
        /// For a belief's proposal: approve the belief as a constraint (an
        /// action it bears on is then proposed, never taken alone).
        #[arg(long)]
        constraint: bool,
    },
    /// Reject a pending proposal, with a reason: its action never runs.
    Reject {
        /// The proposal's id.
        id: String,
        /// Where the proposals are, and who decides.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
}

/// Run a `proposals` command, printing to `out`.
pub async fn run(command: ProposalsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        ProposalsCommand::Ls {
            desk,
            status,
            role,
            domain,
            assignee,
            limit,
            after,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let query = ProposalQuery {
                status: status.value(),
                role_id: role,
                domain,
                assignee,
                cursor: after,
                limit,
                ..ProposalQuery::default()
            };
            ls(&desk, &query, out).await
        }
        ProposalsCommand::Show { id, desk, json } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            show(&desk, &id, json, out).await
        }
        ProposalsCommand::Approve {
            id,
            desk,
            reason,
            action,
            tool,
            input,
            supersede,
            constraint,
        } => {
            let action = match (action, tool) {
                (Some(action), Some(tool)) => {
                    let input: serde_json::Value = serde_json::from_str(&input)
                        .map_err(|e| CliError::Usage(format!("--input is not JSON: {e}")))?;
                    Some(Action::tool(action, tool, input))
                }
                _ => None,
            };
            let desk = connect(&Connect::from_args(&desk)).await?;
            let verdict = Verdict {
                approve: true,
                reason,
                action,
                supersede,
                constraint,
            };
            decide(&desk, &id, &verdict, out).await.map(|_| ())
        }
        ProposalsCommand::Reject { id, desk, reason } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            decide(&desk, &id, &Verdict::reject(reason), out)
                .await
                .map(|_| ())
        }
    }
}

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

impl Connect {
    /// What the command line's `args` name.
    pub fn from_args(args: &DeskArgs) -> Self {
        Self {
            database_url: args.database_url.clone(),
            service: args.service.clone(),
            governance: args.governance.clone(),
            api_key: args.api_key.clone(),
            tenant: args.tenant.clone(),
        }
    }
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
                if !e.why.is_empty() {
                    s.push_str(&format!("      chosen: {}\n", e.why));
                }
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
