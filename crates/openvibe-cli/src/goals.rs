//! `openvibe goals status | report | initiative`: the goals people set the
//! roles, where each key result stands (a table with progress bars), the
//! initiatives and where each stands, and today's priorities; a person's
//! word on an initiative (drop, reopen); and a metric reported from outside (a CRM's "closed $40k"),
//! in PostgreSQL or through the memory service. Who asks comes from the
//! API key, as for `openvibe proposals` ([`crate::proposals::connect`]).

use std::io::Write;

use chrono::NaiveDate;
use clap::Subcommand;
use openvibe::protocols::{
    GoalProgress, GoalQuery, Initiative, InitiativeStatus, InitiativeUpdate, MetricMode,
    MetricReport, Priorities,
};

use crate::CliError;
use crate::args::DeskArgs;
use crate::proposals::{Connect, Desk, connect};

/// `openvibe goals`: the goals people set the roles, and metric reports.
#[derive(Subcommand)]
pub enum GoalsCommand {
    /// Where every goal stands: each key result's value against its target
    /// as a progress bar, the initiatives, and each role's priorities.
    #[command(after_help = "Examples:
  openvibe goals status --service http://127.0.0.1:8077          (OPENVIBE_API_KEY says who you are)
  openvibe goals status --database-url $DATABASE_URL --role cro
  openvibe goals status --database-url $DATABASE_URL --json")]
    Status {
        /// Where the goals are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Only this role's goals.
        #[arg(long)]
        role: Option<String>,
        /// The priorities of this day (YYYY-MM-DD; today by default).
        #[arg(long)]
        day: Option<NaiveDate>,
        /// Print it as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Report a metric of a role from outside (a CRM's \"closed $40k\"): it
    /// moves the key results measuring it. Needs the write right where the
    /// report is filed; the same --id twice counts once.
    #[command(after_help = "Examples:
  openvibe goals report cro pipeline_usd 40000 --note \"closed Acme\" --id crm-deal-981 --service http://127.0.0.1:8077
  openvibe goals report cro qualified_leads 12 --set --database-url $DATABASE_URL")]
    Report {
        /// The role whose metric it is.
        role: String,
        /// The metric (a key result's `metric`).
        metric: String,
        /// The amount (added; with --set, the new value).
        #[arg(allow_negative_numbers = true)]
        value: f64,
        /// Where the goals are, and who reports.
        #[command(flatten)]
        desk: DeskArgs,
        /// The metric is now VALUE (instead of adding it).
        #[arg(long)]
        set: bool,
        /// What happened.
        #[arg(long, default_value = "")]
        note: String,
        /// An id for the report: sending it again counts once.
        #[arg(long)]
        id: Option<String>,
        /// The namespace to file it in (your home namespace by default).
        #[arg(long)]
        namespace: Option<String>,
    },
    /// Move an initiative of a goal: drop it, reopen it, mark it done or
    /// blocked, with a note. Roles move their own as they work them; this
    /// is a person's word. Needs the right to change the goal.
    #[command(after_help = "Examples:
  openvibe goals initiative pipeline-q4 i2 dropped --note \"covered by the partner deal\" --service http://127.0.0.1:8077
  openvibe goals initiative pipeline-q4 i2 open --database-url $DATABASE_URL      (reopen it: the role works it again)")]
    Initiative {
        /// The goal (its objective's id).
        goal: String,
        /// The initiative's id in the goal (`openvibe goals status` shows them).
        initiative: String,
        /// Its new status: open, working, delegated, done, blocked or dropped.
        status: InitiativeStatusArg,
        /// Where the goals are, and who asks.
        #[command(flatten)]
        desk: DeskArgs,
        /// Why, in a few words.
        #[arg(long)]
        note: Option<String>,
    },
}

/// An initiative's status, as the command line names it.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum InitiativeStatusArg {
    /// Not worked yet (reopens a done or dropped one).
    Open,
    /// Being worked.
    Working,
    /// Asked of another role.
    Delegated,
    /// Worked to its end.
    Done,
    /// Stuck: someone has to look.
    Blocked,
    /// Not worth doing any more.
    Dropped,
}

impl From<InitiativeStatusArg> for InitiativeStatus {
    fn from(arg: InitiativeStatusArg) -> Self {
        match arg {
            InitiativeStatusArg::Open => Self::Open,
            InitiativeStatusArg::Working => Self::Working,
            InitiativeStatusArg::Delegated => Self::Delegated,
            InitiativeStatusArg::Done => Self::Done,
            InitiativeStatusArg::Blocked => Self::Blocked,
            InitiativeStatusArg::Dropped => Self::Dropped,
        }
    }
}

/// Run a `goals` command, printing to `out`.
pub async fn run(command: GoalsCommand, out: &mut impl Write) -> Result<(), CliError> {
    match command {
        GoalsCommand::Status {
            desk,
            role,
            day,
            json,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let day = day.unwrap_or_else(|| chrono::Utc::now().date_naive());
            status(&desk, role.as_deref(), day, json, out).await
        }
        GoalsCommand::Report {
            role,
            metric,
            value,
            desk,
            set,
            note,
            id,
            namespace,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let mut filed = MetricReport::add(role, metric, value)
                .note(note)
                .namespace(namespace.unwrap_or_default());
            if set {
                filed.mode = MetricMode::Set;
            }
            if let Some(id) = id {
                filed = filed.id(id);
            }
            report(&desk, filed, out).await
        }
        GoalsCommand::Initiative {
            goal,
            initiative,
            status,
            desk,
            note,
        } => {
            let desk = connect(&Connect::from_args(&desk)).await?;
            let update = InitiativeUpdate {
                status: status.into(),
                note,
            };
            let moved = desk
                .stores
                .goals
                .update_initiative(&desk.ctx, &goal, &initiative, update)
                .await?;
            if let Some(i) = moved.initiatives.iter().find(|i| i.id == initiative) {
                writeln!(out, "{goal}: {}", initiative_line(i))?;
            }
            Ok(())
        }
    }
}

/// One initiative, for people: `[i2] Title: delegated (owner cmo, due
/// 2026-12-10): the latest note`.
pub fn initiative_line(i: &Initiative) -> String {
    let mut about = vec![];
    if let Some(owner) = &i.owner {
        about.push(format!("owner {owner}"));
    }
    if let Some(domain) = &i.domain {
        about.push(format!("domain {domain}"));
    }
    if let Some(due) = i.due {
        about.push(format!("due {due}"));
    }
    let mut line = format!("[{}] {}: {}", i.id, i.title, i.status.as_str());
    if !about.is_empty() {
        line.push_str(&format!(" ({})", about.join(", ")));
    }
    if let Some(note) = &i.note {
        line.push_str(&format!(": {note}"));
    }
    line
}

/// The width of a progress bar, in cells.
pub const BAR_CELLS: usize = 20;

/// `progress` (0 to 1) as a bar of [`BAR_CELLS`] cells and a percentage:
/// `[██████░░░░░░░░░░░░░░]  30%`.
pub fn bar(progress: f64) -> String {
    let p = if progress.is_finite() {
        progress.clamp(0.0, 1.0)
    } else {
        0.0
    };
    // Rounded down, so a bar is full only when the key result is done.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let full = ((p * BAR_CELLS as f64).floor() as usize).min(BAR_CELLS);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let percent = (p * 100.0).floor() as u32;
    format!(
        "[{}{}] {percent:>3}%",
        "█".repeat(full),
        "░".repeat(BAR_CELLS - full)
    )
}

/// A number for people: thousands separated, at most two decimals.
pub fn amount(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string();
    }
    let negative = value < 0.0;
    let rounded = (value.abs() * 100.0).round() / 100.0;
    let whole = rounded.trunc();
    let cents = ((rounded - whole) * 100.0).round();
    let digits = format!("{whole:.0}");
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if negative { "-" } else { "" };
    if cents == 0.0 {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{cents:02.0}")
    }
}

/// The table of `goals` (and `priorities`, per role) `goals status` prints.
pub fn status_table(goals: &[GoalProgress], priorities: &[Priorities]) -> String {
    if goals.is_empty() {
        return "no goals (put a goals.yaml beside roles.yaml and start the roles)\n".to_owned();
    }
    let rows: Vec<[String; 5]> = goals
        .iter()
        .flat_map(|g| {
            let o = &g.goal.objective;
            g.key_results.iter().enumerate().map(move |(i, k)| {
                let kr = &k.key_result;
                let unit = if kr.unit.is_empty() {
                    String::new()
                } else {
                    format!(" {}", kr.unit)
                };
                [
                    if i == 0 { o.id.clone() } else { String::new() },
                    if i == 0 {
                        o.owner.clone()
                    } else {
                        String::new()
                    },
                    kr.id.clone(),
                    format!("{} / {}{unit}", amount(k.current), amount(kr.target)),
                    bar(k.progress),
                ]
            })
        })
        .collect();
    let header = ["GOAL", "ROLE", "KEY RESULT", "NOW / TARGET", "PROGRESS"];
    let width = |c: usize| {
        rows.iter()
            .map(|r| r[c].chars().count())
            .chain([header[c].len()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..4).map(width).collect();
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (c, cell) in cells.iter().enumerate().take(4) {
            s.push_str(cell);
            s.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
        }
        s.push_str(cells[4]);
        s.trim_end().to_owned()
    };
    let mut out = String::new();
    out.push_str(&line(header));
    out.push('\n');
    for r in &rows {
        out.push_str(&line([&r[0], &r[1], &r[2], &r[3], &r[4]]));
        out.push('\n');
    }
    for g in goals {
        let o = &g.goal.objective;
        out.push_str(&format!(
            "\n{} ({}, due {}, version {}): {}\n",
            o.id,
            o.title,
            o.due,
            g.goal.version,
            bar(g.progress)
        ));
        if g.goal.initiatives.is_empty() {
            out.push_str("  not decomposed yet\n");
        } else {
            let stale = if g.goal.is_decomposed() {
                ""
            } else {
                " (of an earlier version)"
            };
            out.push_str(&format!("  initiatives{stale}:\n"));
            for i in &g.goal.initiatives {
                out.push_str(&format!("  - {}\n", initiative_line(i)));
            }
        }
    }
    for p in priorities {
        out.push_str(&format!("\npriorities of {} ({}):\n", p.role_id, p.day));
        for (i, item) in p.items.iter().enumerate() {
            out.push_str(&format!("  {}. {}", i + 1, item.title));
            if !item.reason.is_empty() {
                out.push_str(&format!(": {}", item.reason));
            }
            out.push('\n');
        }
    }
    out
}

/// `goals status`: every goal the caller may read (of `role`, when given),
/// where each key result stands, and each role's latest priorities on or
/// before `day`.
pub async fn status(
    desk: &Desk,
    role: Option<&str>,
    day: NaiveDate,
    json: bool,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let goals = &desk.stores.goals;
    let mut query = GoalQuery::new();
    query.role_id = role.map(str::to_owned);
    let mut progress = Vec::new();
    loop {
        let page = goals.list(&desk.ctx, &query).await?;
        for goal in &page.items {
            if let Some(p) = goals.progress(&desk.ctx, goal.id()).await? {
                progress.push(p);
            }
        }
        match page.next_cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    let mut roles: Vec<&str> = progress.iter().map(|g| g.goal.role_id()).collect();
    roles.sort_unstable();
    roles.dedup();
    let mut priorities = Vec::new();
    for r in roles {
        if let Some(p) = goals.priorities(&desk.ctx, r, day).await? {
            priorities.push(p);
        }
    }
    if json {
        let doc = serde_json::json!({ "goals": progress, "priorities": priorities });
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).map_err(|e| CliError::Usage(e.to_string()))?
        )?;
    } else {
        write!(out, "{}", status_table(&progress, &priorities))?;
    }
    Ok(())
}

/// `goals report`: report a metric as the caller; prints where it stands.
pub async fn report(
    desk: &Desk,
    report: MetricReport,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let done = desk.stores.goals.report(&desk.ctx, report).await?;
    writeln!(
        out,
        "reported {} {} of {} (report {}, #{} of the metric): now {}",
        done.mode.as_str(),
        amount(done.value),
        done.metric,
        done.id,
        done.seq,
        amount(done.total)
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_amounts_read_well() {
        assert_eq!(bar(0.0), format!("[{}]   0%", "░".repeat(20)));
        assert_eq!(
            bar(0.53),
            format!("[{}{}]  53%", "█".repeat(10), "░".repeat(10))
        );
        assert_eq!(bar(1.0), format!("[{}] 100%", "█".repeat(20)));
        assert_eq!(bar(0.999), format!("[{}{}]  99%", "█".repeat(19), "░"));
        assert_eq!(bar(f64::NAN), bar(0.0));
        assert_eq!(amount(2_000_000.0), "2,000,000");
        assert_eq!(amount(1_234.5), "1,234.50");
        assert_eq!(amount(-40_000.0), "-40,000");
        assert_eq!(amount(7.0), "7");
    }
}
