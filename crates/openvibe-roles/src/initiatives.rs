//! Initiatives worked and delegated (issue 64, part 1): a goal's
//! decomposition becomes work, not only text.
//!
//! ```text
//! decompose ─▶ initiative (owner, domain, due, action, status open)
//!   ├─ its domain is the role's own ─▶ event `initiative` in the role's loop
//!   │     decide (authority, evidence) → act: run its action → done | blocked
//!   └─ another role owns its domain ─▶ the same event, its action delegated
//!         through the space → delegated … the owner's answer → done | blocked
//! a proposal for a person → working (the approved run later: done | blocked)
//! ```
//!
//! The loop takes a role's open initiatives with each day's priorities
//! ([`CognitiveLoop::push_priorities`](crate::CognitiveLoop::push_priorities),
//! or [`CognitiveLoop::push_initiatives`](crate::CognitiveLoop::push_initiatives));
//! each becomes one event (its id names the goal's version and the
//! initiative: decided once in every process). Its status moves as the loop
//! works it ([`InitiativeUpdate`]), in the goal store, so the console, the
//! CLI and other processes see where it stands. An initiative owned by a
//! person (not the goal's role, and in no other role's domain) is theirs:
//! the loop leaves it alone.

use openvibe_protocols::{
    Action, DecisionEvent, Goal, Initiative, InitiativeStatus, InitiativeUpdate, Member,
    StoreError, truncate_chars,
};
use serde_json::{Value, json};

use crate::{Error, Role};

/// The kind of the events an initiative becomes in the loop.
pub const INITIATIVE_EVENT: &str = "initiative";

/// The key of an initiative event's data naming it (`{"goal_id", "id"}`).
pub const INITIATIVE_KEY: &str = "initiative";

/// The task a delegated initiative asks for when it names no action: the
/// owner's engine decides on it (usually a proposal for its people).
pub const WORK_INITIATIVE_TASK: &str = "work_initiative";

/// How `role` works `initiative`, when it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Assignment {
    /// The role works it itself.
    Own,
    /// The role asks the owner of this domain (through its space).
    Delegate(String),
    /// A person (or another role, by name) works it: not the loop's.
    Elsewhere,
}

/// How `role` works `initiative`: delegated when its domain is not one the
/// role owns; its own when its owner is the role (or none); else elsewhere.
pub fn assignment(role: &Role, initiative: &Initiative) -> Assignment {
    if let Some(domain) = &initiative.domain
        && !role.owned_domains().contains(domain)
    {
        return Assignment::Delegate(domain.clone());
    }
    match initiative.owner.as_deref() {
        None => Assignment::Own,
        Some(owner) if owner == role.role_id() => Assignment::Own,
        Some(_) => Assignment::Elsewhere,
    }
}

/// The id of the event initiative `initiative_id` of `goal` becomes: the
/// same in every process for one version of the goal.
pub fn initiative_event_id(goal: &Goal, initiative_id: &str) -> String {
    format!("initiative-{}-v{}-{initiative_id}", goal.id(), goal.version)
}

/// The event `initiative` of `goal` becomes in `role`'s loop, when the
/// loop works it (it is open and not a person's): kind
/// [`INITIATIVE_EVENT`], in its domain when the role's own (else the role's home domain), its
/// data naming it ([`INITIATIVE_KEY`]), its due date and key results; its
/// action the initiative's, or, for one another role owns, that action
/// delegated to the owner of its domain (its name the task;
/// [`WORK_INITIATIVE_TASK`] when it names none).
pub fn initiative_event(
    role: &Role,
    goal: &Goal,
    initiative: &Initiative,
) -> Option<DecisionEvent> {
    if initiative.status != InitiativeStatus::Open || initiative.id.is_empty() {
        return None;
    }
    let assignment = assignment(role, initiative);
    // Asking another role is the role's own decision, in its home domain
    // (it owns no say in the other's).
    let domain = match (&assignment, &initiative.domain) {
        (Assignment::Own, Some(domain)) => domain.clone(),
        _ => role.home_domain(),
    };
    let action = match &assignment {
        Assignment::Elsewhere => return None,
        Assignment::Own => initiative.action.clone(),
        Assignment::Delegate(to) => {
            let (task, mut input) = match &initiative.action {
                Some(a) => (a.action.clone(), a.input.clone()),
                None => (WORK_INITIATIVE_TASK.to_owned(), json!({})),
            };
            if let Value::Object(map) = &mut input {
                map.entry("summary")
                    .or_insert_with(|| Value::String(initiative.title.clone()));
            }
            Some(Action::delegate(task, to.clone(), input))
        }
    };
    let mut summary = format!("Initiative of `{}`: {}", goal.id(), initiative.title);
    if !initiative.description.is_empty() {
        summary.push_str(&format!(" ({})", initiative.description));
    }
    if let Assignment::Delegate(to) = &assignment {
        summary.push_str(&format!(" [for the owner of `{to}`]"));
    }
    let mut event = DecisionEvent::new(
        initiative_event_id(goal, &initiative.id),
        INITIATIVE_EVENT,
        domain,
    )
    .summary(truncate_chars(&summary, 1_000).to_owned())
    .data(json!({
        INITIATIVE_KEY: {"goal_id": goal.id(), "id": initiative.id},
        "due": initiative.due,
        "key_results": initiative.key_results,
    }));
    event.action = action;
    Some(event)
}

/// The events `role`'s open initiatives become in its loop
/// ([`initiative_event`]), goal by goal: only goals decomposed at their
/// current version count (stale initiatives wait for the new
/// decomposition).
pub async fn initiative_events(role: &Role) -> Result<Vec<DecisionEvent>, Error> {
    let mut events = Vec::new();
    for goal in role.goals()?.list().await? {
        if goal.is_decomposed() {
            events.extend(
                goal.initiatives
                    .iter()
                    .filter_map(|i| initiative_event(role, &goal, i)),
            );
        }
    }
    Ok(events)
}

/// The goal and initiative an event works, when it is an initiative's.
pub fn initiative_of(event: &DecisionEvent) -> Option<(String, String)> {
    let named = event.data.get(INITIATIVE_KEY)?;
    let text = |k: &str| named.get(k).and_then(Value::as_str).map(str::to_owned);
    Some((text("goal_id")?, text("id")?))
}

/// Where an initiative stands after a run of its action, from the run's
/// result as read ([`read_result`](crate::read_result): its setback
/// status and text) or its error: done, or blocked when the run failed or
/// its result was a setback (`{"status": "stalled"}`), with what it said.
pub fn run_update(
    action: &Action,
    result: Result<(Option<&str>, &str), &Error>,
) -> InitiativeUpdate {
    match result {
        Ok((None, text)) => InitiativeUpdate::new(
            InitiativeStatus::Done,
            note(&format!("ran `{}`: {text}", action.action)),
        ),
        Ok((Some(setback), text)) => InitiativeUpdate::new(
            InitiativeStatus::Blocked,
            note(&format!("ran `{}`, {setback}: {text}", action.action)),
        ),
        Err(e) => InitiativeUpdate::new(
            InitiativeStatus::Blocked,
            note(&format!("`{}` failed: {e}", action.action)),
        ),
    }
}

fn note(text: &str) -> String {
    truncate_chars(text, 500).to_owned()
}

/// The owner of `domain` among `members` (as a role id, or the principal
/// of a person), other than `role_id`.
pub fn domain_owner(members: &[Member], domain: &str, role_id: &str) -> Option<String> {
    let me = openvibe_protocols::Principal::agent(role_id);
    members
        .iter()
        .filter(|m| !me.is_owner(&m.principal))
        .find(|m| m.domains.iter().any(|d| d == domain))
        .map(|m| {
            m.principal
                .strip_prefix("agent:")
                .unwrap_or(&m.principal)
                .to_owned()
        })
}

impl Role {
    /// Move the initiative `event` works (when it works one) as `update`
    /// says. One a person changed meanwhile (done or dropped) stays as
    /// they left it: the refusal is logged, not an error of the loop.
    pub(crate) async fn note_initiative(
        &self,
        event: &DecisionEvent,
        update: InitiativeUpdate,
    ) -> Result<(), Error> {
        let (Some((goal_id, id)), Some(store)) = (initiative_of(event), self.goal_store()) else {
            return Ok(());
        };
        match store
            .update_initiative(&self.proposal_context(), &goal_id, &id, update.clone())
            .await
        {
            Ok(_) => {
                tracing::info!(role = %self.role_id(), goal = %goal_id, initiative = %id, status = update.status.as_str(), "initiative moved");
                Ok(())
            }
            Err(e @ (StoreError::Conflict { .. } | StoreError::NotFound { .. })) => {
                tracing::warn!(role = %self.role_id(), goal = %goal_id, initiative = %id, error = %e, "initiative left as it is");
                Ok(())
            }
            Err(source) => Err(Error::Goal {
                id: goal_id,
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role() -> Role {
        Role::new("cro").domains(["revenue"])
    }

    fn goal() -> Goal {
        let mut goal = Goal::new(openvibe_protocols::Objective {
            id: "pipeline".into(),
            owner: "cro".into(),
            title: "Pipeline".into(),
            due: chrono::NaiveDate::from_ymd_opt(2026, 12, 31).unwrap_or_default(),
            key_results: Vec::new(),
        });
        goal.version = 2;
        goal
    }

    #[test]
    fn who_works_an_initiative() {
        let role = role();
        let own = Initiative::new("a", &[]);
        assert_eq!(assignment(&role, &own), Assignment::Own);
        assert_eq!(
            assignment(&role, &own.clone().domain("revenue").owner("cro")),
            Assignment::Own
        );
        assert_eq!(
            assignment(&role, &own.clone().domain("marketing")),
            Assignment::Delegate("marketing".into())
        );
        assert_eq!(
            assignment(&role, &own.clone().owner("user:ann")),
            Assignment::Elsewhere
        );
    }

    #[test]
    fn a_delegated_initiative_asks_in_the_roles_own_domain() {
        let role = role();
        let i = Initiative::new("Case studies", &["value"])
            .id("i2")
            .domain("marketing");
        let event = initiative_event(&role, &goal(), &i).unwrap_or_else(|| unreachable!());
        assert_eq!(event.id, "initiative-pipeline-v2-i2");
        assert_eq!(event.domain, "revenue");
        let action = event.action.clone().unwrap_or_else(|| unreachable!());
        assert_eq!(action.action, WORK_INITIATIVE_TASK);
        assert_eq!(
            action.target,
            openvibe_protocols::ActionTarget::Delegate {
                domain: "marketing".into()
            }
        );
        assert_eq!(action.input["summary"], "Case studies");
        assert_eq!(
            initiative_of(&event),
            Some(("pipeline".to_owned(), "i2".to_owned()))
        );
        // Only open ones, with an id, become events.
        let mut done = i.clone();
        done.status = InitiativeStatus::Done;
        assert!(initiative_event(&role, &goal(), &done).is_none());
        assert!(initiative_event(&role, &goal(), &i.clone().id("")).is_none());
    }

    #[test]
    fn a_run_marks_it_done_or_blocked() {
        let action = Action::tool("write", "write", json!({}));
        let read = |output: Value| crate::read_result(&output);
        let (setback, text) = read(json!("written"));
        let done = run_update(&action, Ok((setback.as_deref(), &text)));
        assert_eq!(done.status, InitiativeStatus::Done);
        assert_eq!(done.note.as_deref(), Some("ran `write`: written"));
        let (setback, text) = read(json!(
            r#"{"status": "stalled", "summary": "in procurement"}"#
        ));
        let stalled = run_update(&action, Ok((setback.as_deref(), &text)));
        assert_eq!(stalled.status, InitiativeStatus::Blocked);
        assert!(
            stalled
                .note
                .as_deref()
                .unwrap_or_default()
                .contains("stalled"),
            "{stalled:?}"
        );
        let failed = run_update(&action, Err(&Error::NoSpace { role: "cro".into() }));
        assert_eq!(failed.status, InitiativeStatus::Blocked);
    }
}
