//! The layering check: a crate may depend (in normal dependencies) only on
//! the crates of ours below it, and a backend's tests only on the contract
//! and its conformance suite. Read from `cargo metadata`.

use serde_json::Value;

/// Our crates that sit at the top and may use anything (binaries, facade,
/// benchmarks, automation).
const UNRESTRICTED: &[&str] = &[
    "openvibe",
    "openvibe-cli",
    "openvibe-bench",
    "openvibe-eval",
    "xtask",
];

/// For each layered crate: the crates of ours it may depend on.
const RULES: &[(&str, &[&str])] = &[
    ("openvibe-protocols", &[]),
    ("openvibe-macros", &[]),
    // Configuration files read with positioned errors: nothing of ours.
    ("openvibe-config", &[]),
    (
        "openvibe-primitives",
        &["openvibe-protocols", "openvibe-macros"],
    ),
    // The ranking every backend shares: pure functions over the contract.
    ("openvibe-retrieval", &["openvibe-protocols"]),
    // The memory layer over any backend; it starts on the embedded
    // default backend when given no other stores.
    (
        "openvibe-memory",
        &[
            "openvibe-protocols",
            "openvibe-retrieval",
            "openvibe-in-memory",
            "openvibe-governance",
            "openvibe-macros",
        ],
    ),
    (
        "openvibe-operators",
        &[
            "openvibe-primitives",
            "openvibe-protocols",
            "openvibe-macros",
            "openvibe-config",
        ],
    ),
    (
        "openvibe-roles",
        &[
            "openvibe-operators",
            "openvibe-primitives",
            "openvibe-memory",
            "openvibe-governance",
            "openvibe-protocols",
            "openvibe-macros",
        ],
    ),
    // Governance policy: decides grants from the contract's types.
    (
        "openvibe-governance",
        &["openvibe-protocols", "openvibe-config"],
    ),
    // The conformance suite is written against the contract (and uses the
    // governance crate's example policies as fixtures, the analyzer to say
    // which records hold a query's terms, and the memory layer's erasure
    // driver to run an erasure end to end on every backend).
    (
        "openvibe-memory-testkit",
        &[
            "openvibe-protocols",
            "openvibe-governance",
            "openvibe-retrieval",
            "openvibe-memory",
        ],
    ),
    // A backend implements the contract and ranks with the shared ranking;
    // it never needs the memory layer or another backend.
    (
        "openvibe-in-memory",
        &["openvibe-protocols", "openvibe-retrieval"],
    ),
    (
        "openvibe-postgres",
        &["openvibe-protocols", "openvibe-retrieval"],
    ),
    // The service's wire format: plain types over the contract.
    ("openvibe-api", &["openvibe-protocols"]),
    // The service serves any `Stores` (the CLI picks the backend),
    // authenticates callers by the governance policy, and decides what waits
    // for a person through the memory layer (a belief's proposal with its
    // belief).
    (
        "openvibe-service",
        &[
            "openvibe-api",
            "openvibe-protocols",
            "openvibe-governance",
            "openvibe-memory",
        ],
    ),
    // The remote client: the contract over the wire format, no server code.
    ("openvibe-remote", &["openvibe-api", "openvibe-protocols"]),
    // A primitive: an `Embedder` on candle, nothing of ours but the contract.
    ("openvibe-local-embed", &["openvibe-protocols"]),
    // The in-process scheduler: implements the contract's ScheduleProvider;
    // the runtime that runs its firings (roles) sits above it.
    ("openvibe-schedule", &["openvibe-protocols"]),
    // Temporal: a ScheduleProvider beside the in-process one (it reuses its
    // trigger rules) and a worker that runs the roles' activations, so it
    // sits above roles; nothing depends on it but the CLI.
    (
        "openvibe-temporal",
        &[
            "openvibe-protocols",
            "openvibe-operators",
            "openvibe-roles",
            "openvibe-schedule",
        ],
    ),
];

/// Crates whose dev-dependencies (tests, examples) are restricted too: a
/// backend is tested through the contract and the conformance suite, not
/// by comparing it with another backend's internals.
const DEV_RULES: &[(&str, &[&str])] = &[
    (
        "openvibe-in-memory",
        &["openvibe-protocols", "openvibe-memory-testkit"],
    ),
    (
        "openvibe-postgres",
        &["openvibe-protocols", "openvibe-memory-testkit"],
    ),
    // The remote client is tested against a live service (in the service's
    // tests), never against a backend directly.
    ("openvibe-remote", &["openvibe-api", "openvibe-protocols"]),
];

/// Run the check on this workspace.
pub fn check() -> Result<(), String> {
    let output = crate::cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("cargo metadata printed invalid JSON: {e}"))?;
    let violations = violations(&metadata)?;
    if violations.is_empty() {
        eprintln!("layering: ok");
        Ok(())
    } else {
        Err(format!(
            "layering check failed:\n  {}\n(see the invariants in docs/ARCHITECTURE.md)",
            violations.join("\n  ")
        ))
    }
}

/// Every rule broken by the workspace described by `metadata`.
fn violations(metadata: &Value) -> Result<Vec<String>, String> {
    let packages = metadata["packages"]
        .as_array()
        .ok_or("cargo metadata has no `packages` array")?;
    let ours: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut problems = Vec::new();
    for package in packages {
        let Some(name) = package["name"].as_str() else {
            continue;
        };
        if UNRESTRICTED.contains(&name) {
            continue;
        }
        let Some((_, allowed)) = RULES.iter().find(|(crate_name, _)| *crate_name == name) else {
            problems.push(format!(
                "`{name}` has no layering rule: add it to xtask/src/layering.rs and docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let Some(dep_name) = dep["name"].as_str() else {
                continue;
            };
            // `kind` is null for normal dependencies, "dev" or "build" otherwise.
            let normal = dep["kind"].is_null();
            if normal && ours.contains(&dep_name) && !allowed.contains(&dep_name) {
                problems.push(format!("`{name}` must not depend on `{dep_name}`"));
            }
            let dev_allowed = DEV_RULES.iter().find(|(crate_name, _)| *crate_name == name);
            if dep["kind"].as_str() == Some("dev")
                && ours.contains(&dep_name)
                && let Some((_, dev_allowed)) = dev_allowed
                && !dev_allowed.contains(&dep_name)
            {
                problems.push(format!(
                    "`{name}`'s tests must not depend on `{dep_name}` (only on {})",
                    dev_allowed.join(", ")
                ));
            }
        }
    }
    Ok(problems)
}

#[cfg(test)]
mod tests {
    use super::violations;
    use serde_json::json;

    fn pkg(name: &str, deps: &[(&str, Option<&str>)]) -> serde_json::Value {
        json!({
            "name": name,
            "dependencies": deps.iter().map(|(d, kind)| json!({"name": d, "kind": kind})).collect::<Vec<_>>(),
        })
    }

    #[test]
    fn allowed_edges_pass() {
        let meta = json!({"packages": [
            pkg("openvibe-protocols", &[("serde", None)]),
            pkg("openvibe-primitives", &[("openvibe-protocols", None)]),
            pkg("openvibe-memory", &[("openvibe-protocols", None), ("openvibe-primitives", Some("dev"))]),
        ]});
        assert_eq!(violations(&meta).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn upward_and_sideways_edges_fail() {
        let meta = json!({"packages": [
            pkg("openvibe-protocols", &[("openvibe-primitives", None)]),
            pkg("openvibe-primitives", &[("openvibe-protocols", None)]),
            pkg("openvibe-memory", &[("openvibe-primitives", None)]),
        ]});
        assert_eq!(
            violations(&meta).unwrap(),
            vec![
                "`openvibe-protocols` must not depend on `openvibe-primitives`".to_string(),
                "`openvibe-memory` must not depend on `openvibe-primitives`".to_string(),
            ]
        );
    }

    #[test]
    fn a_backends_tests_use_only_the_contract_and_the_testkit() {
        let meta = json!({"packages": [
            pkg("openvibe-postgres", &[
                ("openvibe-protocols", None),
                ("openvibe-memory-testkit", Some("dev")),
                ("openvibe-memory", Some("dev")),
            ]),
            pkg("openvibe-memory", &[("openvibe-protocols", None)]),
            pkg("openvibe-memory-testkit", &[("openvibe-protocols", None)]),
        ]});
        assert_eq!(
            violations(&meta).unwrap(),
            vec![
                "`openvibe-postgres`'s tests must not depend on `openvibe-memory` \
                 (only on openvibe-protocols, openvibe-memory-testkit)"
                    .to_string()
            ]
        );
    }

    #[test]
    fn a_new_crate_without_a_rule_fails() {
        let meta = json!({"packages": [pkg("openvibe-new", &[])]});
        assert_eq!(violations(&meta).unwrap().len(), 1);
    }
}
