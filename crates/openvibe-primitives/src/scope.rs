//! Memory scopes: what a node's memory context is about.

use std::fmt;
use std::sync::Arc;

use openvibe_protocols::{MemoryScope, State};

type StrFn = Arc<dyn Fn(&State) -> Option<String> + Send + Sync>;
type TagsFn = Arc<dyn Fn(&State) -> Vec<String> + Send + Sync>;

#[derive(Clone)]
enum Val<F> {
    Const(String),
    Tags(Vec<String>),
    Fn(F),
}

/// A node's memory scope: each part is a constant or a function of the state,
/// resolved into a [`MemoryScope`] when the node runs.
///
/// ```
/// use openvibe_primitives::ScopeSpec;
/// use openvibe_protocols::State;
///
/// let spec = ScopeSpec::new()
///     .domain("revenue")
///     .entity_from_key("company")
///     .tags(["qualification"]);
/// let state: State = [("company", "acme_corp")].into_iter().collect();
/// let scope = spec.resolve(&state);
/// assert_eq!(scope.domain.as_deref(), Some("revenue"));
/// assert_eq!(scope.entity.as_deref(), Some("acme_corp"));
/// assert_eq!(scope.tags, vec!["qualification".to_string()]);
/// ```
#[derive(Clone, Default)]
pub struct ScopeSpec {
    entity: Option<Val<StrFn>>,
    domain: Option<Val<StrFn>>,
    query: Option<Val<StrFn>>,
    tags: Option<Val<TagsFn>>,
}

impl ScopeSpec {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// A constant entity.
    #[must_use]
    pub fn entity(mut self, entity: impl Into<String>) -> Self {
        self.entity = Some(Val::Const(entity.into()));
        self
    }

    /// The entity computed from the state.
    #[must_use]
    pub fn entity_from(
        mut self,
        f: impl Fn(&State) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.entity = Some(Val::Fn(Arc::new(f)));
        self
    }

    /// The entity is the string under `key` in the state.
    #[must_use]
    pub fn entity_from_key(self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.entity_from(move |state| state.get_str(&key).map(str::to_owned))
    }

    /// A constant domain.
    #[must_use]
    pub fn domain(mut self, domain: impl Into<String>) -> Self {
        self.domain = Some(Val::Const(domain.into()));
        self
    }

    /// The domain computed from the state.
    #[must_use]
    pub fn domain_from(
        mut self,
        f: impl Fn(&State) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.domain = Some(Val::Fn(Arc::new(f)));
        self
    }

    /// A constant free-text query.
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(Val::Const(query.into()));
        self
    }

    /// The query computed from the state.
    #[must_use]
    pub fn query_from(
        mut self,
        f: impl Fn(&State) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.query = Some(Val::Fn(Arc::new(f)));
        self
    }

    /// Constant tags.
    #[must_use]
    pub fn tags<I, S>(mut self, tags: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tags = Some(Val::Tags(tags.into_iter().map(Into::into).collect()));
        self
    }

    /// Tags computed from the state.
    #[must_use]
    pub fn tags_from(mut self, f: impl Fn(&State) -> Vec<String> + Send + Sync + 'static) -> Self {
        self.tags = Some(Val::Fn(Arc::new(f)));
        self
    }

    /// Resolve every part against `state`.
    pub fn resolve(&self, state: &State) -> MemoryScope {
        MemoryScope {
            entity: resolve_str(self.entity.as_ref(), state),
            domain: resolve_str(self.domain.as_ref(), state),
            query: resolve_str(self.query.as_ref(), state),
            tags: match &self.tags {
                None => Vec::new(),
                Some(Val::Tags(tags)) => tags.clone(),
                Some(Val::Const(tag)) => vec![tag.clone()],
                Some(Val::Fn(f)) => f(state),
            },
        }
    }
}

fn resolve_str(val: Option<&Val<StrFn>>, state: &State) -> Option<String> {
    match val? {
        Val::Const(s) => Some(s.clone()),
        Val::Tags(tags) => tags.first().cloned(),
        Val::Fn(f) => f(state),
    }
}

impl fmt::Debug for ScopeSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn show<F>(v: &Option<Val<F>>) -> String {
            match v {
                None => "-".into(),
                Some(Val::Const(s)) => format!("{s:?}"),
                Some(Val::Tags(t)) => format!("{t:?}"),
                Some(Val::Fn(_)) => "<fn(state)>".into(),
            }
        }
        f.debug_struct("ScopeSpec")
            .field("entity", &show(&self.entity))
            .field("domain", &show(&self.domain))
            .field("tags", &show(&self.tags))
            .field("query", &show(&self.query))
            .finish()
    }
}
