//! What the randomized leak checks draw: a seeded generator, random
//! callers (tenant, principal, project, clearance, grants), the namespaces,
//! domains and words records ask for, and the seed of a run.

use openvibe_governance::Projects;
use openvibe_protocols::{
    CallerContext, Classification, Grants, Principal, PrincipalKind, RecordMeta, Rights, StoreError,
};

/// A small deterministic generator (SplitMix64): no dependency, the same
/// sequence for the same seed on every platform.
pub(super) struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A number below `n` (which is not 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// True `percent` times in 100.
    pub(super) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    /// One of `items` (not empty).
    pub(super) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The namespaces a record asks for (`""`: the writer's home).
pub(super) const NAMESPACES: &[&str] = &["shared", "ns-a", "ns-b", "ns-proj", ""];
const PROJECTS: &[Option<&str>] = &[None, Some("p1"), Some("p2")];
const PRINCIPALS: &[(&str, PrincipalKind)] = &[
    ("a0", PrincipalKind::Agent),
    ("a1", PrincipalKind::Agent),
    ("u0", PrincipalKind::User),
    ("s0", PrincipalKind::Service),
];
/// The domains records are about (and callers are cleared on).
pub(super) const DOMAINS: &[&str] = &["d0", "d1"];
/// The words of records' contents and of text queries.
pub(super) const WORDS: &[&str] = &["alpha", "beta", "gamma", "delta"];

/// The projects an API key of principal `id` may name (as a governance
/// file grants them): the one rule every edge applies before a store sees
/// the request.
fn key_projects(id: &str) -> Projects {
    match id {
        "a0" => Projects::All,
        "a1" => Projects::Listed(["p1".to_owned()].into()),
        "u0" => Projects::Listed(["p1".to_owned(), "p2".to_owned()].into()),
        _ => Projects::None,
    }
}

/// A random caller: tenant, principal, the project its request names (kept
/// only where its key's projects allow it: another is refused naming the
/// rule, and the caller goes on in no project), clearance, and (mostly)
/// random namespace grants.
pub(super) fn random_caller(rng: &mut Rng) -> CallerContext {
    let (id, kind) = rng.pick(PRINCIPALS);
    let tenant = if rng.chance(85) { "t1" } else { "t2" };
    let principal = Principal {
        id: (*id).to_owned(),
        kind: *kind,
    };
    let asked = *rng.pick(PROJECTS);
    let projects = key_projects(id);
    let base = CallerContext::new(tenant, principal);
    let mut ctx = match projects.apply(base.clone(), asked) {
        Ok(ctx) => {
            assert_eq!(ctx.project_id(), asked, "a granted project is the caller's");
            ctx
        }
        Err(StoreError::Unauthorized {
            operation, reason, ..
        }) => {
            let asked = asked.unwrap_or_default();
            assert!(
                !projects.allows(asked) && operation.contains(asked) && reason.contains("grants"),
                "{operation}: {reason}"
            );
            base
        }
        Err(e) => panic!("a project refusal is Unauthorized: {e:?}"),
    };
    for d in DOMAINS {
        if rng.chance(50) {
            ctx = ctx.with_domain_clearance(*d, *rng.pick(&Classification::ALL));
        }
    }
    if rng.chance(10) {
        ctx = ctx.with_privileged(true);
    }
    if rng.chance(12) {
        return ctx; // ungoverned
    }
    let governed: Vec<&str> = NAMESPACES
        .iter()
        .copied()
        .filter(|n| !n.is_empty())
        .collect();
    let mut grants = Grants::new(*rng.pick(&governed));
    for ns in &governed {
        let rights = Rights {
            read: rng.chance(65),
            write: rng.chance(55),
            delete: rng.chance(45),
            manage: rng.chance(20),
            approve: rng.chance(30),
        };
        grants = grants.grant(*ns, rights, *ns == "ns-proj");
    }
    let recall: Vec<&str> = governed
        .iter()
        .copied()
        .filter(|_| rng.chance(60))
        .collect();
    ctx.with_grants(grants.recall(recall))
}

/// A random subset of [`NAMESPACES`] (each 40%): a query's namespace filter.
pub(super) fn random_namespaces(rng: &mut Rng) -> Vec<String> {
    NAMESPACES
        .iter()
        .filter(|_| rng.chance(40))
        .map(|n| (*n).to_owned())
        .collect()
}

/// The owner keys (`kind:id`) of the principals random callers are.
pub(super) fn principal_keys() -> Vec<String> {
    PRINCIPALS
        .iter()
        .map(|(id, kind)| format!("{}:{id}", kind.as_str()))
        .collect()
}

/// The seed of a run: `OPENVIBE_LEAK_SEED` when set (to reproduce a
/// failure), else derived from the clock. Printed either way.
pub(super) fn leak_seed() -> u64 {
    std::env::var("OPENVIBE_LEAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        })
}

/// The system, in the tenant and project of a record with `meta`: sees it
/// whoever owns it (to check that a refused change changed nothing).
pub(super) fn admin_of(meta: &RecordMeta) -> CallerContext {
    CallerContext::system()
        .with_tenant(meta.tenant_id.clone())
        .with_project_id(meta.project_id.clone())
}
