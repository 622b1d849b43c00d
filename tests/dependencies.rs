//! What the manifest promises about its dependencies, checked against `Cargo.lock`:
//! every crate comes from crates.io (nothing vendored or patched in the tree), the
//! deprecated `serde_yaml` is gone, and the gemm that burn-flex multiplies with is the
//! one `Cargo.toml` pins with `x86-v4` (the AVX-512 kernels): a Burn upgrade onto another
//! gemm would compile that one without the feature and silently fall back to AVX2.

use std::collections::BTreeMap;
use std::path::Path;

/// `Cargo.lock`'s packages as (name, version, source).
fn locked() -> Vec<(String, String, Option<String>)> {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    lock.split("[[package]]")
        .skip(1)
        .map(|block| {
            let field =
                |k: &str| block.lines().find_map(|l| l.strip_prefix(&format!("{k} = \"")).map(|v| v.trim_end_matches('"').to_string()));
            (field("name").unwrap(), field("version").unwrap(), field("source"))
        })
        .collect()
}

fn manifest() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).unwrap()
}

#[test]
fn every_dependency_comes_from_the_registry() {
    let locked = locked();
    // The workspace's own packages: the crate and its Python bindings (python/).
    let own = ["fgl-sim", "fgl-sim-python"];
    let local: Vec<_> = locked.iter().filter(|(n, _, s)| !own.contains(&n.as_str()) && s.is_none()).collect();
    assert!(local.is_empty(), "crates not from crates.io (vendored or by path): {local:?}");
    assert!(!Path::new(env!("CARGO_MANIFEST_DIR")).join("vendor").exists(), "vendor/ is back");
    assert!(!manifest().contains("[patch"), "Cargo.toml patches a crate");
    let bad: Vec<_> = locked.iter().filter(|(_, _, s)| s.as_deref().is_some_and(|s| !s.starts_with("registry+"))).collect();
    assert!(bad.is_empty(), "crates from git or another source: {bad:?}");
}

#[test]
fn the_deprecated_yaml_crate_is_not_compiled() {
    assert!(!locked().iter().any(|(n, _, _)| n == "serde_yaml"), "serde_yaml (deprecated, unmaintained) is in Cargo.lock");
}

#[test]
fn burn_multiplies_with_the_gemm_pinned_for_avx512() {
    let manifest = manifest();
    let pinned = manifest
        .lines()
        .find_map(|l| l.strip_prefix("gemm = { version = \"=").map(|r| r.split('"').next().unwrap().to_string()))
        .expect("Cargo.toml pins gemm with `version = \"=…\"`");
    assert!(manifest.lines().any(|l| l.starts_with("gemm = ") && l.contains("\"x86-v4\"")), "the gemm pin lost `x86-v4`");
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, version, _) in locked() {
        if name == "gemm" || name.starts_with("gemm-") {
            versions.entry(name).or_default().push(version);
        }
    }
    assert_eq!(versions.get("gemm"), Some(&vec![pinned.clone()]), "one gemm, the pinned one: {versions:?}");
    for (name, v) in &versions {
        assert_eq!(v.len(), 1, "two versions of {name} ({v:?}): burn-flex would multiply with one compiled without x86-v4");
    }
}
