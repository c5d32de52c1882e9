//! The module check: inside each crate, the modules form a tree of
//! dependencies. No module uses one that (directly or through others) uses
//! it back: a loop means two modules are one concern split in two, or a
//! shared piece that wants a module of its own.
//!
//! Read from the sources as text: every `use crate::…`, `use super::…`,
//! `use self::…` and inline `crate::…`/`super::…` path is resolved to the
//! file of the module it goes through, as written: a path through a
//! re-export (`crate::console::Sessions`, which `console` re-exports from
//! `console::session`) depends on the re-exporting module, not on the one
//! that defines the item, so a loop through a facade is seen. A re-export
//! itself (`pub use …`) is not a dependency of the module that re-exports.
//! Edges are between files; a file's inline modules (`mod tests { … }`)
//! belong to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its module path and the paths it names.
struct File {
    /// Module path from the crate root (`[]` for `lib.rs`/`main.rs`).
    module: Vec<String>,
    /// Cleaned text (no comments, no string or char literals).
    text: String,
}

/// Run the check on every crate of this workspace.
pub fn check() -> Result<(), String> {
    let root = crate::workspace_root();
    let mut roots: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("modules: cannot list crates/: {e}"))?
        .filter_map(Result::ok)
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    roots.push(root.join("xtask/src"));
    roots.sort();
    let mut problems = Vec::new();
    for src in roots {
        problems.extend(loops_in(&src)?);
    }
    if problems.is_empty() {
        eprintln!("modules: ok (no import loops inside a crate)");
        Ok(())
    } else {
        Err(format!(
            "import loops inside a crate (each crate's modules must form a tree):\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// The import loops among the modules of the crate whose sources are `src`.
fn loops_in(src: &Path) -> Result<Vec<String>, String> {
    let mut files: BTreeMap<PathBuf, File> = BTreeMap::new();
    for path in rust_files(src)? {
        let rel = path.strip_prefix(src).unwrap_or(&path);
        // Binaries under src/bin are crates of their own.
        if rel.starts_with("bin") {
            continue;
        }
        let raw = std::fs::read_to_string(&path)
            .map_err(|e| format!("modules: cannot read {}: {e}", path.display()))?;
        let module = module_of(rel);
        let text = clean(&raw);
        files.insert(rel.to_path_buf(), File { module, text });
    }
    let by_module: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|(p, f)| (f.module.clone(), p.clone()))
        .collect();
    let mut edges: BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>> = BTreeMap::new();
    for (path, file) in &files {
        for (named, inline) in named_paths(&file.text, &file.module) {
            let Some((target, item)) = resolve(&named, &by_module) else {
                continue;
            };
            // A file's own items, and its inline modules' `super::*`.
            if &target == path || inline && target == *path {
                continue;
            }
            edges
                .entry(path.clone())
                .or_default()
                .entry(target)
                .or_default()
                .insert(item);
        }
    }
    let mut problems = Vec::new();
    for component in strongly_connected(&edges) {
        let mut lines = Vec::new();
        for from in &component {
            for (to, names) in edges.get(from).into_iter().flatten() {
                if component.contains(to) {
                    lines.push(format!(
                        "{} -> {} ({})",
                        src.join(from).display(),
                        src.join(to).display(),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
        problems.push(format!(
            "a loop of {} files: {}",
            component.len(),
            lines.join("; ")
        ));
    }
    Ok(problems)
}

/// Every `.rs` file below `dir`.
fn rust_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("modules: cannot list {}: {e}", dir.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(rust_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(out)
}

/// The module path of a file at `rel` below `src`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// `text` without comments and with every string and char literal emptied,
/// so that what is left is code.
fn clean(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && is_raw_start(&chars, i) {
            // A raw string: r"…", r#"…"#, …
            let mut hashes = 0;
            i += 1;
            while chars.get(i) == Some(&'#') {
                hashes += 1;
                i += 1;
            }
            i += 1;
            while i < chars.len() {
                if chars[i] == '"' && (0..hashes).all(|k| chars.get(i + 1 + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars, i) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether an `r` at `i` starts a raw string (not the end of an identifier).
fn is_raw_start(chars: &[char], i: usize) -> bool {
    let before = i.checked_sub(1).map(|j| chars[j]);
    if before.is_some_and(|b| b.is_alphanumeric() || b == '_') {
        return false;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'#') {
        j += 1;
    }
    chars.get(j) == Some(&'"')
}

/// Whether a `'` at `i` opens a char literal (not a lifetime or label).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// The absolute paths a file names (`use` trees and inline paths), each with
/// whether it was named from inside one of the file's inline modules.
fn named_paths(text: &str, module: &[String]) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    // Where each inline module starts and ends, to resolve its `super`.
    let inline = inline_modules(text);
    let module_at = |pos: usize| -> (Vec<String>, bool) {
        let mut m = module.to_vec();
        let mut inside = false;
        for (name, start, end) in &inline {
            if *start <= pos && pos < *end {
                m.push(name.clone());
                inside = true;
            }
        }
        (m, inside)
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(found) = text[i..].find("use ") {
        let at = i + found;
        i = at + 4;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let Some(end) = text[at..].find(';') else {
            break;
        };
        // A re-export (`pub use`, `pub(crate) use`) is not a dependency.
        let before = text[..at].trim_end();
        if before.ends_with("pub")
            || before.ends_with("pub(crate)")
            || before.ends_with("pub(super)")
        {
            continue;
        }
        let tree = &text[at + 4..at + end];
        let (here, inside) = module_at(at);
        for path in expand_use(tree.trim()) {
            if let Some(abs) = absolute(&path, &here) {
                out.push((abs, inside));
            }
        }
    }
    // Inline paths outside `use`: `crate::a::b`, `super::x`.
    for key in ["crate::", "super::"] {
        let mut j = 0;
        while let Some(found) = text[j..].find(key) {
            let at = j + found;
            j = at + key.len();
            if at > 0
                && (bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':'
                    || bytes[at - 1] == b'$')
            {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segments: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let (here, inside) = module_at(at);
            if let Some(abs) = absolute(&segments, &here) {
                out.push((abs, inside));
            }
        }
    }
    out
}

/// The inline modules of a file (`mod name { … }`): name, start and end.
fn inline_modules(text: &str) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(found) = text[i..].find("mod ") {
        let at = i + found;
        i = at + 4;
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        let rest = &text[at + 4..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = at + 4 + rest.len() - after.len();
        let mut depth = 0;
        let mut end = text.len();
        for (k, c) in text[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((name, open, end));
    }
    out
}

/// The paths a `use` tree names (`a::{b, c::d as e, self}` → `a::b`,
/// `a::c::d`, `a`; a glob names its module).
fn expand_use(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" as ", "@")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let mut out = Vec::new();
    expand_into(&tree, &mut Vec::new(), &mut out);
    out
}

fn expand_into(tree: &str, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for part in split_top(tree) {
        if let Some(brace) = part.find('{') {
            let head = &part[..brace];
            let inner = part[brace + 1..].trim_end_matches('}');
            let added: Vec<String> = head
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            let n = added.len();
            prefix.extend(added);
            expand_into(inner, prefix, out);
            prefix.truncate(prefix.len() - n);
        } else {
            let part = part.split('@').next().unwrap_or(part);
            let mut path = prefix.clone();
            for s in part.split("::").filter(|s| !s.is_empty()) {
                match s {
                    "self" => {}
                    "*" => {}
                    s => path.push(s.to_owned()),
                }
            }
            out.push(path);
        }
    }
}

/// `tree` split at its top-level commas.
fn split_top(tree: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < tree.len() {
        out.push(&tree[start..]);
    }
    out.into_iter().filter(|s| !s.is_empty()).collect()
}

/// `path` as named from module `here`, from the crate root; `None` for a
/// path into another crate.
fn absolute(path: &[String], here: &[String]) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => here.to_vec(),
        "super" => {
            let mut b = here.to_vec();
            b.pop()?;
            b
        }
        _ => return None,
    };
    let mut rest = rest;
    while let Some((s, tail)) = rest.split_first() {
        if s != "super" {
            break;
        }
        base.pop()?;
        rest = tail;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The file of the module `path` goes through, and the name it takes from
/// it: the longest module prefix that is a file (re-exports not followed).
fn resolve(
    path: &[String],
    by_module: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<(PathBuf, String)> {
    let (len, file) = (0..=path.len())
        .rev()
        .find_map(|n| by_module.get(&path[..n]).map(|f| (n, f)))?;
    // The module itself (a glob or `use crate::a`), or an item of it.
    let name = path.get(len).cloned().unwrap_or_else(|| "*".to_owned());
    Some((file.clone(), name))
}

/// The strongly connected components of more than one file (Tarjan).
fn strongly_connected(
    edges: &BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>,
) -> Vec<BTreeSet<PathBuf>> {
    struct State<'a> {
        edges: &'a BTreeMap<PathBuf, BTreeMap<PathBuf, BTreeSet<String>>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<BTreeSet<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a PathBuf) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(targets) = s.edges.get(v) {
            for w in targets.keys() {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                s.out.push(component);
            }
        }
    }
    let mut state = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !state.index.contains_key(v) {
            visit(&mut state, v);
        }
    }
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("openvibe-modules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_tree_passes_and_a_loop_is_named() {
        let dir = tmp("loop");
        write(
            &dir,
            &[
                ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::A;\n"),
                ("a.rs", "use crate::b::B;\npub struct A;\n"),
                (
                    "b.rs",
                    "// use crate::a::A; in a comment is no import\npub struct B;\nfn f() -> crate::a::A { todo!() }\n",
                ),
                (
                    "c.rs",
                    "use super::b::B;\n#[cfg(test)]\nmod tests { use super::*; }\n",
                ),
            ],
        );
        let problems = loops_in(&dir).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("a.rs -> ") && problems[0].contains("b.rs -> "),
            "{problems:?}"
        );
        // A path through the root's re-export depends on the root, which
        // only re-exports: no loop.
        write(
            &dir,
            &[(
                "b.rs",
                "pub struct B;\nfn f() -> crate::A { todo!() }\nconst S: &str = \"crate::a::A\";\n",
            )],
        );
        assert_eq!(loops_in(&dir).unwrap(), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_loop_through_a_reexport_is_seen() {
        // `state` names `Sessions` through `console`, which re-exports it
        // from `console::session` and imports `state` back.
        let dir = tmp("facade");
        write(
            &dir,
            &[
                ("lib.rs", "mod console;\nmod state;\n"),
                (
                    "console/mod.rs",
                    "mod session;\npub use session::Sessions;\nuse crate::state::AppState;\n",
                ),
                ("console/session.rs", "pub struct Sessions;\n"),
                (
                    "state.rs",
                    "pub struct AppState(crate::console::Sessions);\n",
                ),
            ],
        );
        let problems = loops_in(&dir).unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("(Sessions)"), "{problems:?}");
        // Naming the module that defines it breaks the loop.
        write(
            &dir,
            &[(
                "state.rs",
                "pub struct AppState(crate::console::session::Sessions);\n",
            )],
        );
        assert_eq!(loops_in(&dir).unwrap(), Vec::<String>::new());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn use_trees_expand() {
        assert_eq!(
            expand_use("crate::{a::{B, c::D as E}, self, f::*}"),
            vec![
                vec!["crate", "a", "B"],
                vec!["crate", "a", "c", "D"],
                vec!["crate"],
                vec!["crate", "f"],
            ]
        );
        assert_eq!(
            absolute(
                &["super".into(), "super".into(), "x".into()],
                &["a".into(), "b".into()]
            ),
            Some(vec!["x".to_owned()])
        );
    }
}
