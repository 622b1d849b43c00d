//! Attack and defense presets: how a scenario's `attacks:` and `defenses:` entries
//! become typed specs.
//!
//! An entry is the name of a built-in preset (the YAML files of `attacks/` and
//! `defenses/`, embedded in the binary so that any working directory finds them), a
//! path to a YAML file (relative to the scenario; no rebuild needed), or an inline map.
//! Each resolves to a [`Named`] spec: the name it goes by in reports, and the typed
//! [`AttackSpec`] / [`DefenseSpec`] (`kind:` picks the variant, unknown fields are
//! errors with their path). The resolved scenario records the contents, not the names.
//!
//! Adding a preset = one YAML file in the folder + its line in the `attacks!` or
//! `defenses!` registry (which lists the built-in presets).

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::attacks::AttackSpec;
use crate::defenses::DefenseSpec;
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Attack,
    Defense,
}

impl Kind {
    /// The scenario field (and preset folder) of this kind.
    pub fn field(self) -> &'static str {
        match self {
            Kind::Attack => "attacks",
            Kind::Defense => "defenses",
        }
    }
}

/// (name, YAML text) of every built-in preset of `kind`.
pub fn builtin(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Attack => crate::attacks::PRESETS,
        Kind::Defense => crate::defenses::PRESETS,
    }
}

/// The YAML text of built-in preset `name`.
pub fn get(kind: Kind, name: &str) -> Option<&'static str> {
    builtin(kind).iter().find(|(n, _)| *n == name).map(|(_, text)| *text)
}

/// A spec type that scenarios name presets of: an externally tagged enum whose
/// variants are the kinds. In YAML the variant is the `kind:` field beside its
/// parameters; [`spec_from_map`] and [`spec_to_map`] convert, so that errors inside a
/// variant keep their field path (serde's internally tagged enums lose it).
pub trait PresetSpec: Serialize + DeserializeOwned {
    const KIND: Kind;
    /// The spec's YAML `kind`, as its registry declares it.
    fn kind(&self) -> &'static str;
}

impl PresetSpec for AttackSpec {
    const KIND: Kind = Kind::Attack;
    fn kind(&self) -> &'static str {
        AttackSpec::kind(self)
    }
}

impl PresetSpec for DefenseSpec {
    const KIND: Kind = Kind::Defense;
    fn kind(&self) -> &'static str {
        DefenseSpec::kind(self)
    }
}

/// `{kind: k, fields…}` → the spec; errors are (field path, message).
pub fn spec_from_map<S: PresetSpec>(mut map: serde_norway::Mapping) -> std::result::Result<S, (String, String)> {
    let kind = match map.remove("kind") {
        Some(serde_norway::Value::String(k)) => k,
        Some(other) => return Err(("kind".into(), format!("must be a name, not {other:?}"))),
        None => return Err((String::new(), format!("missing field `kind`; kinds: {}", kinds::<S>().join(", ")))),
    };
    let tagged = serde_norway::Value::Tagged(Box::new(serde_norway::value::TaggedValue {
        tag: serde_norway::value::Tag::new(&kind),
        value: serde_norway::Value::Mapping(map),
    }));
    serde_path_to_error::deserialize(tagged).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().to_string();
        // Inside a variant the path is `variant.field…`; an unknown variant has none.
        let field = match path.split_once('.') {
            Some((_, rest)) if !rest.is_empty() => rest.to_string(),
            _ if msg.starts_with("unknown variant") => "kind".to_string(),
            _ => String::new(),
        };
        (field, msg)
    })
}

/// The spec → `{kind: k, fields…}`.
pub fn spec_to_map<S: PresetSpec>(spec: &S) -> serde_norway::Mapping {
    let value = serde_norway::to_value(spec).expect("specs serialise");
    let serde_norway::Value::Tagged(t) = value else { unreachable!("a spec is a newtype variant, serialised tagged") };
    let mut map = serde_norway::Mapping::new();
    map.insert("kind".into(), t.tag.to_string().trim_start_matches('!').into());
    if let serde_norway::Value::Mapping(fields) = t.value {
        map.extend(fields);
    }
    map
}

/// Every kind of `S` (from the built-in presets, which cover them all).
fn kinds<S: PresetSpec>() -> Vec<String> {
    builtin(S::KIND)
        .iter()
        .filter_map(|(_, text)| serde_norway::from_str::<serde_norway::Value>(text).ok()?.get("kind")?.as_str().map(str::to_string))
        .collect()
}

/// A resolved entry: the name it goes by (the preset's name, the file's stem, or an
/// inline `name:`, else its kind) and its spec. In YAML, a map of `name` and the spec's
/// fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Named<S> {
    pub name: String,
    pub spec: S,
}

impl<S: PresetSpec> Named<S> {
    /// The built-in preset `name`.
    pub fn builtin(name: &str) -> Result<Named<S>> {
        let (name, spec) =
            typed(serde_norway::Value::String(name.to_string()), None).map_err(|(_, msg)| Error::param(S::KIND.field(), msg))?;
        Ok(Named { name, spec })
    }
}

impl<S: PresetSpec> Serialize for Named<S> {
    fn serialize<Ser: serde::Serializer>(&self, s: Ser) -> std::result::Result<Ser::Ok, Ser::Error> {
        let mut map = serde_norway::Mapping::new();
        map.insert("name".into(), self.name.clone().into());
        map.extend(spec_to_map(&self.spec));
        map.serialize(s)
    }
}

impl<'de, S: PresetSpec> Deserialize<'de> for Named<S> {
    /// From a resolved entry (a map); a bare name is looked up among the built-ins.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Named<S>, D::Error> {
        let value = serde_norway::Value::deserialize(d)?;
        let (name, spec) = typed::<S>(value, None)
            .map_err(|(field, msg)| serde::de::Error::custom(if field.is_empty() { msg } else { format!("field `{field}`: {msg}") }))?;
        Ok(Named { name, spec })
    }
}

/// Why `name` names no built-in preset, and what would.
fn unknown(kind: Kind, name: &str) -> String {
    let known: Vec<&str> = builtin(kind).iter().map(|(n, _)| *n).collect();
    format!(
        "unknown preset `{name}`; built-in: {}; or give a path to a YAML file (ending in .yaml or .yml) or an inline map",
        known.join(", ")
    )
}

#[cfg(test)]
thread_local! {
    /// Entries typed on this thread (tests count parses with it).
    pub static TYPED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// One entry (name, path or map) → (name, typed spec). `base` is the directory that
/// relative paths start from (`None`: not allowed, as when no file is involved).
/// Errors are (path inside the entry, message).
fn typed<S: PresetSpec>(entry: serde_norway::Value, base: Option<&Path>) -> std::result::Result<(String, S), (String, String)> {
    #[cfg(test)]
    TYPED.with(|t| t.set(t.get() + 1));
    let (default_name, origin, mut map) = match entry {
        serde_norway::Value::String(s) if s.ends_with(".yaml") || s.ends_with(".yml") => {
            let Some(base) = base else {
                return Err((String::new(), format!("preset file `{s}` cannot be resolved here (no scenario file)")));
            };
            let path = base.join(&s);
            let text =
                std::fs::read_to_string(&path).map_err(|e| (String::new(), format!("preset file {}: cannot read: {e}", path.display())))?;
            let value: serde_norway::Value =
                parse_yaml(&text).map_err(|e| (String::new(), format!("preset file {}: {e}", path.display())))?;
            let serde_norway::Value::Mapping(m) = value else {
                return Err((String::new(), format!("preset file {}: expected a map with `kind:`", path.display())));
            };
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("preset").to_string();
            (Some(stem), format!(" (in preset file {})", path.display()), m)
        }
        serde_norway::Value::String(s) => {
            let text = get(S::KIND, &s).ok_or_else(|| (String::new(), unknown(S::KIND, &s)))?;
            let serde_norway::Value::Mapping(m) = serde_norway::from_str(text).expect("built-in presets are valid YAML") else {
                unreachable!("built-in presets are maps")
            };
            (Some(s), format!(" (in built-in preset {})", S::KIND.field()), m)
        }
        serde_norway::Value::Mapping(m) => (None, String::new(), m),
        other => {
            return Err((String::new(), format!("expected a preset name, a path to a YAML file, or a map with `kind:`, not {other:?}")));
        }
    };
    let name = match map.remove("name") {
        Some(serde_norway::Value::String(n)) if !n.trim().is_empty() => Some(n),
        Some(other) => return Err(("name".into(), format!("must be a non-empty string, not {other:?}{origin}"))),
        None => default_name,
    };
    let spec: S = spec_from_map(map).map_err(|(field, msg)| (field, format!("{msg}{origin}")))?;
    let name = name.unwrap_or_else(|| spec.kind().to_string());
    Ok((name, spec))
}

/// The entries of `root[kind.field()]` resolved and typed (`None` when the field is
/// absent). Errors are (field path, message).
fn resolve_list<S: PresetSpec>(
    root: &serde_norway::Value,
    base: Option<&Path>,
) -> std::result::Result<Option<Vec<Named<S>>>, (String, String)> {
    let field = S::KIND.field();
    let Some(entries) = root.as_mapping().and_then(|m| m.get(field)) else { return Ok(None) };
    let serde_norway::Value::Sequence(list) = entries else {
        return Err((field.into(), "expected a list of presets, e.g. [none] or [ldp-labels, my-defense.yaml]".into()));
    };
    let mut out: Vec<Named<S>> = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let at = |sub: &str| if sub.is_empty() { format!("{field}[{i}]") } else { format!("{field}[{i}].{sub}") };
        let (name, spec) = typed::<S>(entry.clone(), base).map_err(|(sub, msg)| (at(&sub), msg))?;
        if out.iter().any(|n| n.name == name) {
            return Err((at(""), format!("the name `{name}` is used twice; give one entry a `name:`")));
        }
        out.push(Named { name, spec });
    }
    Ok(Some(out))
}

/// Resolve the entries of `root[kind.field()]` in place into maps of `name` + spec (the
/// matrix edits them as YAML before each cell's scenario types them). Errors are
/// (field path, message).
pub fn resolve_entries<S: PresetSpec>(root: &mut serde_norway::Value, base: Option<&Path>) -> std::result::Result<(), (String, String)> {
    let field = S::KIND.field();
    if let Some(list) = resolve_list::<S>(root, base)? {
        let values = list
            .into_iter()
            .map(serde_norway::to_value)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| (field.into(), e.to_string()))?;
        root[field] = serde_norway::Value::Sequence(values);
    }
    Ok(())
}

/// Resolve and type the entries of `root[kind.field()]` and leave an empty list in their
/// place, so that deserialising the rest does not type them a second time. `None` when
/// the field is absent. Errors are (field path, message).
pub fn take_entries<S: PresetSpec>(
    root: &mut serde_norway::Value,
    base: Option<&Path>,
) -> std::result::Result<Option<Vec<Named<S>>>, (String, String)> {
    let list = resolve_list::<S>(root, base)?;
    if list.is_some() {
        root[S::KIND.field()] = serde_norway::Value::Sequence(Vec::new());
    }
    Ok(list)
}

/// `fgl-sim presets`: every built-in preset with its parameters and their defaults.
pub fn describe_all() -> String {
    let mut out = String::new();
    let mut kind = None;
    for p in list() {
        if kind != Some(p.kind) {
            kind = Some(p.kind);
            out.push_str(&format!("# {} (built-in presets; a scenario may also name a YAML file or inline a map)\n\n", p.kind.field()));
        }
        out.push_str(&format!("## {}\n{}\n", p.name, p.about));
        match p.yaml {
            Ok(y) => out.push_str(&y),
            Err(e) => out.push_str(&format!("(invalid: {e})\n")),
        }
        out.push('\n');
    }
    out
}

/// A built-in preset as `fgl-sim presets` shows it.
pub struct PresetInfo {
    pub kind: Kind,
    pub name: &'static str,
    /// The comment lines at the top of its file, joined.
    pub about: String,
    /// Its resolved spec (every default filled in), or why it does not resolve.
    pub yaml: Result<String>,
}

/// Every built-in preset, attacks first, in registry order.
pub fn list() -> Vec<PresetInfo> {
    [Kind::Attack, Kind::Defense]
        .into_iter()
        .flat_map(|kind| {
            builtin(kind).iter().map(move |&(name, text)| {
                let about: Vec<&str> = text.lines().take_while(|l| l.starts_with('#')).map(|l| l.trim_start_matches('#').trim()).collect();
                let yaml = match kind {
                    Kind::Attack => Named::<AttackSpec>::builtin(name).and_then(|n| yaml(&n)),
                    Kind::Defense => Named::<DefenseSpec>::builtin(name).and_then(|n| yaml(&n)),
                };
                PresetInfo { kind, name, about: about.join(" "), yaml }
            })
        })
        .collect()
}

fn yaml<T: Serialize>(v: &T) -> Result<String> {
    serde_norway::to_string(v).map_err(|e| Error::Other(e.to_string()))
}

/// How deep YAML flow collections (`[…]`, `{…}`) may nest. The YAML parser gives up at
/// 128 levels itself, but only after time quadratic in the depth (a 200 000-level list
/// took over a minute): [`check_yaml_depth`] refuses deeper text before parsing.
pub const MAX_YAML_DEPTH: usize = 128;

/// Parse a user's YAML text: refused past [`MAX_YAML_DEPTH`] ([`check_yaml_depth`]),
/// then deserialised; the error is the message alone (callers name the file).
pub fn parse_yaml<T: DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    check_yaml_depth(text)?;
    serde_norway::from_str(text).map_err(|e| e.to_string())
}

/// Refuse YAML whose flow collections nest deeper than [`MAX_YAML_DEPTH`], by one pass
/// over the text (quoted scalars and comments skipped); the message names the line.
pub fn check_yaml_depth(text: &str) -> std::result::Result<(), String> {
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut single, mut double, mut comment, mut escaped) = (false, false, false, false);
    let mut prev = '\n';
    for ch in text.chars() {
        if ch == '\n' {
            line += 1;
            comment = false;
        } else if comment {
        } else if double {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                double = false;
            }
        } else if single {
            single = ch != '\'';
        } else {
            match ch {
                '#' if prev.is_whitespace() => comment = true,
                '"' => double = true,
                '\'' if !prev.is_alphanumeric() => single = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_YAML_DEPTH {
                        return Err(format!("line {line}: collections nested deeper than {MAX_YAML_DEPTH} levels"));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = ch;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_preset_parses_into_its_typed_spec() {
        fn round_trips<S: PresetSpec + PartialEq + std::fmt::Debug>() {
            for (name, _) in builtin(S::KIND) {
                let n = Named::<S>::builtin(name).unwrap();
                assert_eq!(n.spec.kind(), *name);
                // Written and read back, it is the same.
                let back: Named<S> = serde_norway::from_str(&serde_norway::to_string(&n).unwrap()).unwrap();
                assert_eq!(back, n);
            }
        }
        round_trips::<AttackSpec>();
        round_trips::<DefenseSpec>();
        let text = describe_all();
        assert!(text.contains("## lda") && text.contains("edge_probability: 0.005") && text.contains("## ldp-labels"), "{text}");
    }

    #[test]
    fn entries_resolve_from_names_maps_and_files_with_field_paths_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mine.yaml"), "kind: ldp-labels\nepsilon: 2\n").unwrap();
        std::fs::write(dir.path().join("bad.yaml"), "kind: ldp-labels\nepsilom: 2\n").unwrap();
        let resolve = |yaml: &str| {
            let mut v: serde_norway::Value = serde_norway::from_str(yaml).unwrap();
            resolve_entries::<DefenseSpec>(&mut v, Some(dir.path())).map(|_| v)
        };
        let v = resolve("defenses: [ldp-labels, mine.yaml, {name: strong, kind: ldp-labels, epsilon: .inf}]").unwrap();
        let list: Vec<Named<DefenseSpec>> = serde_norway::from_value(v["defenses"].clone()).unwrap();
        let names: Vec<&str> = list.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["ldp-labels", "mine", "strong"]);
        let DefenseSpec::LdpLabels(c) = &list[1].spec else { panic!() };
        assert_eq!(c.epsilon.value(), 2.0);

        let (field, msg) = resolve("defenses: [none, bad.yaml]").unwrap_err();
        assert_eq!(field, "defenses[1].epsilom");
        assert!(msg.contains("unknown field `epsilom`") && msg.contains("bad.yaml"), "{msg}");
        let (field, msg) = resolve("defenses: [{kind: ldp-labels, epsilon: -1}]").unwrap_err();
        assert_eq!(field, "defenses[0].epsilon");
        assert!(msg.contains("> 0"), "{msg}");
        let (field, msg) = resolve("defenses: [ldp-magic]").unwrap_err();
        assert_eq!(field, "defenses[0]");
        assert!(msg.contains("ldp-labels") && msg.contains("path"), "{msg}");
        let (field, msg) = resolve("defenses: [{kind: laplace}]").unwrap_err();
        assert_eq!(field, "defenses[0].kind");
        assert!(msg.contains("unknown variant `laplace`") && msg.contains("ldp-labels"), "{msg}");
        let (field, msg) = resolve("defenses: [{epsilon: 1}]").unwrap_err();
        assert_eq!(field, "defenses[0]");
        assert!(msg.contains("missing field `kind`") && msg.contains("ldp-labels"), "{msg}");
        let (_, msg) = resolve("defenses: [missing.yaml]").unwrap_err();
        assert!(msg.contains("missing.yaml") && msg.contains("cannot read"), "{msg}");
        let (field, msg) = resolve("defenses: [ldp-labels, ldp-labels]").unwrap_err();
        assert_eq!(field, "defenses[1]");
        assert!(msg.contains("twice"), "{msg}");
        let (field, _) = resolve("defenses: none").unwrap_err();
        assert_eq!(field, "defenses");
    }

    #[test]
    fn deep_flow_nesting_is_refused_fast_and_quoted_brackets_do_not_count() {
        let deep = |d: usize| format!("description: {}{}\n", "[".repeat(d), "]".repeat(d));
        assert!(check_yaml_depth(&deep(MAX_YAML_DEPTH)).is_ok());
        let e = check_yaml_depth(&format!("seed: 1\n{}", deep(200_000))).unwrap_err();
        assert!(e.contains("line 2") && e.contains("deeper than 128"), "{e}");
        let quoted = format!("a: \"{}\"\nb: '{}'\nc: x # {}\nd: it's [1]\n", "[".repeat(300), "{".repeat(300), "[".repeat(300));
        assert!(check_yaml_depth(&quoted).is_ok());
    }
}
