//! Roles from a configuration directory (the source design's
//! `RoleRuntime(config_path=...)`): who the roles are lives in files, what
//! their operators' nodes do lives in code.
//!
//! ```text
//! config/
//!   roles.yaml        the roles: id, soul, operators, authority, clearance
//!   souls/cro.md      a soul (paths are relative to the directory)
//!   operators.yaml    the operators' prompts, models, workflows and triggers
//!                     (an `OperatorRuntime` file; its workflows are built by
//!                     the factories the code registers)
//! ```
//!
//! ```yaml
//! roles:
//!   - id: cro
//!     soul: souls/cro.md
//!     operators: [revenue_ops, content_engine]
//!     authority: { autonomous: [qualify_lead], forbidden: [sign_contracts] }
//!     clearance: { revenue: confidential, customer: internal }
//!     domains: [revenue, customer]
//!     impact_rules:
//!       rules:
//!         - { when: 'amount > 10000', impact: high }
//!         - { when: 'customer.tier == "A"', impact: high }
//!       default: low
//!     decision_matrix:                  # optional: the default's cells otherwise
//!       outcomes: { high: { high: escalate } }
//!     escalate_to: user:ann             # optional: who its escalations are assigned to
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openvibe_memory::ClearanceProfile;
use openvibe_operators::OperatorRuntime;
use openvibe_operators::config::parse_yaml;
use openvibe_protocols::{Classification, DecisionMatrix};
use serde::Deserialize;

use crate::{AuthorityConfig, Error, ImpactRules, Role, Soul};

/// The roles file of a configuration directory.
pub const ROLES_FILE: &str = "roles.yaml";
/// The operators file of a configuration directory.
pub const OPERATORS_FILE: &str = "operators.yaml";

/// A roles file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolesFile {
    /// The roles.
    #[serde(default)]
    pub roles: Vec<RoleDef>,
}

/// One role as a file declares it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleDef {
    /// Role id.
    pub id: String,
    /// Soul: inline text, or a `.md`/`.yaml` file relative to the file
    /// declaring the role.
    #[serde(default)]
    pub soul: Option<String>,
    /// The ids of the operators the role owns.
    #[serde(default)]
    pub operators: Vec<String>,
    /// Authority.
    #[serde(default)]
    pub authority: Option<AuthorityConfig>,
    /// Highest readable classification per domain. A role with a
    /// clearance gets agent memory (episodes, insights, the raw log).
    #[serde(default)]
    pub clearance: Option<BTreeMap<String, Classification>>,
    /// The domains the role owns: events of other domains are escalated.
    #[serde(default)]
    pub domains: Vec<String>,
    /// How much its actions matter (conditions are checked when the file
    /// is read, with their line, column and the column inside the rule).
    #[serde(default)]
    pub impact_rules: Option<ImpactRules>,
    /// Its confidence × impact matrix, over the default.
    #[serde(default)]
    pub decision_matrix: Option<DecisionMatrix>,
    /// The person its escalations are assigned to, as an owner key
    /// (`user:ann`).
    #[serde(default, deserialize_with = "owner_key")]
    pub escalate_to: Option<String>,
}

/// An owner key (`kind:id`, kind one of agent, user, service).
fn owner_key<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let key = <Option<String> as serde::Deserialize>::deserialize(d)?;
    if let Some(key) = &key {
        let ok = key.split_once(':').is_some_and(|(kind, id)| {
            ["agent", "user", "service"].contains(&kind) && !id.trim().is_empty()
        });
        if !ok {
            return Err(serde::de::Error::custom(format!(
                "`{key}` is not an owner key: write `user:<id>` (or `agent:`, `service:`)"
            )));
        }
    }
    Ok(key)
}

impl RoleDef {
    /// The role, without operators; a soul file is resolved against `base`.
    pub fn role(&self, base: &Path) -> Role {
        let role = Role::new(self.id.clone());
        let role = match self.soul.as_deref().map(Soul::from_value) {
            Some(Soul::File(file)) => role.soul_file(resolve(base, &file)),
            Some(Soul::Inline(text)) => role.soul(text),
            Some(Soul::None) | None => role,
        };
        self.apply(role)
    }

    /// `role` with this definition's authority and clearance.
    pub fn apply(&self, mut role: Role) -> Role {
        if let Some(authority) = &self.authority {
            role = role.authority(authority.clone());
        }
        if let Some(clearance) = &self.clearance {
            let profile = clearance.iter().fold(
                ClearanceProfile::new(self.id.clone()),
                |p, (domain, level)| p.with_domain(domain.clone(), *level),
            );
            role = role.clearance(profile);
        }
        if !self.domains.is_empty() {
            role = role.domains(self.domains.clone());
        }
        if let Some(rules) = &self.impact_rules {
            role = role.impact_rules(rules.clone());
        }
        if let Some(matrix) = &self.decision_matrix {
            role = role.decision_matrix(matrix.clone());
        }
        if let Some(person) = &self.escalate_to {
            role = role.escalate_to(person.clone());
        }
        role
    }
}

fn resolve(base: &Path, file: &Path) -> PathBuf {
    if file.is_absolute() {
        file.to_owned()
    } else {
        base.join(file)
    }
}

/// Read the roles file at `path` (positioned errors: file, line, column, key).
pub fn read_roles(path: &Path) -> Result<RolesFile, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Operator(openvibe_operators::Error::Io {
            path: path.to_owned(),
            message: e.to_string(),
        })
    })?;
    let file: RolesFile = parse_yaml(&text, path)?;
    let mut seen = std::collections::BTreeSet::new();
    for (i, role) in file.roles.iter().enumerate() {
        if !seen.insert(role.id.as_str()) {
            return Err(Error::Operator(openvibe_operators::Error::Config {
                path: path.to_owned(),
                line: 0,
                column: 0,
                key: format!("roles[{i}].id"),
                message: format!("role `{}` is declared twice", role.id),
            }));
        }
    }
    Ok(file)
}

/// The roles of `config_path`'s [`ROLES_FILE`], each with the operators it
/// names built by `operators` (an unknown operator id is an error naming it).
pub fn load_roles(config_path: &Path, operators: &OperatorRuntime) -> Result<Vec<Role>, Error> {
    let file = read_roles(&config_path.join(ROLES_FILE))?;
    file.roles
        .iter()
        .map(|def| {
            def.operators
                .iter()
                .try_fold(def.role(config_path), |role, id| {
                    Ok(role.operator(operators.operator(id)?))
                })
        })
        .collect()
}
