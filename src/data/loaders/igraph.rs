//! A pickled `igraph.Graph` (RGNN's semi-synthetic German and Student graphs), read with
//! the restricted pickle reader. igraph pickles a graph by its reduce arguments: (vertex
//! count, edge list, directed, graph attributes, vertex attributes, edge attributes).
//! Vertex attribute `class` is the label; `name` (provenance) is dropped; every other
//! attribute, in the pickle's order, is a dense feature column — as the data README's
//! derived `<name>_nodes.csv` / `<name>_edges.csv` lay it out — unless a
//! [`Recipe`] (RGNN's own preprocessing) is given.

use std::path::Path;

use super::rgnn_tabular::{self, Recipe};
use super::{class_count, finish, numbered_classes};
use crate::data::pickle;
use crate::data::{Dataset, DenseMatrix, Features, Graph};
use crate::error::{Error, Result};

/// Load a pickled igraph graph, its attributes through `recipe` when one is given.
pub fn load_igraph_pickle(path: &Path, name: &str, recipe: Option<Recipe>) -> Result<Dataset> {
    let bytes = std::fs::read(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    let p = pickle::parse(&bytes, &[("igraph", "Graph")], path)?;
    let err = |msg: &str| Error::data_file(path, format!("igraph pickle: {msg}"));
    let (_, _, args, _) = p.object(p.root).ok_or_else(|| err("expected a pickled igraph.Graph"))?;
    let args = p.seq(args).ok_or_else(|| err("its arguments are not a tuple"))?;
    let [count, edge_list, directed, _, vertex_attrs, _] = args else {
        return Err(err("expected (vertex count, edges, directed, graph, vertex and edge attributes)"));
    };
    let n = p.int(*count).filter(|&n| n > 0).ok_or_else(|| err("no vertex count"))? as usize;
    if p.int(*directed) == Some(1) {
        return Err(err("a directed graph (RGNN's are undirected)"));
    }
    let mut edges = Vec::new();
    for &e in p.seq(*edge_list).ok_or_else(|| err("the edges are not a list"))? {
        let pair: Vec<i64> = p.seq(e).map(|t| t.iter().filter_map(|&v| p.int(v)).collect()).unwrap_or_default();
        let &[u, v] = pair.as_slice() else { return Err(err("an edge that is not a pair of vertex ids")) };
        if u < 0 || v < 0 || u as usize >= n || v as usize >= n {
            return Err(err(&format!("edge ({u}, {v}) is outside the {n} vertices")));
        }
        edges.push((u as usize, v as usize));
    }
    let pickle::Node::Dict(attrs) = p.node(*vertex_attrs) else { return Err(err("the vertex attributes are not a dict")) };
    let (mut labels, mut names, mut columns) = (None, Vec::new(), Vec::new());
    for &(k, v) in attrs {
        let key = p.str(k).ok_or_else(|| err("a vertex attribute without a name"))?;
        let values: Vec<f64> = p
            .seq(v)
            .ok_or_else(|| err(&format!("vertex attribute `{key}` is not a list")))?
            .iter()
            .map(|&x| match p.node(x) {
                pickle::Node::Int(i) => Some(*i as f64),
                pickle::Node::Bool(b) => Some(f64::from(u8::from(*b))),
                pickle::Node::Float(f) => Some(*f),
                _ => None,
            })
            .collect::<Option<_>>()
            .ok_or_else(|| err(&format!("vertex attribute `{key}` holds a value that is not a number")))?;
        if values.len() != n {
            return Err(err(&format!("vertex attribute `{key}` has {} values for {n} vertices", values.len())));
        }
        match key.as_str() {
            "class" => labels = Some(values),
            "name" => {}
            _ => {
                names.push(key);
                columns.push(values);
            }
        }
    }
    if let Some(recipe) = recipe {
        columns = rgnn_tabular::apply(recipe, &names, &columns, &|m| err(m))?;
    }
    let labels: Vec<Option<u32>> = labels
        .ok_or_else(|| err("no `class` vertex attribute (the label)"))?
        .into_iter()
        .map(|y| (y >= 0.0 && y.fract() == 0.0 && y < f64::from(1u32 << 20)).then_some(y as u32))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| err("a `class` value that is not a small non-negative integer"))?
        .into_iter()
        .map(Some)
        .collect();
    let d = columns.len();
    let data: Vec<f32> = (0..n).flat_map(|r| columns.iter().map(move |c| c[r] as f32)).collect();
    let source = path.display().to_string();
    let (graph, build_report) = Graph::from_edges(n, edges, &source)?;
    let features = (d > 0).then_some(Features::Dense(DenseMatrix { rows: n, cols: d, data }));
    let notes = if d == 0 { vec![format!("no features: {} has no vertex attributes besides class and name", source)] } else { Vec::new() };
    let class_names = numbered_classes(class_count(&labels, path)?);
    finish(name, graph, build_report, features, labels, class_names, None, notes, &source)
}
