//! The layering claim of ARCHITECTURE.md as a checked fact (in the spirit of
//! rust-analyzer's tidy tests): every `crate::m` a module of `src/` names must be a
//! module listed before it in ARCHITECTURE.md's "Layers" list, and the files of one
//! module must not import each other in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One source file: its top-level module, its path inside that module (e.g.
/// `model/config`), and its text.
struct Source {
    module: String,
    file: String,
    text: String,
}

/// The modules of the "Layers" list, bottom first.
fn layers(architecture: &str) -> Vec<String> {
    let section = architecture.split("## Layers").nth(1).expect("ARCHITECTURE.md has a `## Layers` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l.split_once(". `")?.1;
            l.split_once('.')?.0.parse::<usize>().ok()?;
            Some(rest.split('`').next()?.to_string())
        })
        .collect()
}

fn read_sources(src: &Path) -> Vec<Source> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(src).unwrap().with_extension("");
            let rel = rel.to_str().unwrap().replace('\\', "/");
            let module = rel.split('/').next().unwrap().to_string();
            // The crate root and the binary are not layers.
            if rel == "lib" || rel == "main" {
                return None;
            }
            let file = rel.trim_end_matches("/mod").to_string();
            Some(Source { module, file, text: std::fs::read_to_string(&p).unwrap() })
        })
        .collect()
}

/// Code lines only: line comments and doc comments can mention any module.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

/// Paths a line names through `crate::…`, including grouped `use crate::{a::b, c}`,
/// as lists of segments.
fn crate_paths(line: &str) -> Vec<Vec<String>> {
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let inner: String = group.chars().take_while(|&c| c != '}').collect();
            for part in inner.split(',') {
                let segs: Vec<String> = part.trim().split("::").map(ident).filter(|s| !s.is_empty()).collect();
                if !segs.is_empty() {
                    out.push(segs);
                }
            }
        } else {
            let segs: Vec<String> = after.split("::").map(ident).take_while(|s| !s.is_empty()).collect();
            if !segs.is_empty() {
                out.push(segs);
            }
        }
        rest = after;
    }
    out
}

/// Every violation: an import of a module at or above the importer's layer (other
/// than itself), a module missing from the list, and cycles among one module's files.
fn check(order: &[String], sources: &[Source]) -> Vec<String> {
    let rank = |m: &str| order.iter().position(|o| o == m);
    let mut errors = Vec::new();
    let modules: BTreeSet<&str> = sources.iter().map(|s| s.module.as_str()).collect();
    for m in &modules {
        if rank(m).is_none() {
            errors.push(format!("module `{m}` is not in ARCHITECTURE.md's Layers list"));
        }
    }
    // file → sibling files it imports (within its own module)
    let mut edges: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for s in sources {
        let Some(mine) = rank(&s.module) else { continue };
        for line in code_lines(&s.text) {
            for path in crate_paths(line) {
                let target = &path[0];
                if rank(target).is_some_and(|r| r > mine) {
                    errors.push(format!(
                        "src/{}.rs: `{}` imports `crate::{target}`, which ARCHITECTURE.md places above it: {}",
                        s.file,
                        s.module,
                        line.trim()
                    ));
                }
                if target == &s.module && path.len() > 1 {
                    edges.entry(&s.file).or_default().insert(format!("{}/{}", s.module, path[1]));
                }
            }
            // `super::x` from a file directly inside a module names a sibling.
            if s.file.matches('/').count() == 1 {
                let mut rest = line;
                while let Some(i) = rest.find("super::") {
                    let after = &rest[i + "super::".len()..];
                    let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() {
                        edges.entry(&s.file).or_default().insert(format!("{}/{name}", s.module));
                    }
                    rest = after;
                }
            }
        }
    }
    // Cycles among files (depth-first search, colouring).
    let files: Vec<&str> = edges.keys().copied().collect();
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(f: &'a str, edges: &'a BTreeMap<&str, BTreeSet<String>>, state: &mut BTreeMap<&'a str, u8>, stack: &mut Vec<&'a str>, errors: &mut Vec<String>) {
        state.insert(f, 1);
        stack.push(f);
        for next in edges.get(f).into_iter().flatten() {
            if next == f {
                continue;
            }
            match state.get(next.as_str()) {
                Some(1) => {
                    let start = stack.iter().position(|s| s == next).unwrap_or(0);
                    errors.push(format!("files import each other in a cycle: {} → {next}", stack[start..].join(" → ")));
                }
                Some(_) => {}
                None => {
                    if let Some((key, _)) = edges.get_key_value(next.as_str()) {
                        visit(key, edges, state, stack, errors);
                    }
                }
            }
        }
        stack.pop();
        state.insert(f, 2);
    }
    for f in files {
        if !state.contains_key(f) {
            visit(f, &edges, &mut state, &mut Vec::new(), &mut errors);
        }
    }
    errors
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn real() -> (Vec<String>, Vec<Source>) {
    let arch = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).unwrap();
    (layers(&arch), read_sources(&repo().join("src")))
}

#[test]
fn src_follows_the_layers_of_architecture_md() {
    let (order, sources) = real();
    assert!(order.len() >= 15 && order[0] == "error", "the Layers list was not read: {order:?}");
    let errors = check(&order, &sources);
    assert!(errors.is_empty(), "layering violations:\n{}", errors.join("\n"));
}

/// The check's findings on the real tree with `extra` appended to source file `file`.
fn check_with(file: &str, extra: &str) -> Vec<String> {
    let (order, mut sources) = real();
    sources.iter_mut().find(|s| s.file == file).unwrap().text.push_str(extra);
    check(&order, &sources)
}

#[test]
fn a_back_edge_is_caught() {
    // `data` reaching up into `run` (as `fed` once did) must fail the check.
    let errors = check_with("data", "\nuse crate::run::Prepared;\n");
    assert!(errors.len() == 1 && errors[0].contains("imports `crate::run`"), "{errors:?}");
    // So must a grouped import.
    let errors = check_with("model", "\nuse crate::{error::Result, fed::ModelParams};\n");
    assert!(errors.len() == 1 && errors[0].contains("crate::fed"), "{errors:?}");
    // And a comment mentioning an upper module is not an import.
    assert!(check_with("data", "\n/// see [`crate::run`]\n").is_empty());
}

#[test]
fn a_cycle_between_files_of_one_module_is_caught() {
    // model/config ↔ model/classifier, as before the seams issue.
    let errors = check_with("model/config", "\nuse super::classifier::NodeClassifier;\n");
    assert!(errors.iter().any(|e| e.contains("cycle") && e.contains("model/config") && e.contains("model/classifier")), "{errors:?}");
}

#[test]
fn an_unlisted_module_is_caught() {
    let (order, mut sources) = real();
    sources.push(Source { module: "gadgets".into(), file: "gadgets".into(), text: String::new() });
    let errors = check(&order, &sources);
    assert!(errors.iter().any(|e| e.contains("`gadgets` is not in")), "{errors:?}");
}
