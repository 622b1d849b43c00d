//! A restricted reader of Python pickles, for the published raw files of Planetoid
//! (`ind.*`: numpy arrays, scipy CSR matrices, a defaultdict of lists), GraphData (npz
//! entries holding a pickled CSR matrix or dict) and RGNN (a pickled `igraph.Graph`).
//!
//! Nothing is executed: the opcodes build a tree of values in which a class or function
//! is only a name, a call is its name with its arguments, and `BUILD` attaches the state.
//! Only the globals the caller allows may appear; [`ndarray`] and [`csr_matrix`] then
//! read numpy's and scipy's reduce protocols from that tree. Values live in an arena so
//! that memoized objects stay shared, as they are in Python (a list appended to after it
//! was memoized is seen with its items wherever it is referenced).

use std::path::Path;

use super::CsrMatrix;
use super::npy::{self, DType, NpyArray};
use crate::error::{Error, Result};

/// A node of the value tree; children are indices into [`Pickle::nodes`].
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Bytes(Vec<u8>),
    Str(String),
    List(Vec<usize>),
    Tuple(Vec<usize>),
    Dict(Vec<(usize, usize)>),
    /// A class or function, by module and name.
    Global(String, String),
    /// `func(*args)` (REDUCE or NEWOBJ), with the state `BUILD` gave it and any items
    /// appended or set on it (a defaultdict's).
    Object {
        func: usize,
        args: usize,
        state: Option<usize>,
        list: Vec<usize>,
        dict: Vec<(usize, usize)>,
    },
}

impl Node {
    /// A string, or bytes read as UTF-8 (Python 2's `str`).
    fn text(&self) -> Option<String> {
        match self {
            Node::Str(s) => Some(s.clone()),
            Node::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }
}

/// A read pickle: the arena and the root.
#[derive(Debug)]
pub struct Pickle {
    pub nodes: Vec<Node>,
    pub root: usize,
}

/// Parse `bytes`, admitting only the `(module, name)` globals in `allowed`; `source` names
/// the file in errors.
pub fn parse(bytes: &[u8], allowed: &[(&str, &str)], source: &Path) -> Result<Pickle> {
    Parser {
        bytes,
        pos: 0,
        nodes: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: std::collections::HashMap::new(),
        allowed,
        source,
    }
    .run()
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    nodes: Vec<Node>,
    stack: Vec<usize>,
    marks: Vec<usize>,
    /// Python's memo is a dict: keys are whatever PUT says (a Vec indexed by them let a
    /// corrupt key of 2³² allocate 32 GiB), and MEMOIZE's key is its size.
    memo: std::collections::HashMap<usize, usize>,
    allowed: &'a [(&'a str, &'a str)],
    source: &'a Path,
}

impl Parser<'_> {
    fn err(&self, msg: impl std::fmt::Display) -> Error {
        Error::data_file(self.source, format!("pickle, byte {}: {msg}", self.pos))
    }

    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or_else(|| self.err("truncated"))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<usize> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]) as usize)
    }
    fn u32(&mut self) -> Result<usize> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    fn line(&mut self) -> Result<String> {
        let rest = &self.bytes[self.pos..];
        let n = rest.iter().position(|&b| b == b'\n').ok_or_else(|| self.err("unterminated text line"))?;
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.pos += n + 1;
        Ok(s)
    }

    fn push(&mut self, node: Node) {
        self.nodes.push(node);
        self.stack.push(self.nodes.len() - 1);
    }
    fn pop(&mut self) -> Result<usize> {
        self.stack.pop().ok_or_else(|| self.err("stack underflow"))
    }
    fn pop_mark(&mut self) -> Result<Vec<usize>> {
        let m = self.marks.pop().ok_or_else(|| self.err("no mark"))?;
        if m > self.stack.len() {
            return Err(self.err("mark past the stack"));
        }
        Ok(self.stack.split_off(m))
    }
    fn top(&self) -> Result<usize> {
        self.stack.last().copied().ok_or_else(|| self.err("empty stack"))
    }
    fn memo_put(&mut self, k: usize) -> Result<()> {
        let v = self.top()?;
        self.memo.insert(k, v);
        Ok(())
    }
    fn memo_get(&mut self, k: usize) -> Result<()> {
        let v = self.memo.get(&k).copied().ok_or_else(|| self.err(format!("memo key {k} was never stored")))?;
        self.stack.push(v);
        Ok(())
    }
    fn global(&mut self, module: String, name: String) -> Result<()> {
        if !self.allowed.iter().any(|&(m, n)| m == module && n == name) {
            return Err(self
                .err(format!("refers to `{module}.{name}`, which this reader does not admit (a file of another kind, or tampered with)")));
        }
        self.push(Node::Global(module, name));
        Ok(())
    }
    fn string(&self, id: usize) -> Result<String> {
        self.nodes[id].text().ok_or_else(|| self.err(format!("expected a string, found {:?}", self.nodes[id])))
    }
    /// Add `items` to the list (or object) `target`.
    fn extend(&mut self, target: usize, items: Vec<usize>) -> Result<()> {
        match &mut self.nodes[target] {
            Node::List(l) => l.extend(items),
            Node::Object { list, .. } => list.extend(items),
            _ => return Err(self.err("APPEND to something that is not a list")),
        }
        Ok(())
    }
    fn set_items(&mut self, target: usize, kv: Vec<usize>) -> Result<()> {
        if !kv.len().is_multiple_of(2) {
            return Err(self.err("SETITEMS with an odd number of values"));
        }
        let pairs: Vec<(usize, usize)> = kv.chunks(2).map(|c| (c[0], c[1])).collect();
        match &mut self.nodes[target] {
            Node::Dict(d) => d.extend(pairs),
            Node::Object { dict, .. } => dict.extend(pairs),
            _ => return Err(self.err("SETITEM on something that is not a dict")),
        }
        Ok(())
    }

    fn run(mut self) -> Result<Pickle> {
        loop {
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?; // PROTO
                }
                0x95 => {
                    self.take(8)?; // FRAME
                }
                b'.' => {
                    let root = self.pop()?;
                    return Ok(Pickle { nodes: self.nodes, root });
                }
                b'(' => self.marks.push(self.stack.len()),
                b'N' => self.push(Node::None),
                0x88 => self.push(Node::Bool(true)),
                0x89 => self.push(Node::Bool(false)),
                b'J' => {
                    let b = self.take(4)?;
                    let v = i32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                    self.push(Node::Int(v.into()));
                }
                b'K' => {
                    let v = self.u8()?;
                    self.push(Node::Int(v.into()));
                }
                b'M' => {
                    let v = self.u16()?;
                    self.push(Node::Int(v as i64));
                }
                0x8a => {
                    // LONG1: little-endian two's complement of n ≤ 8 bytes.
                    let n = self.u8()? as usize;
                    if n > 8 {
                        return Err(self.err("integer wider than 64 bits"));
                    }
                    let b = self.take(n)?.to_vec();
                    let mut v: i64 = 0;
                    for (i, &x) in b.iter().enumerate() {
                        v |= (x as i64) << (8 * i);
                    }
                    if n > 0 && n < 8 && b[n - 1] & 0x80 != 0 {
                        v -= 1i64 << (8 * n);
                    }
                    self.push(Node::Int(v));
                }
                b'G' => {
                    let v = f64::from_be_bytes(self.take(8)?.try_into().expect("8 bytes"));
                    self.push(Node::Float(v));
                }
                b'T' | b'B' => {
                    let n = self.u32()?;
                    let b = self.take(n)?.to_vec();
                    self.push(Node::Bytes(b));
                }
                b'U' | b'C' => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push(Node::Bytes(b));
                }
                b'X' => {
                    let n = self.u32()?;
                    let s = String::from_utf8(self.take(n)?.to_vec()).map_err(|_| self.err("invalid UTF-8 string"))?;
                    self.push(Node::Str(s));
                }
                0x8c => {
                    let n = self.u8()? as usize;
                    let s = String::from_utf8(self.take(n)?.to_vec()).map_err(|_| self.err("invalid UTF-8 string"))?;
                    self.push(Node::Str(s));
                }
                b']' => self.push(Node::List(Vec::new())),
                b'}' => self.push(Node::Dict(Vec::new())),
                b')' => self.push(Node::Tuple(Vec::new())),
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(Node::Tuple(items));
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    self.push(Node::List(items));
                }
                b'd' => {
                    let items = self.pop_mark()?;
                    self.push(Node::Dict(Vec::new()));
                    let d = self.top()?;
                    self.set_items(d, items)?;
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    if self.stack.len() < n {
                        return Err(self.err("stack underflow"));
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    self.push(Node::Tuple(items));
                }
                // APPEND one item / APPENDS the items since the mark.
                b'a' | b'e' => {
                    let items = if op == b'a' { vec![self.pop()?] } else { self.pop_mark()? };
                    let target = self.top()?;
                    self.extend(target, items)?;
                }
                // SETITEM one pair / SETITEMS the pairs since the mark.
                b's' | b'u' => {
                    let items = if op == b's' {
                        self.stack.split_off(self.stack.len().checked_sub(2).ok_or_else(|| self.err("stack underflow"))?)
                    } else {
                        self.pop_mark()?
                    };
                    let target = self.top()?;
                    self.set_items(target, items)?;
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.global(module, name)?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    let (module, name) = (self.string(module)?, self.string(name)?);
                    self.global(module, name)?;
                }
                b'R' | 0x81 => {
                    let args = self.pop()?;
                    let func = self.pop()?;
                    self.push(Node::Object { func, args, state: None, list: Vec::new(), dict: Vec::new() });
                }
                b'b' => {
                    let s = self.pop()?;
                    let target = self.top()?;
                    match &mut self.nodes[target] {
                        Node::Object { state, .. } => *state = Some(s),
                        _ => return Err(self.err("BUILD on something that is not an object")),
                    }
                }
                b'q' => {
                    let k = self.u8()? as usize;
                    self.memo_put(k)?;
                }
                b'r' => {
                    let k = self.u32()?;
                    self.memo_put(k)?;
                }
                0x94 => {
                    let k = self.memo.len();
                    self.memo_put(k)?;
                }
                b'h' => {
                    let k = self.u8()? as usize;
                    self.memo_get(k)?;
                }
                b'j' => {
                    let k = self.u32()?;
                    self.memo_get(k)?;
                }
                b'0' => {
                    self.pop()?;
                }
                other => return Err(self.err(format!("opcode 0x{other:02x} is not supported by this reader"))),
            }
        }
    }
}

impl Pickle {
    pub fn node(&self, id: usize) -> &Node {
        &self.nodes[id]
    }

    /// The items of a tuple or list.
    pub fn seq(&self, id: usize) -> Option<&[usize]> {
        match &self.nodes[id] {
            Node::Tuple(v) | Node::List(v) => Some(v),
            _ => None,
        }
    }

    pub fn int(&self, id: usize) -> Option<i64> {
        match self.nodes[id] {
            Node::Int(v) => Some(v),
            Node::Bool(b) => Some(b.into()),
            _ => None,
        }
    }

    pub fn str(&self, id: usize) -> Option<String> {
        self.nodes[id].text()
    }

    /// The value of key `key` (a string) in dict `id`.
    pub fn get(&self, id: usize, key: &str) -> Option<usize> {
        match &self.nodes[id] {
            Node::Dict(d) => d.iter().find(|(k, _)| self.str(*k).as_deref() == Some(key)).map(|&(_, v)| v),
            _ => None,
        }
    }

    /// `(module, name, args, state)` of an object made by calling a global.
    pub fn object(&self, id: usize) -> Option<(&str, &str, usize, Option<usize>)> {
        match &self.nodes[id] {
            Node::Object { func, args, state, .. } => match &self.nodes[*func] {
                Node::Global(m, n) => Some((m, n, *args, *state)),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The globals numpy arrays pickle with (Python 2's and 3's module names).
pub const NUMPY: &[(&str, &str)] =
    &[("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype")];

/// The globals of a scipy CSR matrix (module names of scipy < 1.8 and ≥ 1.8).
pub const SCIPY_CSR: &[(&str, &str)] = &[("scipy.sparse.csr", "csr_matrix"), ("scipy.sparse._csr", "csr_matrix")];

/// A numpy array pickled by its reduce protocol: `_reconstruct(ndarray, (0,), b'b')` with
/// the state `(version, shape, dtype, fortran, data)`.
pub fn ndarray(p: &Pickle, id: usize, source: &Path) -> Result<NpyArray> {
    let err = |m: &str| Error::data_file(source, format!("pickle: {m}"));
    let [_, shape, dtype, fortran, data] = array_state(p, id, source)?;
    let shape: Vec<usize> = p
        .seq(shape)
        .ok_or_else(|| err("shape"))?
        .iter()
        .map(|&d| p.int(d).map(|v| v as usize))
        .collect::<Option<_>>()
        .ok_or_else(|| err("shape"))?;
    if p.int(fortran) == Some(1) && shape.len() > 1 {
        return Err(err("Fortran-order arrays are not supported"));
    }
    // dtype('f4', False, True) with the state (3, '<', …).
    let (_, _, dargs, dstate) = p.object(dtype).filter(|o| o.1 == "dtype").ok_or_else(|| err("a numpy array without a dtype"))?;
    let code = p.seq(dargs).and_then(|a| a.first()).and_then(|&c| p.str(c)).ok_or_else(|| err("dtype code"))?;
    let order = dstate.and_then(|s| p.seq(s)).and_then(|s| s.get(1)).and_then(|&o| p.str(o)).unwrap_or_else(|| "|".into());
    if order == ">" {
        return Err(err("big-endian arrays are not supported"));
    }
    let descr = if order == "|" { format!("|{code}") } else { format!("<{code}") };
    let dt: DType = npy::parse_descr(&descr).map_err(|m| err(&m))?;
    let bytes = match p.node(data) {
        Node::Bytes(b) => b.clone(),
        // A Python 2 str read as text: its code points are the bytes (latin-1).
        Node::Str(s) => s.chars().map(|c| c as u32 as u8).collect(),
        _ => return Err(err("a numpy array's data is not a byte string")),
    };
    NpyArray::from_parts(dt, shape, bytes).map_err(|m| err(&m))
}

/// The items of a numpy object array (dtype `O`), whose pickled data is a list.
pub fn object_items(p: &Pickle, id: usize, source: &Path) -> Result<Vec<usize>> {
    let [.., data] = array_state(p, id, source)?;
    p.seq(data).map(<[usize]>::to_vec).ok_or_else(|| Error::data_file(source, "pickle: expected an object array (its data a list)"))
}

/// A pickled numpy array's state `(version, shape, dtype, fortran, data)`.
fn array_state(p: &Pickle, id: usize, source: &Path) -> Result<[usize; 5]> {
    let err = |m: &str| Error::data_file(source, format!("pickle: {m}"));
    let (_, _, _, state) = p.object(id).filter(|o| o.1 == "_reconstruct").ok_or_else(|| err("expected a numpy array"))?;
    let state =
        p.seq(state.ok_or_else(|| err("a numpy array without state"))?).ok_or_else(|| err("a numpy array's state is not a tuple"))?;
    <[usize; 5]>::try_from(state).map_err(|_| err("a numpy array's state is not (version, shape, dtype, fortran, data)"))
}

/// A numpy array of strings: fixed-width (`<U…`, `|S…`) or objects that are strings.
pub fn strings(p: &Pickle, id: usize, source: &Path) -> Result<Vec<String>> {
    if let Ok(items) = object_items(p, id, source) {
        return items
            .iter()
            .map(|&i| p.str(i).ok_or_else(|| Error::data_file(source, "pickle: an object array holding a non-string")))
            .collect();
    }
    ndarray(p, id, source)?.to_strings(&npy::Ctx { path: source, key: None })
}

/// A scipy CSR matrix: an object whose state holds `_shape`, `data`, `indices`, `indptr`.
/// Rows come back canonical (columns sorted, duplicates summed, zeros dropped).
pub fn csr_matrix(p: &Pickle, id: usize, source: &Path) -> Result<CsrMatrix> {
    let err = |m: String| Error::data_file(source, format!("pickle: {m}"));
    let (_, name, _, state) = p.object(id).ok_or_else(|| err("expected a scipy CSR matrix".into()))?;
    if name != "csr_matrix" {
        return Err(err(format!("expected a scipy CSR matrix, found `{name}`")));
    }
    let state = state.ok_or_else(|| err("a CSR matrix without state".into()))?;
    let field = |k: &str| p.get(state, k).ok_or_else(|| err(format!("a CSR matrix without `{k}`")));
    let shape: Vec<i64> = p.seq(field("_shape")?).map(|s| s.iter().filter_map(|&d| p.int(d)).collect()).unwrap_or_default();
    let &[rows, cols] = shape.as_slice() else { return Err(err("a CSR matrix's `_shape` is not (rows, cols)".into())) };
    let ctx = npy::Ctx { path: source, key: None };
    let indptr = ndarray(p, field("indptr")?, source)?.to_i64(&ctx)?;
    let indices = ndarray(p, field("indices")?, source)?.to_i64(&ctx)?;
    let values = ndarray(p, field("data")?, source)?.to_f32(&ctx)?;
    CsrMatrix::from_numpy(rows as usize, cols as usize, &indptr, &indices, &values).map_err(|m| err(format!("a CSR matrix: {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(h: &str) -> Vec<u8> {
        (0..h.len()).step_by(2).map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap()).collect()
    }

    /// Python 3's `pickle.dumps(x, protocol=2)` for `l = [1, -2, 300, 70000]`,
    /// `x = (l, ({'a': (None, True)}, ('é', 2.5, l)))`: the list is memoized before its
    /// items are appended, and the second reference is the same node with its items.
    #[test]
    fn protocol_2_builds_a_shared_tree() {
        let b = unhex(
            "80025d7100284b014afeffffff4d2c014a70110100657d710158010000006171024e88867103735802000000c3a9710447400400000000000068008771058671068671072e",
        );
        let p = parse(&b, &[], Path::new("t")).unwrap();
        let top = p.seq(p.root).unwrap();
        let list = p.seq(top[0]).unwrap();
        assert_eq!(list.iter().map(|&i| p.int(i).unwrap()).collect::<Vec<_>>(), [1, -2, 300, 70000]);
        let inner = p.seq(top[1]).unwrap();
        let a = p.get(inner[0], "a").unwrap();
        assert_eq!(p.seq(a).unwrap().iter().map(|&i| p.node(i).clone()).collect::<Vec<_>>(), [Node::None, Node::Bool(true)]);
        let third = p.seq(inner[1]).unwrap();
        assert_eq!(p.str(third[0]).unwrap(), "é");
        assert_eq!(p.node(third[1]), &Node::Float(2.5));
        assert_eq!(third[2], top[0]);
    }

    /// Found by tests/fuzz.rs: LONG_BINPUT with key 0xFFFFFFF0 resized a memo vector to
    /// 2³² slots (32 GiB, an abort). The memo is a dict, as Python's: any key, and
    /// MEMOIZE keys by its size. `(1, 1, 2, 2)` built as [K 1, PUT 0xFFFFFFF0, GET it,
    /// K 2, MEMOIZE (key 1 = size), GET 1, TUPLE3].
    #[test]
    fn memo_keys_are_a_dict_not_an_index() {
        let b = b"\x80\x04(K\x01r\xf0\xff\xff\xffj\xf0\xff\xff\xffK\x02\x94j\x01\x00\x00\x00t.";
        let p = parse(b, &[], Path::new("m.pkl")).unwrap();
        let items: Vec<i64> = p.seq(p.root).unwrap().iter().map(|&i| p.int(i).unwrap()).collect();
        assert_eq!(items, [1, 1, 2, 2]);
        let e = parse(b"\x80\x02K\x01j\x07\x00\x00\x00.", &[], Path::new("m.pkl")).unwrap_err().to_string();
        assert!(e.contains("m.pkl") && e.contains("memo key 7"), "{e}");
    }

    /// `pickle.dumps((collections.OrderedDict(), -(2**40), 2**63 - 1), protocol=4)`:
    /// FRAME, STACK_GLOBAL, MEMOIZE, LONG1.
    #[test]
    fn protocol_4_frames_stack_globals_and_long_integers() {
        let b = unhex(
            "80049536000000000000008c0b636f6c6c656374696f6e73948c0b4f726465726564446963749493942952948a060000000000ff8a08ffffffffffffff7f87942e",
        );
        let e = parse(&b, &[], Path::new("t.pkl")).unwrap_err().to_string();
        assert!(e.contains("`collections.OrderedDict`"), "{e}");
        let p = parse(&b, &[("collections", "OrderedDict")], Path::new("t")).unwrap();
        let t = p.seq(p.root).unwrap();
        assert_eq!(p.object(t[0]).map(|o| (o.0, o.1)), Some(("collections", "OrderedDict")));
        assert_eq!((p.int(t[1]), p.int(t[2])), (Some(-(1 << 40)), Some(i64::MAX)));
    }

    #[test]
    fn unknown_globals_and_truncation_are_errors() {
        let e = parse(b"\x80\x02cos\nsystem\n.", &[], Path::new("f.pkl")).unwrap_err().to_string();
        assert!(e.contains("f.pkl") && e.contains("`os.system`") && e.contains("does not admit"), "{e}");
        let e = parse(b"\x80\x02X\x09\x00\x00\x00ab", &[], Path::new("f.pkl")).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
        let e = parse(b"\x80\x02\xff", &[], Path::new("f.pkl")).unwrap_err().to_string();
        assert!(e.contains("opcode 0xff"), "{e}");
    }
}
