//! `cargo xtask api [--bless]`: the public API of every library crate, as
//! text committed in `api/<crate>.txt` (one line per public item, in the
//! spirit of `cargo public-api`), so a change to it shows in review.
//! `test-all` regenerates the files and fails when one differs; `--bless`
//! writes them.
//!
//! The items come from rustdoc's JSON output (`--output-format json`, an
//! unstable rustdoc flag enabled on the stable toolchain with
//! `RUSTC_BOOTSTRAP=1`, given to rustdoc's processes alone). Everything reachable
//! from the crate root through public modules and re-exports is listed:
//! modules, types with their public fields and variants, functions and
//! methods with their signatures, traits with their items, trait
//! implementations (auto and blanket ones left out), constants and
//! re-exports of other crates.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use serde_json::Value;

use crate::{cargo, workspace_root};

/// The library crates whose API is tracked (the binary, benchmark and
/// xtask crates have none to break).
pub(crate) const CRATES: [&str; 19] = [
    "openvibe-protocols",
    "openvibe-config",
    "openvibe-retrieval",
    "openvibe-macros",
    "openvibe-primitives",
    "openvibe-operators",
    "openvibe-roles",
    "openvibe-in-memory",
    "openvibe-memory",
    "openvibe-memory-testkit",
    "openvibe-governance",
    "openvibe-postgres",
    "openvibe-api",
    "openvibe-service",
    "openvibe-remote",
    "openvibe-local-embed",
    "openvibe-schedule",
    "openvibe-temporal",
    "openvibe",
];

/// `cargo xtask api [--bless]`.
pub(crate) fn main(rest: &[String]) -> Result<(), String> {
    match rest {
        [] => check(),
        [flag] if flag == "--bless" => bless(),
        _ => Err("usage: cargo xtask api [--bless]".into()),
    }
}

fn api_file(krate: &str) -> PathBuf {
    workspace_root().join("api").join(format!("{krate}.txt"))
}

/// Write every crate's API file.
fn bless() -> Result<(), String> {
    std::fs::create_dir_all(workspace_root().join("api")).map_err(|e| e.to_string())?;
    rustdoc_json()?;
    for krate in CRATES {
        let text = public_api(krate)?;
        std::fs::write(api_file(krate), text).map_err(|e| format!("{krate}: {e}"))?;
    }
    eprintln!("==> api: wrote api/*.txt; review the diff before committing");
    Ok(())
}

/// Fail when a crate's API differs from its committed file.
pub(crate) fn check() -> Result<(), String> {
    rustdoc_json()?;
    let mut changed = Vec::new();
    for krate in CRATES {
        let now = public_api(krate)?;
        let committed = std::fs::read_to_string(api_file(krate)).unwrap_or_default();
        if now != committed {
            let before: BTreeSet<&str> = committed.lines().collect();
            let after: BTreeSet<&str> = now.lines().collect();
            let mut diff: Vec<String> = before
                .difference(&after)
                .map(|l| format!("  - {l}"))
                .chain(after.difference(&before).map(|l| format!("  + {l}")))
                .collect();
            let more = diff.len().saturating_sub(20);
            diff.truncate(20);
            if more > 0 {
                diff.push(format!("  … {more} more"));
            }
            changed.push(format!("{krate}:\n{}", diff.join("\n")));
        }
    }
    if changed.is_empty() {
        eprintln!("==> api: every public API matches api/*.txt");
        Ok(())
    } else {
        Err(format!(
            "the public API changed (a removal or a signature change breaks users):\n{}\n\
             If intended, run `cargo xtask api --bless` and commit api/*.txt with the change.",
            changed.join("\n")
        ))
    }
}

/// The variable that names the real rustdoc when this program runs as
/// cargo's `RUSTDOC` ([`as_rustdoc`]).
const REAL_RUSTDOC: &str = "OPENVIBE_XTASK_REAL_RUSTDOC";

/// When cargo runs this program as its rustdoc (see [`rustdoc_json`]): run
/// the real one with `RUSTC_BOOTSTRAP=1` and exit as it does.
pub(crate) fn as_rustdoc() -> Option<std::process::ExitCode> {
    let real = std::env::var_os(REAL_RUSTDOC)?;
    let status = std::process::Command::new(&real)
        .args(std::env::args_os().skip(1))
        .env("RUSTC_BOOTSTRAP", "1")
        .status();
    Some(match status {
        Ok(status) => std::process::ExitCode::from(
            status
                .code()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(1),
        ),
        Err(e) => {
            eprintln!(
                "xtask: could not run rustdoc ({}): {e}",
                real.to_string_lossy()
            );
            std::process::ExitCode::FAILURE
        }
    })
}

/// rustdoc's JSON of every library crate of the workspace, in one cargo
/// run (dependencies are not documented, only type-checked, as for the
/// HTML docs), in the shared target directory and with the tests'
/// dependency features ([`crate::AS_THE_TESTS`]), so it reuses what
/// clippy checked.
///
/// `--output-format json` is unstable: rustdoc accepts it with
/// `RUSTC_BOOTSTRAP=1`. Cargo runs this program as its `RUSTDOC`, which
/// passes that variable to rustdoc alone ([`as_rustdoc`]): set for the
/// whole cargo run, it would reach the build scripts that probe for
/// nightly features (proc-macro2's, among others) and change their output,
/// rebuilding every proc macro and nearly every crate, there and back, on
/// each `test-all`.
fn rustdoc_json() -> Result<(), String> {
    let this = std::env::current_exe().map_err(|e| format!("api: this program's path: {e}"))?;
    let real = std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into());
    let mut cmd = cargo();
    cmd.args(["doc", "--quiet", "--no-deps", "--lib"])
        .args(crate::AS_THE_TESTS)
        .env("RUSTDOC", this)
        .env(REAL_RUSTDOC, real)
        .env("RUSTDOCFLAGS", "-Z unstable-options --output-format json");
    crate::run("api (rustdoc JSON)", &mut cmd)
}

/// The public API of `krate` (from [`rustdoc_json`]), one sorted line per item.
fn public_api(krate: &str) -> Result<String, String> {
    let file = crate::target_dir()
        .join("doc")
        .join(format!("{}.json", krate.replace('-', "_")));
    let text = std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{krate}: {e}"))?;
    let mut lines = BTreeSet::new();
    let mut walker = Walker {
        doc: &doc,
        lines: &mut lines,
        seen: HashSet::new(),
    };
    let root = doc["root"].clone();
    walker.item(&root, krate.replace('-', "_").as_str());
    let mut out: String = lines.into_iter().collect::<Vec<_>>().join("\n");
    out.push('\n');
    Ok(out)
}

struct Walker<'d> {
    doc: &'d Value,
    lines: &'d mut BTreeSet<String>,
    seen: HashSet<(String, String)>,
}

impl Walker<'_> {
    fn get(&self, id: &Value) -> Option<&Value> {
        let key = match id {
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            _ => return None,
        };
        self.doc["index"].get(key)
    }

    /// List the item `id`, reached at `path` (its own name included).
    fn item(&mut self, id: &Value, path: &str) {
        if !self.seen.insert((id.to_string(), path.to_owned())) {
            return;
        }
        let Some(item) = self.get(id).cloned() else {
            return;
        };
        let Some((kind, inner)) = item["inner"].as_object().and_then(|o| o.iter().next()) else {
            return;
        };
        match kind.as_str() {
            "module" => {
                self.lines.insert(format!("pub mod {path}"));
                for child in inner["items"].as_array().into_iter().flatten() {
                    self.child(child, path);
                }
            }
            "struct" => {
                let generics = generics(&inner["generics"]);
                self.lines.insert(format!("pub struct {path}{generics}"));
                match &inner["kind"] {
                    Value::Object(k) if k.contains_key("plain") => {
                        for field in k["plain"]["fields"].as_array().into_iter().flatten() {
                            self.field(field, path);
                        }
                    }
                    Value::Object(k) if k.contains_key("tuple") => {
                        for (i, field) in k["tuple"].as_array().into_iter().flatten().enumerate() {
                            if let Some(f) = self.get(field) {
                                let ty = ty(&f["inner"]["struct_field"]);
                                self.lines
                                    .insert(format!("pub struct field {path}.{i}: {ty}"));
                            }
                        }
                    }
                    _ => {}
                }
                self.impls(&inner["impls"], path);
            }
            "enum" => {
                let generics = generics(&inner["generics"]);
                self.lines.insert(format!("pub enum {path}{generics}"));
                for variant in inner["variants"].as_array().into_iter().flatten() {
                    if let Some(v) = self.get(variant).cloned() {
                        let name = v["name"].as_str().unwrap_or("?");
                        let shape = match &v["inner"]["variant"]["kind"] {
                            Value::Object(k) if k.contains_key("tuple") => {
                                let parts: Vec<String> = k["tuple"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|f| self.get(f))
                                    .map(|f| ty(&f["inner"]["struct_field"]))
                                    .collect();
                                format!("({})", parts.join(", "))
                            }
                            Value::Object(k) if k.contains_key("struct") => {
                                let parts: Vec<String> = k["struct"]["fields"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|f| self.get(f))
                                    .map(|f| {
                                        format!(
                                            "{}: {}",
                                            f["name"].as_str().unwrap_or("?"),
                                            ty(&f["inner"]["struct_field"])
                                        )
                                    })
                                    .collect();
                                format!(" {{ {} }}", parts.join(", "))
                            }
                            _ => String::new(),
                        };
                        self.lines
                            .insert(format!("pub enum variant {path}::{name}{shape}"));
                    }
                }
                self.impls(&inner["impls"], path);
            }
            "union" => {
                self.lines.insert(format!("pub union {path}"));
            }
            "function" => {
                let line = function(inner, path);
                self.lines.insert(line);
            }
            "trait" => {
                let generics = generics(&inner["generics"]);
                self.lines.insert(format!("pub trait {path}{generics}"));
                for child in inner["items"].as_array().into_iter().flatten() {
                    if let Some(c) = self.get(child).cloned() {
                        let name = c["name"].as_str().unwrap_or("?");
                        let member = format!("{path}::{name}");
                        match c["inner"].as_object().and_then(|o| o.iter().next()) {
                            Some((k, inner)) if k == "function" => {
                                let line = function(inner, &member);
                                self.lines.insert(format!("trait item {line}"));
                            }
                            Some((k, _)) => {
                                self.lines.insert(format!("trait item {k} {member}"));
                            }
                            None => {}
                        }
                    }
                }
            }
            "type_alias" => {
                self.lines
                    .insert(format!("pub type {path} = {}", ty(&inner["type"])));
            }
            "constant" => {
                self.lines
                    .insert(format!("pub const {path}: {}", ty(&inner["type"])));
            }
            "static" => {
                self.lines
                    .insert(format!("pub static {path}: {}", ty(&inner["type"])));
            }
            "macro" | "proc_macro" => {
                self.lines.insert(format!("pub macro {path}"));
            }
            "use" => {
                let source = inner["source"].as_str().unwrap_or("?").to_owned();
                let target = inner["id"].clone();
                let local = self.get(&target).is_some_and(|t| t["crate_id"] == 0);
                if inner["is_glob"].as_bool() == Some(true) {
                    if local {
                        if let Some(module) = self.get(&target).cloned() {
                            for child in module["inner"]["module"]["items"]
                                .as_array()
                                .into_iter()
                                .flatten()
                            {
                                let parent = path.rsplit_once("::").map_or(path, |(p, _)| p);
                                self.child(child, parent);
                            }
                        }
                    } else {
                        self.lines.insert(format!("pub use {source}::*"));
                    }
                } else if local {
                    self.item(&target, path);
                } else {
                    self.lines.insert(format!("pub use {path} = {source}"));
                }
            }
            _ => {}
        }
    }

    /// A child of the module at `parent`, when public.
    fn child(&mut self, id: &Value, parent: &str) {
        let Some(child) = self.get(id) else {
            return;
        };
        if child["visibility"] != "public" {
            return;
        }
        let name = match child["inner"].get("use") {
            Some(u) => u["name"].as_str().unwrap_or("?").to_owned(),
            None => child["name"].as_str().unwrap_or("?").to_owned(),
        };
        let id = id.clone();
        self.item(&id, &format!("{parent}::{name}"));
    }

    fn field(&mut self, id: &Value, path: &str) {
        if let Some(f) = self.get(id)
            && f["visibility"] == "public"
        {
            let line = format!(
                "pub struct field {path}.{}: {}",
                f["name"].as_str().unwrap_or("?"),
                ty(&f["inner"]["struct_field"])
            );
            self.lines.insert(line);
        }
    }

    /// The inherent methods and trait implementations of the type at `path`.
    fn impls(&mut self, impls: &Value, path: &str) {
        for id in impls.as_array().into_iter().flatten() {
            let Some(imp) = self.get(id).cloned() else {
                continue;
            };
            let inner = &imp["inner"]["impl"];
            if inner["is_synthetic"] == true || !inner["blanket_impl"].is_null() {
                continue;
            }
            match &inner["trait"] {
                Value::Null => {
                    for item in inner["items"].as_array().into_iter().flatten() {
                        if let Some(m) = self.get(item).cloned()
                            && m["visibility"] == "public"
                        {
                            let name = m["name"].as_str().unwrap_or("?");
                            let member = format!("{path}::{name}");
                            match m["inner"].as_object().and_then(|o| o.iter().next()) {
                                Some((k, inner)) if k == "function" => {
                                    let line = function(inner, &member);
                                    self.lines.insert(line);
                                }
                                Some((k, inner)) if k == "assoc_const" || k == "constant" => {
                                    let t = ty(&inner["type"]);
                                    self.lines.insert(format!("pub const {member}: {t}"));
                                }
                                _ => {}
                            }
                        }
                    }
                }
                t => {
                    let negative = if inner["is_negative"] == true {
                        "!"
                    } else {
                        ""
                    };
                    self.lines
                        .insert(format!("impl {negative}{} for {path}", path_of(t)));
                }
            }
        }
    }
}

fn function(inner: &Value, path: &str) -> String {
    let header = &inner["header"];
    let mut prefix = String::from("pub ");
    if header["is_const"] == true {
        prefix.push_str("const ");
    }
    if header["is_async"] == true {
        prefix.push_str("async ");
    }
    if header["is_unsafe"] == true {
        prefix.push_str("unsafe ");
    }
    let inputs: Vec<String> = inner["sig"]["inputs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|pair| {
            let name = pair[0].as_str().unwrap_or("_");
            let t = ty(&pair[1]);
            if name == "self" {
                t
            } else {
                format!("{name}: {t}")
            }
        })
        .collect();
    let output = match &inner["sig"]["output"] {
        Value::Null => String::new(),
        t => format!(" -> {}", ty(t)),
    };
    format!(
        "{prefix}fn {path}{}({}){output}",
        generics(&inner["generics"]),
        inputs.join(", ")
    )
}

/// `<A, B>` for the type and const parameters (lifetimes left out).
fn generics(g: &Value) -> String {
    let names: Vec<String> = g["params"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["kind"].get("lifetime").is_none())
        .filter(|p| {
            // `impl Trait` arguments appear as synthetic parameters.
            p["kind"]["type"]["is_synthetic"] != true
        })
        .map(|p| {
            let name = p["name"].as_str().unwrap_or("?").to_owned();
            let bounds: Vec<String> = p["kind"]["type"]["bounds"]
                .as_array()
                .into_iter()
                .flatten()
                .map(bound)
                .collect();
            if bounds.is_empty() {
                name
            } else {
                format!("{name}: {}", bounds.join(" + "))
            }
        })
        .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!("<{}>", names.join(", "))
    }
}

fn bound(b: &Value) -> String {
    if let Some(t) = b.get("trait_bound") {
        let modifier = if t["modifier"] == "maybe" { "?" } else { "" };
        format!("{modifier}{}", path_of(&t["trait"]))
    } else if let Some(l) = b.get("outlives") {
        l.as_str().unwrap_or("'_").to_owned()
    } else {
        compact(b)
    }
}

/// A path with its generic arguments (`Option<String>`).
fn path_of(p: &Value) -> String {
    let name = p["path"].as_str().unwrap_or("?").to_owned();
    let args = &p["args"];
    if let Some(a) = args.get("angle_bracketed") {
        let mut parts: Vec<String> = a["args"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|arg| {
                // Lifetimes are left out.
                match arg.get("type") {
                    Some(t) => Some(ty(t)),
                    None => arg.get("const").map(compact),
                }
            })
            .collect();
        for c in a["constraints"].as_array().into_iter().flatten() {
            let name = c["name"].as_str().unwrap_or("?");
            if let Some(t) = c["binding"].get("equality").and_then(|e| e.get("type")) {
                parts.push(format!("{name} = {}", ty(t)));
            }
        }
        if parts.is_empty() {
            name
        } else {
            format!("{name}<{}>", parts.join(", "))
        }
    } else if let Some(p) = args.get("parenthesized") {
        let inputs: Vec<String> = p["inputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(ty)
            .collect();
        let output = match &p["output"] {
            Value::Null => String::new(),
            t => format!(" -> {}", ty(t)),
        };
        format!("{name}({}){output}", inputs.join(", "))
    } else {
        name
    }
}

/// A type as Rust source, approximately (enough to see a change).
fn ty(t: &Value) -> String {
    let Some((kind, v)) = t.as_object().and_then(|o| o.iter().next()) else {
        return t
            .as_str()
            .map_or_else(|| compact(t), |s| s.replace("infer", "_"));
    };
    match kind.as_str() {
        "resolved_path" => path_of(v),
        "generic" | "primitive" => v.as_str().unwrap_or("?").to_owned(),
        "borrowed_ref" => {
            let m = if v["is_mutable"] == true { "mut " } else { "" };
            format!("&{m}{}", ty(&v["type"]))
        }
        "raw_pointer" => {
            let m = if v["is_mutable"] == true {
                "mut"
            } else {
                "const"
            };
            format!("*{m} {}", ty(&v["type"]))
        }
        "tuple" => {
            let parts: Vec<String> = v.as_array().into_iter().flatten().map(ty).collect();
            format!("({})", parts.join(", "))
        }
        "slice" => format!("[{}]", ty(v)),
        "array" => format!("[{}; {}]", ty(&v["type"]), v["len"].as_str().unwrap_or("?")),
        "impl_trait" => {
            let bounds: Vec<String> = v.as_array().into_iter().flatten().map(bound).collect();
            format!("impl {}", bounds.join(" + "))
        }
        "dyn_trait" => {
            let traits: Vec<String> = v["traits"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|t| path_of(&t["trait"]))
                .collect();
            format!("dyn {}", traits.join(" + "))
        }
        "function_pointer" => {
            let sig = &v["sig"];
            let inputs: Vec<String> = sig["inputs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|input| ty(&input[1]))
                .collect();
            let output = match &sig["output"] {
                Value::Null => String::new(),
                out => format!(" -> {}", ty(out)),
            };
            format!("fn({}){output}", inputs.join(", "))
        }
        "qualified_path" => {
            let self_ty = ty(&v["self_type"]);
            let name = v["name"].as_str().unwrap_or("?");
            match &v["trait"] {
                Value::Null => format!("{self_ty}::{name}"),
                t => format!("<{self_ty} as {}>::{name}", path_of(t)),
            }
        }
        _ => compact(t),
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}
