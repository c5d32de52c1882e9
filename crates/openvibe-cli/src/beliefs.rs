//! `openvibe beliefs ls | show | approve | reject | retire`: the beliefs
//! (L4) roles propose and people approve, in PostgreSQL or through the
//! memory service. Who decides comes from the API key, as for
//! `openvibe proposals` ([`crate::proposals::connect`]).

use std::io::Write;

use clap::Subcommand;
use openvibe::memory::Decisions;
use openvibe::protocols::{
    BELIEF_KIND, Belief, BeliefQuery, BeliefStatus, OrAny, StoreError, Verdict,
};

use crate::CliError;
use crate::args::{DeskArgs, filter};
use crate::proposals::{Connect, Desk, connect};

/// `openvibe beliefs`: the beliefs (L4) roles propose and people approve.
#[derive(Subcommand)]
pub enum BeliefsCommand {
    /// The beliefs you may read, newest first (proposed ones by default).
    #[command(after_help = "Examples:
  openvibe beliefs ls --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe beliefs ls --database-url $DATABASE_URL --status active --role cro")]
    Ls {
        /// Where the beliefs are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Only beliefs with this status.
        #[arg(long, default_value = "proposed", value_parser = filter::<BeliefStatus>())]
        status: OrAny<BeliefStatus>,
        /// Only this role's.
        #[arg(long)]
        role: Option<String>,
        /// Only this domain's.
        #[arg(long)]
        domain: Option<String>,
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        /// Continue after a page (the cursor `ls` printed).
        #[arg(long)]
        after: Option<String>,
    },
    /// One belief: what it holds, the insights it came from, where it stands.
    Show {
        /// The belief's id.
        id: String,
        /// Where the beliefs are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve a proposed belief: it then leads the role's prompts about its
    /// domain and weighs in its decisions (one it supersedes is retired).
    /// Needs the `approve` right (people, by default); never your own.
    #[command(
        after_help = "A belief that refines an active one (`beliefs show` names it) keeps
both active when approved; --supersede retires the refined one instead.
--constraint makes the role propose, never take alone, any action the belief
bears on (its decisions name it)."
    )]
    Approve {
        /// The belief's id.
        id: String,
        /// Where the beliefs are, and who decides.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (kept in the belief and the audit trail).
        #[arg(long, default_value = "")]
        reason: String,
        /// For a belief that refines an active one: retire that one, as
        /// this belief supersedes it.
        #[arg(long)]
        supersede: bool,
        /// Approve it as a constraint: an action it bears on is then
        /// proposed to a person, never taken by the role alone.
        #[arg(long)]
        constraint: bool,
    },
    /// Reject a proposed belief, with a reason: it never reaches the role.
    Reject {
        /// The belief's id.
        id: String,
        /// Where the beliefs are, and who decides.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
    /// Retire an active belief, with a reason: it no longer reaches the role.
    Retire {
        /// The belief's id.
        id: String,
        /// Where the beliefs are, and who retires it.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why (required).
        #[arg(long)]
        reason: String,
    },
}

/// Run a `beliefs` command, printing to `out`.
pub async fn run(command: BeliefsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        BeliefsCommand::Ls {
            desk,
            status,
            role,
            domain,
            limit,
            after,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let query = BeliefQuery {
                status: status.value(),
                role_id: role,
                domain,
                cursor: after,
                limit,
                ..BeliefQuery::default()
            };
            ls(&desk, &query, out).await
        }
        BeliefsCommand::Show { id, desk, json } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            show(&desk, &id, json, out).await
        }
        BeliefsCommand::Approve {
            id,
            desk,
            reason,
            supersede,
            constraint,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let verdict = Verdict {
                supersede,
                constraint,
                ..Verdict::approve(reason)
            };
            decide(&desk, &id, &verdict, out).await.map(|_| ())
        }
        BeliefsCommand::Reject { id, desk, reason } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            decide(&desk, &id, &Verdict::reject(reason), out)
                .await
                .map(|_| ())
        }
        BeliefsCommand::Retire { id, desk, reason } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            retire(&desk, &id, &reason, out).await
        }
    }
}

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
    if let Some(old) = &b.refines {
        s.push_str(&format!(
            "  refines: {old} (approve keeps both; approve --supersede retires it)\n"
        ));
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
        (BeliefStatus::Active, None) => match &b.refines {
            Some(old) => {
                format!(
                    "active: it shapes the role's prompts and decisions beside {old}, which it refines"
                )
            }
            None => "active: it shapes the role's prompts and decisions".to_owned(),
        },
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
