//! Files the loaders read that are not published as such, built from published ones by
//! the data README's conversions. One so far: `planetoid/derived/pubmed.npz`, PubMed
//! with its features, whose exact float32 copy is published nowhere (README §8): the
//! graph, labels and standard split come from Planetoid's `ind.pubmed.*` pickles, the
//! 19717 × 500 feature rows from the text dump `pubmed.feature` inside `pubmed.7z`
//! (row i = node i, each decimal parsed to the nearest float32, zeros dropped).

use std::io::Write;
use std::path::Path;

use super::Role;
use super::loaders::read_planetoid;
use super::npy::npy_bytes;
use super::sevenz;
use crate::error::{Error, Result};

/// A file built from published inputs (paths relative to the data directory).
#[derive(Debug, Clone, Copy)]
pub struct Derived {
    pub path: &'static str,
    pub inputs: &'static [&'static str],
    build: fn(dir: &Path, out: &Path) -> Result<()>,
}

/// The derived files and how each is built.
pub static DERIVED: &[Derived] = &[Derived {
    path: "planetoid/derived/pubmed.npz",
    inputs: &[
        "planetoid/ind.pubmed.x",
        "planetoid/ind.pubmed.y",
        "planetoid/ind.pubmed.ally",
        "planetoid/ind.pubmed.tx",
        "planetoid/ind.pubmed.ty",
        "planetoid/ind.pubmed.graph",
        "planetoid/ind.pubmed.test.index",
        "pubmed_features/pubmed.7z",
    ],
    build: pubmed_npz,
}];

impl Derived {
    /// Build this file under `dir` from its inputs there, atomically (a part file renamed
    /// into place).
    pub fn build(&self, dir: &Path) -> Result<()> {
        super::into_place(&dir.join(self.path), |part| (self.build)(dir, part))
    }
}

/// The derived file `path`, if it is one.
pub fn derived(path: &str) -> Option<&'static Derived> {
    DERIVED.iter().find(|d| d.path == path)
}

/// The feature rows of a dense text dump: `rows` lines of `cols` decimals.
fn parse_feature_dump(text: &str, rows: usize, cols: usize, source: &Path) -> Result<(Vec<i32>, Vec<i32>, Vec<f32>)> {
    let (mut indptr, mut indices, mut values) = (vec![0i32], Vec::new(), Vec::new());
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    for r in 0..rows {
        let line = lines.next().ok_or_else(|| Error::data_file(source, format!("has {r} rows, expected {rows}")))?;
        let mut count = 0;
        for (c, tok) in line.split_ascii_whitespace().enumerate() {
            let v: f32 =
                tok.parse().map_err(|_| Error::data_file(source, format!("line {}, column {}: {tok:?} is not a number", r + 1, c + 1)))?;
            if v != 0.0 {
                indices.push(c as i32);
                values.push(v);
            }
            count += 1;
        }
        if count != cols {
            return Err(Error::data_file(source, format!("line {}: {count} values, expected {cols}", r + 1)));
        }
        indptr.push(i32::try_from(indices.len()).map_err(|_| Error::data_file(source, "has more non-zeros than an int32 index holds"))?);
    }
    if lines.next().is_some() {
        return Err(Error::data_file(source, format!("has more than {rows} rows")));
    }
    Ok((indptr, indices, values))
}

fn pubmed_npz(dir: &Path, out: &Path) -> Result<()> {
    let parts = read_planetoid(&dir.join("planetoid"), "pubmed", false)?;
    let n = parts.nodes;
    let archive_path = dir.join("pubmed_features/pubmed.7z");
    let archive = std::fs::read(&archive_path).map_err(|e| Error::data_file(&archive_path, format!("cannot read: {e}")))?;
    let files = sevenz::extract(&archive, &archive_path)?;
    let (_, dump) = files
        .iter()
        .find(|(name, _)| name == "pubmed.feature")
        .ok_or_else(|| Error::data_file(&archive_path, "holds no pubmed.feature"))?;
    let text = std::str::from_utf8(dump).map_err(|_| Error::data_file(&archive_path, "pubmed.feature is not text"))?;
    let (attr_indptr, attr_indices, attr_values) = parse_feature_dump(text, n, 500, &archive_path.join("pubmed.feature"))?;

    // The adjacency as the README's derived file: distinct (u, v) pairs, self loops kept.
    let mut pairs = parts.edges.clone();
    pairs.sort_unstable();
    pairs.dedup();
    let mut adj_indptr = vec![0i32; n + 1];
    for &(u, _) in &pairs {
        adj_indptr[u + 1] += 1;
    }
    for i in 0..n {
        adj_indptr[i + 1] += adj_indptr[i];
    }
    let adj_indices: Vec<i32> = pairs.iter().map(|&(_, v)| v as i32).collect();
    let labels: Vec<i32> = parts.labels.iter().map(|y| y.map_or(-1, |c| c as i32)).collect();
    let idx = |role| parts.roles.iter().enumerate().filter(|&(_, r)| *r == role).map(|(v, _)| v as i64).collect::<Vec<i64>>();

    let le = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let le64 = |v: &[i64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let lef = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (train, val, test) = (idx(Role::Train), idx(Role::Val), idx(Role::Test));
    let entries: Vec<(&str, Vec<u8>)> = vec![
        ("adj_data", npy_bytes("<f4", &[pairs.len()], &lef(&vec![1.0; pairs.len()]))),
        ("adj_indices", npy_bytes("<i4", &[pairs.len()], &le(&adj_indices))),
        ("adj_indptr", npy_bytes("<i4", &[n + 1], &le(&adj_indptr))),
        ("adj_shape", npy_bytes("<i8", &[2], &le64(&[n as i64, n as i64]))),
        ("attr_data", npy_bytes("<f4", &[attr_values.len()], &lef(&attr_values))),
        ("attr_indices", npy_bytes("<i4", &[attr_indices.len()], &le(&attr_indices))),
        ("attr_indptr", npy_bytes("<i4", &[n + 1], &le(&attr_indptr))),
        ("attr_shape", npy_bytes("<i8", &[2], &le64(&[n as i64, 500]))),
        ("labels", npy_bytes("<i4", &[n], &le(&labels))),
        ("train_idx", npy_bytes("<i8", &[train.len()], &le64(&train))),
        ("val_idx", npy_bytes("<i8", &[val.len()], &le64(&val))),
        ("test_idx", npy_bytes("<i8", &[test.len()], &le64(&test))),
    ];
    let file = std::fs::File::create(out).map_err(|e| Error::data_file(out, format!("cannot create: {e}")))?;
    let mut zip = zip::ZipWriter::new(file);
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let werr = |e: &dyn std::fmt::Display| Error::data_file(out, format!("cannot write: {e}"));
    for (key, bytes) in entries {
        zip.start_file(format!("{key}.npy"), opts).map_err(|e| werr(&e))?;
        zip.write_all(&bytes).map_err(|e| werr(&e))?;
    }
    zip.finish().map_err(|e| werr(&e))?.sync_all().map_err(|e| werr(&e))?;
    Ok(())
}
