//! The governance file: its types and how it is parsed.

use std::collections::BTreeMap;

use openvibe_protocols::promotion::AutoPromote;
use openvibe_protocols::{Clearance, Principal, PrincipalKind, Rights};
use serde::{Deserialize, Serialize};

use crate::Error;

/// A governance file, as written.
///
/// ```yaml
/// shared_namespace: shared        # default `shared`
/// default_principal: default      # for session keys no rule matches
/// recall: [self, shared]          # what searches cover by default
/// namespaces:
///   developer:
///     project_scoped: true
///     read: ["*"]                 # principal ids, `kind:id`, or `*`
///     write: ["*"]
///     delete: ["*"]               # their own records
///     manage: [l-cto]             # others' records too
///     retention: 30d              # or per kind: { fact: 30d, knowledge: 7d }
/// api_keys:
///   - { principal: l-cto, env: MCP_API_KEY_L, namespace: developer }
///   - { principal: ci, sha256: "<64 hex digits>" }
/// session_keys:                   # ordered; the first match wins
///   - map: { "telegram:42": alice }
///     kind: user
///   - prefix: "agent:"            # the segment after the prefix
///   - regex: "^cron:(?P<principal>[^:]+)"
///     principal: "${principal}-cron"
/// retention:                      # per record kind, every namespace
///   episode: 90d
/// auto_promote:                   # off unless enabled
///   enabled: true
///   categories: [correction, decision, preference]
///   min_confidence: 0.9
///   to: shared
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GovernanceFile {
    /// The namespace every principal may share through (`shared`).
    #[serde(default = "shared")]
    pub shared_namespace: String,
    /// The principal of a session key no rule maps (`default`).
    #[serde(default = "default_principal")]
    pub default_principal: String,
    /// The namespaces searches and lists cover when the caller names none
    /// (`self` is the caller's home namespace); `[self, shared]` by default.
    #[serde(default = "default_recall")]
    pub recall: Vec<String>,
    /// Declared namespaces and their policies.
    #[serde(default, deserialize_with = "unique_map")]
    pub namespaces: BTreeMap<String, NamespacePolicy>,
    /// Service principals by API key.
    #[serde(default)]
    pub api_keys: Vec<ApiKeyEntry>,
    /// Ordered rules from session keys to principals.
    #[serde(default)]
    pub session_keys: Vec<SessionRule>,
    /// How long records of each kind are kept, in every namespace
    /// (`fact`, `episode`, `insight`, `knowledge`; kept until deleted when
    /// absent). Where several retentions apply, the shortest wins.
    #[serde(default, deserialize_with = "unique_map")]
    pub retention: BTreeMap<String, Keep>,
    /// Automatic promotion of new memories (off by default).
    #[serde(default)]
    pub auto_promote: AutoPromote,
}

/// A retention period, written as a duration (`30d`, `12h`, `90days`,
/// `1h 30m`): records expire that long after they are created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keep(pub std::time::Duration);

/// The longest retention accepted: 100 years.
pub const MAX_RETENTION: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 86_400);

impl Serialize for Keep {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&humantime::format_duration(self.0).to_string())
    }
}

impl<'de> Deserialize<'de> for Keep {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let keep = humantime::parse_duration(text.trim()).map_err(|e| {
            serde::de::Error::custom(format!(
                "`{text}` is not a duration ({e}); write e.g. `30d`, `12h` or `90days`"
            ))
        })?;
        if keep.as_secs() == 0 {
            return Err(serde::de::Error::custom(
                "a retention must be at least one second",
            ));
        }
        if keep > MAX_RETENTION {
            return Err(serde::de::Error::custom(
                "a retention longer than 100 years: leave it out to keep records until deleted",
            ));
        }
        Ok(Self(keep))
    }
}

/// A namespace's retention: one for every kind, or per kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum NamespaceRetention {
    /// Every kind (`retention: 30d`).
    All(Keep),
    /// Per kind (`retention: { fact: 30d, knowledge: 7d }`).
    ByKind(BTreeMap<String, Keep>),
}

impl<'de> Deserialize<'de> for NamespaceRetention {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = NamespaceRetention;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a duration (`30d`) or a map from record kind to duration")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Keep::deserialize(serde::de::value::StrDeserializer::<E>::new(v))
                    .map(NamespaceRetention::All)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((kind, keep)) = map.next_entry::<String, Keep>()? {
                    if out.insert(kind.clone(), keep).is_some() {
                        return Err(serde::de::Error::custom(format!("duplicate key `{kind}`")));
                    }
                }
                Ok(NamespaceRetention::ByKind(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for GovernanceFile {
    fn default() -> Self {
        Self {
            shared_namespace: shared(),
            default_principal: default_principal(),
            recall: default_recall(),
            namespaces: BTreeMap::new(),
            api_keys: Vec::new(),
            session_keys: Vec::new(),
            retention: BTreeMap::new(),
            auto_promote: AutoPromote::default(),
        }
    }
}

fn shared() -> String {
    "shared".to_owned()
}

fn default_principal() -> String {
    "default".to_owned()
}

fn default_recall() -> Vec<String> {
    vec!["self".to_owned(), shared()]
}

/// Who may do what in one namespace. Each list names principals by id
/// (`cursor-ide`), by kind and id (`service:cursor-ide`), or `*` (everyone).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespacePolicy {
    /// Records belong to the writer's project and are invisible from other
    /// projects; otherwise they span projects.
    #[serde(default)]
    pub project_scoped: bool,
    /// Who may read.
    #[serde(default)]
    pub read: Vec<String>,
    /// Who may write (create records, update their own).
    #[serde(default)]
    pub write: Vec<String>,
    /// Who may delete (their own records).
    #[serde(default)]
    pub delete: Vec<String>,
    /// Who may also update and delete records owned by others.
    #[serde(default)]
    pub manage: Vec<String>,
    /// Who may approve or reject the proposals waiting here (with `read`).
    /// Absent: every person (principal of kind `user`) who may read here;
    /// agents and services only when listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Vec<String>>,
    /// How long records here are kept (none: until deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<NamespaceRetention>,
}

impl NamespacePolicy {
    /// The lists with their right's name.
    pub fn lists(&self) -> [(&'static str, &[String]); 5] {
        [
            ("read", &self.read),
            ("write", &self.write),
            ("delete", &self.delete),
            ("manage", &self.manage),
            ("approve", self.approve.as_deref().unwrap_or_default()),
        ]
    }

    /// The rights this policy gives `principal`.
    pub fn rights_of(&self, principal: &Principal) -> Rights {
        let listed = |list: &[String]| {
            list.iter().any(|p| {
                p == "*"
                    || *p == principal.id
                    || p.split_once(':').is_some_and(|(kind, id)| {
                        kind == principal.kind.as_str() && id == principal.id
                    })
            })
        };
        let read = listed(&self.read);
        Rights {
            read,
            write: listed(&self.write),
            delete: listed(&self.delete),
            manage: listed(&self.manage),
            approve: match &self.approve {
                Some(list) => listed(list),
                None => read && principal.kind == openvibe_protocols::PrincipalKind::User,
            },
        }
    }
}

/// A service principal's API key: `sha256` (the key's SHA-256, hex) or
/// `env` (a variable holding the key, read and hashed at load time).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyEntry {
    /// The principal's id.
    pub principal: String,
    /// Its kind (`service` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<PrincipalKind>,
    /// The key's SHA-256 digest, 64 hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// An environment variable holding the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// Its home namespace (its id by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The tenant its requests act in (`default` when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Its clearance (public only when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearance: Option<Clearance>,
    /// Whether it may change others' records where its policy grants
    /// `manage`, read the whole audit trail and run namespace maintenance.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privileged: bool,
    /// A runtime inside your trust boundary (a `RoleRuntime` host, the
    /// remote memory client of a service you run) that states, with each
    /// request, the caller it acts for. Its requests are governed as that
    /// caller, as they would be in process. Off by default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
    /// The `source` stamped on every record the key writes (seed 003's
    /// `l9-kernel`, `cursor-ide`): its principal's id when absent. A write
    /// cannot claim another source, except through a trusted key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The projects a request with this key may name (`[l9]`, or `'*'` for
    /// any): none when absent, so its requests act in no project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projects: Option<ProjectsEntry>,
}

/// The projects an API key may name: a list of project ids, or `'*'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ProjectsEntry {
    /// Any project (`'*'`).
    All(AllProjects),
    /// These projects.
    Listed(Vec<String>),
}

/// The `'*'` of [`ProjectsEntry::All`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AllProjects {
    /// Every project.
    #[serde(rename = "*")]
    All,
}

/// One session-key rule: exactly one of `map`, `prefix`, `regex`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionRule {
    /// Exact session keys to principals.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "unique_map_opt"
    )]
    pub map: Option<BTreeMap<String, String>>,
    /// Keys starting with this: the principal is `principal` when given,
    /// else the text after the prefix up to the next `:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Keys matching this regular expression: the principal is
    /// `principal` with `$1` / `${name}` expanded, else the group named
    /// `principal`, else the first group, else the whole match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// The principal (a template for `regex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The principal's kind (`agent` by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<PrincipalKind>,
    /// Its home namespace (the principal's id by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A mapping that names a key twice is an error (YAML parsers keep the last).
fn unique_map<'de, D, V>(deserializer: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Visit<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Visit<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a mapping")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                if out.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!("duplicate key `{key}`")));
                }
                let value = map.next_value()?;
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    deserializer.deserialize_map(Visit(std::marker::PhantomData))
}

fn unique_map_opt<'de, D, V>(deserializer: D) -> Result<Option<BTreeMap<String, V>>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    unique_map(deserializer).map(Some)
}

/// Parse the file's text; a malformed document is an [`Error`] with the
/// line, column and key.
pub(crate) fn parse(text: &str, path: &str) -> Result<GovernanceFile, Error> {
    openvibe_config::from_yaml(text).map_err(|p| Error::Config {
        path: path.to_owned(),
        line: p.line,
        column: p.column,
        key: p.key,
        message: p.message,
    })
}

/// An error about `key`, positioned at the first line of `text` where
/// `needle` occurs (line 0 when it does not, e.g. for a file built in code).
pub(crate) fn positioned(
    text: &str,
    path: &str,
    key: String,
    needle: &str,
    message: String,
) -> Error {
    let (line, column) = openvibe_config::position_of(text, needle);
    Error::Config {
        path: path.to_owned(),
        line,
        column,
        key,
        message,
    }
}
