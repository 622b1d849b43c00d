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

/// The code of a file with its comments removed (a comment can mention any module):
/// `//` to the end of the line, unless inside a string literal.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| {
            let mut in_str = false;
            let mut prev = ' ';
            for (i, c) in l.char_indices() {
                if c == '"' && prev != '\\' {
                    in_str = !in_str;
                }
                if !in_str && c == '/' && prev == '/' {
                    return &l[..i - 1];
                }
                prev = c;
            }
            l
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a use tree names, e.g. `{a::b, c::{d, e}}` → a/b, c/d, c/e, each
/// appended to `base`; returns how many bytes of `s` the tree took.
fn use_tree(s: &str, base: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |i: usize| i + s[i..].len() - s[i..].trim_start().len();
    let mut i = skip_ws(0);
    if s[i..].starts_with('{') {
        i += 1;
        loop {
            i = skip_ws(i);
            if i >= s.len() {
                return i;
            }
            if s[i..].starts_with('}') {
                return i + 1;
            }
            i += use_tree(&s[i..], base, out);
            i = skip_ws(i);
            if s[i..].starts_with(',') {
                i += 1;
            }
        }
    }
    if s[i..].starts_with('*') {
        out.push(base.to_vec());
        return i + 1;
    }
    let ident: String = s[i..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    if ident.is_empty() {
        if !base.is_empty() {
            out.push(base.to_vec());
        }
        return i.max(1);
    }
    i += ident.len();
    let mut path = base.to_vec();
    path.push(ident);
    if s[i..].starts_with("::") {
        return i + 2 + use_tree(&s[i + 2..], &path, out);
    }
    out.push(path);
    i
}

/// Every path the code names after `prefix` (`crate::` or `super::`), grouped and
/// multi-line imports included, as lists of segments.
fn paths_after(prefix: &str, code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + prefix.len()..];
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            use_tree(after, &[], &mut out);
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
        let code = code(&s.text);
        for path in paths_after("crate::", &code) {
            let target = &path[0];
            if rank(target).is_some_and(|r| r > mine) {
                errors.push(format!(
                    "src/{}.rs: `{}` imports `crate::{}`, which ARCHITECTURE.md places above it",
                    s.file,
                    s.module,
                    path.join("::")
                ));
            }
            if target == &s.module && path.len() > 1 {
                edges.entry(&s.file).or_default().insert(format!("{}/{}", s.module, path[1]));
            }
        }
        // `super::x` from a file directly inside a module names a sibling.
        if s.file.matches('/').count() == 1 {
            for path in paths_after("super::", &code).into_iter().filter(|p| !p.is_empty() && p[0] != "super") {
                edges.entry(&s.file).or_default().insert(format!("{}/{}", s.module, path[0]));
            }
        }
    }
    // Cycles among files (depth-first search, colouring).
    let files: Vec<&str> = edges.keys().copied().collect();
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        f: &'a str,
        edges: &'a BTreeMap<&str, BTreeSet<String>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
        errors: &mut Vec<String>,
    ) {
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
    assert!(errors.len() == 1 && errors[0].contains("imports `crate::run::Prepared`"), "{errors:?}");
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

#[test]
fn grouped_and_multi_line_imports_are_seen() {
    // The circle the issue found went unseen: `use super::{figures, html};`.
    let errors = check_with("model/config", "\nuse super::{dense, classifier::NodeClassifier};\n");
    assert!(errors.iter().any(|e| e.contains("cycle") && e.contains("model/classifier")), "{errors:?}");
    // A grouped import that rustfmt wrapped over several lines, nested groups included.
    let errors = check_with("model", "\nuse crate::{\n    error::Result,\n    fed::{ModelParams, strategy::Strategy},\n};\n");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("crate::fed::")), "{errors:?}");
    // A path in an expression, after a trailing comment, and in a string literal.
    assert_eq!(check_with("data", "\nfn f() { let _ = crate::run::x(); }\n").len(), 1);
    assert!(check_with("data", "\nlet x = 1; // crate::run::x\n").is_empty());
    assert_eq!(check_with("data", "\nlet u = \"https://x\"; let _ = crate::run::x();\n").len(), 1);
}

/// Calls that seed or reach for a random source of their own. ARCHITECTURE.md: "every
/// random draw comes from `rng::derive`, named by purpose" — so only the `rng` module
/// (`src/rng.rs`, `src/rng/`) may.
const OWN_RANDOMNESS: [&str; 12] = [
    "seed_from_u64",
    "from_seed(",
    "from_rng(",
    "thread_rng",
    "rand::rng()",
    "rand::random",
    "from_os_rng",
    "from_entropy",
    "OsRng",
    "Tensor::random(",
    ">::random(",
    "B::seed(",
];

/// Names a node count goes by. ARCHITECTURE.md: "sparse graphs stay sparse: no dense
/// n×n matrix anywhere" — an allocation or tensor shape of a node count squared.
const NODE_COUNTS: [&str; 6] = ["n", "nodes", "num_nodes", "n_nodes", "node_count", "num_nodes()"];

/// Whether `code` squares a node count: `[N, N]` (a shape) or `N * N` as a length (after
/// `vec![x; `, `with_capacity(`, `..` or `[`; a size printed for comparison is fine),
/// `N` standing alone (not the tail of a longer name) or as `….num_nodes()`.
fn squares_a_node_count(code: &str) -> Option<String> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    for n in NODE_COUNTS {
        for (sep, opens) in [(", ", &["["][..]), (" * ", &[";", "with_capacity(", "..", "["][..])] {
            let pat = format!("{n}{sep}");
            let mut from = 0;
            while let Some(i) = code[from..].find(&pat).map(|i| i + from) {
                from = i + 1;
                let before = code[..i].chars().next_back();
                let standalone = !before.is_some_and(|c| is_ident(c) || (n != "num_nodes()" && c == '.'));
                let head = code[..i].trim_end();
                let head = if n == "num_nodes()" { head.trim_end_matches(|c: char| is_ident(c) || c == '.').trim_end() } else { head };
                let opened = opens.iter().any(|o| head.ends_with(o));
                let rest = &code[i + pat.len()..];
                let operand: String = rest.chars().take_while(|&c| is_ident(c) || c == '.' || c == '(' || c == ')').collect();
                let same = if n == "num_nodes()" { operand.contains("num_nodes()") } else { operand.trim_end_matches(')') == n };
                if standalone && opened && same {
                    let line = code[..i].rsplit('\n').next().unwrap_or("").to_string() + code[i..].split('\n').next().unwrap_or("");
                    return Some(line.trim().to_string());
                }
            }
        }
    }
    None
}

fn rule_violations(sources: &[Source]) -> Vec<String> {
    let mut errors = Vec::new();
    for s in sources {
        let code = code(&s.text);
        if s.file != "rng" && !s.file.starts_with("rng/") {
            for call in OWN_RANDOMNESS {
                if code.contains(call) {
                    errors.push(format!("src/{}.rs: `{call}` — randomness comes only from `rng::derive` (ARCHITECTURE.md)", s.file));
                }
            }
        }
        if let Some(line) = squares_a_node_count(&code) {
            errors.push(format!("src/{}.rs: a dense n×n matrix — sparse graphs stay sparse (ARCHITECTURE.md): {line}", s.file));
        }
    }
    errors
}

#[test]
fn src_keeps_the_rules_of_architecture_md() {
    let (_, sources) = real();
    let errors = rule_violations(&sources);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn a_private_rng_or_a_dense_adjacency_is_caught() {
    let with = |file: &str, extra: &str| {
        let (_, mut sources) = real();
        sources.iter_mut().find(|s| s.file == file).unwrap().text.push_str(extra);
        rule_violations(&sources)
    };
    assert_eq!(with("attacks/lda", "\nlet r = ChaCha8Rng::seed_from_u64(7);\n").len(), 1);
    assert_eq!(with("model", "\nlet t = Tensor::<B, 2>::random([4, 4], Distribution::Default, &d);\n").len(), 1);
    assert!(with("rng", "\nlet r = ChaCha8Rng::seed_from_u64(7);\n").is_empty(), "rng is where seeding lives");
    assert!(with("rng/normals", "\nlet r = ChaCha8Rng::seed_from_u64(7);\n").is_empty(), "so are rng's own files");
    assert_eq!(with("data/graph", "\nlet dense = vec![0f32; n * n];\n").len(), 1);
    assert_eq!(with("model", "\nlet a = Tensor::<B, 2>::zeros([num_nodes, num_nodes], &d);\n").len(), 1);
    assert_eq!(with("train", "\nlet a = vec![0.0; g.num_nodes() * g.num_nodes()];\n").len(), 1);
    // Squares of other things are fine: classes, a feature width, a shape of two counts.
    assert!(with("train", "\nlet t = vec![0.0; k * k]; let s = [n, d]; let w = width * width; let m = nn * n;\n").is_empty());
    assert!(with("train", "\n// a dense [n, n] would not fit\n").is_empty());
}
