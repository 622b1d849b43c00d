//! Reader for NumPy `.npy` arrays and `.npz` archives.
//!
//! Only what graph datasets use: little-endian numeric arrays, booleans and fixed-width
//! strings in C order (format versions 1.0, 2.0 and 3.0). Object arrays (`|O`, i.e.
//! pickles) and Fortran order are refused with a message that says so, because reading
//! them would need a Python unpickler or a transpose we never want to guess.
//!
//! Every failure is an [`Error::DataFile`] naming the file and the array key. Sizes in a
//! header are checked against the bytes actually present before anything is allocated
//! from them, so a lying header cannot trigger a huge allocation.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Element type of an array, as given by the header's `descr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    /// Fixed-width UTF-32 string of this many code points (`<U7`).
    Unicode(usize),
    /// Fixed-width byte string of this many bytes (`|S7`).
    Bytes(usize),
}

impl DType {
    /// Bytes per element (`None` when a string width overflows).
    fn item_size(self) -> Option<usize> {
        Some(match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
            DType::Unicode(n) => n.checked_mul(4)?,
            DType::Bytes(n) => n,
        })
    }

    /// NumPy's name for the type, for messages.
    pub fn name(self) -> String {
        match self {
            DType::Bool => "bool".into(),
            DType::I8 => "int8".into(),
            DType::I16 => "int16".into(),
            DType::I32 => "int32".into(),
            DType::I64 => "int64".into(),
            DType::U8 => "uint8".into(),
            DType::U16 => "uint16".into(),
            DType::U32 => "uint32".into(),
            DType::U64 => "uint64".into(),
            DType::F32 => "float32".into(),
            DType::F64 => "float64".into(),
            DType::Unicode(n) => format!("unicode string <U{n}"),
            DType::Bytes(n) => format!("byte string |S{n}"),
        }
    }

    fn is_integer(self) -> bool {
        matches!(self, DType::Bool | DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    fn is_numeric(self) -> bool {
        self.is_integer() || matches!(self, DType::F32 | DType::F64)
    }
}

const SUPPORTED: &str = "supported dtypes: <f4 <f8 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8 |b1 <U<n> |S<n>";

/// A parsed array: element type, shape (C order) and the raw little-endian data.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyArray {
    pub dtype: DType,
    pub shape: Vec<usize>,
    data: Vec<u8>,
}

impl NpyArray {
    /// An array from its parts (a `.npy` image's, or a pickled numpy array's), checked for
    /// size.
    pub fn from_parts(dtype: DType, shape: Vec<usize>, data: Vec<u8>) -> std::result::Result<Self, String> {
        let item = dtype.item_size().ok_or("string width overflows")?;
        let expected = shape.iter().try_fold(item, |acc, &d| acc.checked_mul(d)).ok_or_else(|| format!("shape {shape:?} overflows"))?;
        if data.len() != expected {
            return Err(format!(
                "shape {shape:?} of {} needs {expected} data bytes, found {} (truncated or corrupt)",
                dtype.name(),
                data.len()
            ));
        }
        Ok(NpyArray { dtype, shape, data })
    }

    /// Number of elements (product of the shape; 1 for a 0-d array).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as `i64`; any integer (or bool) dtype is widened. Floats are refused
    /// rather than truncated, since an index array stored as float is a broken file.
    pub fn to_i64(&self, ctx: &Ctx<'_>) -> Result<Vec<i64>> {
        let d = &self.data;
        Ok(match self.dtype {
            DType::Bool | DType::U8 => d.iter().map(|&b| i64::from(b)).collect(),
            DType::I8 => d.iter().map(|&b| i64::from(b as i8)).collect(),
            DType::I16 => d.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect(),
            DType::U16 => d.chunks_exact(2).map(|c| i64::from(u16::from_le_bytes([c[0], c[1]]))).collect(),
            DType::I32 => d.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes(arr4(c)))).collect(),
            DType::U32 => d.chunks_exact(4).map(|c| i64::from(u32::from_le_bytes(arr4(c)))).collect(),
            DType::I64 => d.chunks_exact(8).map(|c| i64::from_le_bytes(arr8(c))).collect(),
            DType::U64 => {
                let mut out = Vec::with_capacity(self.len());
                for (i, c) in d.chunks_exact(8).enumerate() {
                    let v = u64::from_le_bytes(arr8(c));
                    out.push(i64::try_from(v).map_err(|_| ctx.err(format!("element {i} = {v} does not fit in int64")))?);
                }
                out
            }
            other => return Err(ctx.err(format!("expected an integer array, found {}", other.name()))),
        })
    }

    /// The elements as `f32`; every numeric dtype is converted (float64 and wide integers
    /// round to the nearest f32).
    pub fn to_f32(&self, ctx: &Ctx<'_>) -> Result<Vec<f32>> {
        if self.dtype == DType::F32 {
            return Ok(self.data.chunks_exact(4).map(|c| f32::from_le_bytes(arr4(c))).collect());
        }
        if self.dtype == DType::F64 {
            return Ok(self.data.chunks_exact(8).map(|c| f64::from_le_bytes(arr8(c)) as f32).collect());
        }
        if !self.dtype.is_numeric() {
            return Err(ctx.err(format!("expected a numeric array, found {}", self.dtype.name())));
        }
        Ok(self.to_i64(ctx)?.into_iter().map(|v| v as f32).collect())
    }

    /// The elements of a string array (`<U<n>` or `|S<n>`), trailing NULs removed.
    pub fn to_strings(&self, ctx: &Ctx<'_>) -> Result<Vec<String>> {
        match self.dtype {
            DType::Unicode(n) => {
                let mut out = Vec::with_capacity(self.len());
                if n == 0 {
                    out.resize(self.len(), String::new());
                    return Ok(out);
                }
                for (i, item) in self.data.chunks_exact(4 * n).enumerate() {
                    let mut s = String::new();
                    for c in item.chunks_exact(4) {
                        let cp = u32::from_le_bytes(arr4(c));
                        if cp == 0 {
                            break;
                        }
                        let ch = char::from_u32(cp).ok_or_else(|| ctx.err(format!("element {i} holds invalid code point {cp:#x}")))?;
                        s.push(ch);
                    }
                    out.push(s);
                }
                Ok(out)
            }
            DType::Bytes(n) => {
                let mut out = Vec::with_capacity(self.len());
                if n == 0 {
                    out.resize(self.len(), String::new());
                    return Ok(out);
                }
                for (i, item) in self.data.chunks_exact(n).enumerate() {
                    let end = item.iter().position(|&b| b == 0).unwrap_or(n);
                    let s = std::str::from_utf8(&item[..end]).map_err(|_| ctx.err(format!("element {i} is not valid UTF-8")))?;
                    out.push(s.to_owned());
                }
                Ok(out)
            }
            other => Err(ctx.err(format!("expected a string array, found {}", other.name()))),
        }
    }
}

fn arr4(c: &[u8]) -> [u8; 4] {
    [c[0], c[1], c[2], c[3]]
}

fn arr8(c: &[u8]) -> [u8; 8] {
    [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]
}

/// Where an array came from, for error messages: the file and, inside an `.npz`, the key.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    pub path: &'a Path,
    pub key: Option<&'a str>,
}

impl Ctx<'_> {
    pub fn err(&self, msg: impl AsRef<str>) -> Error {
        match self.key {
            Some(k) => Error::data_file(self.path, format!("array `{k}`: {}", msg.as_ref())),
            None => Error::data_file(self.path, msg.as_ref().to_string()),
        }
    }
}

/// Parse a complete `.npy` byte image.
pub fn parse_npy(bytes: &[u8], ctx: &Ctx<'_>) -> Result<NpyArray> {
    let (h, data) = split_npy(bytes, ctx)?;
    if h.descr == "|O" {
        return Err(ctx.err("holds pickled Python objects, not numbers or strings"));
    }
    if h.fortran_order {
        return Err(ctx.err("Fortran-order arrays are not supported (save with C order, e.g. np.ascontiguousarray)"));
    }
    let dtype = parse_descr(&h.descr).map_err(|m| ctx.err(m))?;
    NpyArray::from_parts(dtype, h.shape, data.to_vec()).map_err(|m| ctx.err(m))
}

/// The pickle inside an object array's `.npy` image (numpy saves `|O` arrays by pickling
/// the whole array).
pub fn object_payload<'b>(bytes: &'b [u8], ctx: &Ctx<'_>) -> Result<&'b [u8]> {
    let (h, data) = split_npy(bytes, ctx)?;
    if h.descr != "|O" {
        return Err(ctx.err(format!("expected an object array (a pickle), found dtype {}", h.descr)));
    }
    Ok(data)
}

/// The header and the data of a `.npy` image.
fn split_npy<'b>(bytes: &'b [u8], ctx: &Ctx<'_>) -> Result<(Header, &'b [u8])> {
    const MAGIC: &[u8] = b"\x93NUMPY";
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(ctx.err("not a .npy array (missing the \\x93NUMPY magic or truncated)"));
    }
    let (major, minor) = (bytes[6], bytes[7]);
    let (header_len, start): (usize, usize) = match major {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 => {
            if bytes.len() < 12 {
                return Err(ctx.err("truncated .npy header"));
            }
            (u32::from_le_bytes(arr4(&bytes[8..12])) as usize, 12)
        }
        _ => return Err(ctx.err(format!("unsupported .npy format version {major}.{minor} (1.0, 2.0, 3.0 are supported)"))),
    };
    let end = start
        .checked_add(header_len)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| ctx.err(format!("header claims {header_len} bytes but the array has only {}", bytes.len() - start)))?;
    let header = std::str::from_utf8(&bytes[start..end]).map_err(|_| ctx.err("header is not valid text"))?;
    let h = parse_header(header).map_err(|m| ctx.err(format!("bad header {:?}: {m}", header.trim_end())))?;
    Ok((h, &bytes[end..]))
}

/// Read a standalone `.npy` file.
pub fn read_npy(path: &Path) -> Result<NpyArray> {
    let bytes = std::fs::read(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    parse_npy(&bytes, &Ctx { path, key: None })
}

struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

/// Parse the header, a Python dict literal such as
/// `{'descr': '<f4', 'fortran_order': False, 'shape': (4715,), }`.
fn parse_header(s: &str) -> std::result::Result<Header, String> {
    let mut p = Lexer { s: s.as_bytes(), i: 0 };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key.as_str() {
            "descr" => {
                p.skip_ws();
                if p.peek() == Some(b'[') {
                    return Err("structured (record) dtypes are not supported".into());
                }
                descr = Some(p.string()?);
            }
            "fortran_order" => fortran = Some(p.boolean()?),
            "shape" => shape = Some(p.tuple()?),
            other => return Err(format!("unexpected key '{other}'")),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    Ok(Header {
        descr: descr.ok_or("missing 'descr'")?,
        fortran_order: fortran.ok_or("missing 'fortran_order'")?,
        shape: shape.ok_or("missing 'shape'")?,
    })
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl Lexer<'_> {
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, c: u8) -> std::result::Result<(), String> {
        if self.eat(c) { Ok(()) } else { Err(format!("expected '{}' at offset {}", c as char, self.i)) }
    }
    fn string(&mut self) -> std::result::Result<String, String> {
        self.skip_ws();
        let q = match self.peek() {
            Some(q @ (b'\'' | b'"')) => q,
            _ => return Err(format!("expected a quoted string at offset {}", self.i)),
        };
        let start = self.i + 1;
        let len = self.s[start..].iter().position(|&b| b == q).ok_or("unterminated string")?;
        self.i = start + len + 1;
        Ok(String::from_utf8_lossy(&self.s[start..start + len]).into_owned())
    }
    fn word(&mut self) -> &[u8] {
        self.skip_ws();
        let start = self.i;
        while self.i < self.s.len() && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_') {
            self.i += 1;
        }
        &self.s[start..self.i]
    }
    fn boolean(&mut self) -> std::result::Result<bool, String> {
        match self.word() {
            b"True" => Ok(true),
            b"False" => Ok(false),
            w => Err(format!("expected True or False, found '{}'", String::from_utf8_lossy(w))),
        }
    }
    fn tuple(&mut self) -> std::result::Result<Vec<usize>, String> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            let w = self.word();
            // Python 2 headers may write long integers as `123L`.
            let w = w.strip_suffix(b"L").unwrap_or(w);
            let d = std::str::from_utf8(w)
                .ok()
                .and_then(|t| t.parse::<usize>().ok())
                .ok_or_else(|| format!("bad dimension '{}' in shape", String::from_utf8_lossy(w)))?;
            dims.push(d);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

/// Map a `descr` string such as `<i4` to a [`DType`].
pub(crate) fn parse_descr(descr: &str) -> std::result::Result<DType, String> {
    let (order, rest) = match descr.as_bytes().first() {
        Some(&c @ (b'<' | b'>' | b'|' | b'=')) => (c, &descr[1..]),
        _ => (b'|', descr),
    };
    let kind = rest.chars().next().ok_or_else(|| format!("empty dtype '{descr}'"))?;
    if kind == 'O' {
        return Err(format!(
            "dtype '{descr}' is a pickled Python object array; it cannot be read without unpickling \
             (re-save it as plain numeric arrays)"
        ));
    }
    let width: usize = rest[kind.len_utf8()..].parse().map_err(|_| format!("unsupported dtype '{descr}' ({SUPPORTED})"))?;
    let dtype = match (kind, width) {
        ('b', 1) => DType::Bool,
        ('i', 1) => DType::I8,
        ('i', 2) => DType::I16,
        ('i', 4) => DType::I32,
        ('i', 8) => DType::I64,
        ('u', 1) => DType::U8,
        ('u', 2) => DType::U16,
        ('u', 4) => DType::U32,
        ('u', 8) => DType::U64,
        ('f', 4) => DType::F32,
        ('f', 8) => DType::F64,
        ('U', n) => DType::Unicode(n),
        ('S', n) => DType::Bytes(n),
        _ => return Err(format!("unsupported dtype '{descr}' ({SUPPORTED})")),
    };
    let multi_byte = !matches!(dtype, DType::Bool | DType::I8 | DType::U8 | DType::Bytes(_));
    if order == b'>' && multi_byte {
        return Err(format!("big-endian dtype '{descr}' is not supported (little-endian only)"));
    }
    Ok(dtype)
}

/// An open `.npz` archive. Keys are the entry names without the `.npy` suffix.
pub struct NpzArchive {
    path: PathBuf,
    zip: zip::ZipArchive<BufReader<File>>,
    /// (key, entry name), in archive order.
    entries: Vec<(String, String)>,
}

impl std::fmt::Debug for NpzArchive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NpzArchive").field("path", &self.path).field("keys", &self.keys()).finish()
    }
}

impl NpzArchive {
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).map_err(|e| Error::data_file(path, format!("cannot open: {e}")))?;
        let zip = zip::ZipArchive::new(BufReader::new(file))
            .map_err(|e| Error::data_file(path, format!("not a readable .npz (zip) archive, possibly truncated: {e}")))?;
        let entries = zip.file_names().map(|n| (n.strip_suffix(".npy").unwrap_or(n).to_string(), n.to_string())).collect();
        Ok(NpzArchive { path: path.to_path_buf(), zip, entries })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The array keys, in archive order.
    pub fn keys(&self) -> Vec<&str> {
        self.entries.iter().map(|(k, _)| k.as_str()).collect()
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// Read and parse one array.
    pub fn read(&mut self, key: &str) -> Result<NpyArray> {
        let buf = self.read_entry(key)?;
        parse_npy(&buf, &Ctx { path: &self.path, key: Some(key) })
    }

    /// The pickle of a 0-d object array (GraphData's matrices and metadata).
    pub fn read_object_payload(&mut self, key: &str) -> Result<Vec<u8>> {
        let buf = self.read_entry(key)?;
        Ok(object_payload(&buf, &Ctx { path: &self.path, key: Some(key) })?.to_vec())
    }

    /// The bytes of entry `key`.
    fn read_entry(&mut self, key: &str) -> Result<Vec<u8>> {
        let ctx = Ctx { path: &self.path, key: Some(key) };
        let Some((_, name)) = self.entries.iter().find(|(k, _)| k == key) else {
            return Err(ctx.err(format!("missing (the archive has: {})", self.keys().join(", "))));
        };
        let mut entry = self.zip.by_name(name).map_err(|e| ctx.err(format!("cannot open entry: {e}")))?;
        let declared = entry.size();
        // Grow with the data actually decoded, never from the declared size alone, and stop
        // one byte past it so an entry longer than declared is detected, not read forever.
        let mut buf = Vec::with_capacity(usize::try_from(declared.min(1 << 26)).unwrap_or(0));
        (&mut entry)
            .take(declared.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| ctx.err(format!("cannot read entry (truncated or corrupt archive): {e}")))?;
        if buf.len() as u64 != declared {
            return Err(ctx.err(format!("entry holds {} bytes, its zip header says {declared}", buf.len())));
        }
        drop(entry);
        Ok(buf)
    }

    /// Shape of an array (reads and parses the entry).
    pub fn shape(&mut self, key: &str) -> Result<Vec<usize>> {
        Ok(self.read(key)?.shape)
    }

    /// A 1-d array (or a 0-d scalar) as `i64`; any integer dtype is widened.
    pub fn read_i64(&mut self, key: &str) -> Result<Vec<i64>> {
        let a = self.read_1d(key)?;
        a.to_i64(&Ctx { path: &self.path, key: Some(key) })
    }

    /// A 1-d array as `f32`; any numeric dtype is converted.
    pub fn read_f32(&mut self, key: &str) -> Result<Vec<f32>> {
        let a = self.read_1d(key)?;
        a.to_f32(&Ctx { path: &self.path, key: Some(key) })
    }

    /// A 1-d string array (`<U<n>` or `|S<n>`).
    pub fn read_strings(&mut self, key: &str) -> Result<Vec<String>> {
        let a = self.read_1d(key)?;
        a.to_strings(&Ctx { path: &self.path, key: Some(key) })
    }

    fn read_1d(&mut self, key: &str) -> Result<NpyArray> {
        let a = self.read(key)?;
        if a.shape.len() > 1 {
            return Err(Ctx { path: &self.path, key: Some(key) }.err(format!("expected a 1-d array, found shape {:?}", a.shape)));
        }
        Ok(a)
    }
}

/// Build a version-1.0 `.npy` image the way NumPy does (header padded to 64 bytes).
pub fn npy_bytes(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_s = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_s}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

#[cfg(test)]
mod tests {
    use super::npy_bytes as npy;
    use super::*;
    use std::io::Write;

    fn ctx() -> Ctx<'static> {
        Ctx { path: Path::new("x.npy"), key: Some("k") }
    }

    #[test]
    fn numeric_dtypes_widen_and_convert() {
        let a = parse_npy(&npy("|i1", &[3], &[0xff, 0, 5]), &ctx()).unwrap();
        assert_eq!(a.to_i64(&ctx()).unwrap(), vec![-1, 0, 5]);
        let d: Vec<u8> = [7i32, -2].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = parse_npy(&npy("<i4", &[2], &d), &ctx()).unwrap();
        assert_eq!(a.to_i64(&ctx()).unwrap(), vec![7, -2]);
        assert_eq!(a.to_f32(&ctx()).unwrap(), vec![7.0, -2.0]);
        let d: Vec<u8> = [1.5f64, -0.25].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = parse_npy(&npy("<f8", &[2, 1], &d), &ctx()).unwrap();
        assert_eq!(a.shape, vec![2, 1]);
        assert_eq!(a.to_f32(&ctx()).unwrap(), vec![1.5, -0.25]);
        let e = a.to_i64(&ctx()).unwrap_err().to_string();
        assert!(e.contains("x.npy") && e.contains("`k`") && e.contains("float64"), "{e}");
        let d: Vec<u8> = [u64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
        let a = parse_npy(&npy("<u8", &[1], &d), &ctx()).unwrap();
        assert!(a.to_i64(&ctx()).is_err());
        let a = parse_npy(&npy("<i8", &[], &5i64.to_le_bytes()), &ctx()).unwrap();
        assert_eq!(a.to_i64(&ctx()).unwrap(), vec![5]);
    }

    #[test]
    fn unicode_strings() {
        let mut d = Vec::new();
        for s in ["ab", "été"] {
            let mut cps: Vec<u32> = s.chars().map(|c| c as u32).collect();
            cps.resize(3, 0);
            d.extend(cps.iter().flat_map(|c| c.to_le_bytes()));
        }
        let a = parse_npy(&npy("<U3", &[2], &d), &ctx()).unwrap();
        assert_eq!(a.to_strings(&ctx()).unwrap(), vec!["ab", "été"]);
    }

    #[test]
    fn malformed_headers_are_errors() {
        let bad = [
            npy("|O", &[], &[0; 8]),
            npy("<c8", &[1], &[0; 8]),
            npy(">i4", &[1], &[0; 4]),
            npy("<i4", &[3], &[0; 8]),              // too little data
            npy("<i4", &[usize::MAX, 2], &[0; 8]),  // overflowing shape
            b"\x93NUMPY\x01\x00\xff\xff{".to_vec(), // header longer than file
            b"garbage".to_vec(),
        ];
        for b in &bad {
            let e = parse_npy(b, &ctx()).unwrap_err().to_string();
            assert!(e.contains("x.npy"), "{e}");
        }
        let e = parse_npy(&npy("|O", &[], &[0; 8]), &ctx()).unwrap_err().to_string();
        assert!(e.contains("pickled"), "{e}");
        let mut f = npy("<i4", &[1], &[0; 4]);
        let pos = f.windows(5).position(|w| w == b"False").unwrap();
        f[pos..pos + 5].copy_from_slice(b"True ");
        let e = parse_npy(&f, &ctx()).unwrap_err().to_string();
        assert!(e.contains("Fortran"), "{e}");
    }

    #[test]
    fn truncations_and_byte_flips_never_panic() {
        let good = npy("<U2", &[2], &[0x61, 0, 0, 0, 0, 0, 0, 0, 0x62, 0, 0, 0, 0x63, 0, 0, 0]);
        for k in 0..good.len() {
            assert!(parse_npy(&good[..k], &ctx()).is_err(), "prefix of {k} bytes accepted");
        }
        for i in 0..good.len() {
            for x in [0x00, 0xff, b'(', b'\''] {
                let mut b = good.clone();
                b[i] = x;
                if let Ok(a) = parse_npy(&b, &ctx()) {
                    let _ = (a.to_strings(&ctx()), a.to_i64(&ctx()), a.to_f32(&ctx()));
                }
            }
        }
        // A shape that claims far more data than present is refused before allocating.
        let e = parse_npy(&npy("<f8", &[1 << 40], &[0; 8]), &ctx()).unwrap_err().to_string();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn npz_roundtrip_stored_and_deflated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.npz");
        let mut z = zip::ZipWriter::new(File::create(&path).unwrap());
        let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        let deflated = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        z.start_file("x.npy", stored).unwrap();
        z.write_all(&npy("<i8", &[2], &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0])).unwrap();
        z.start_file("y.npy", deflated).unwrap();
        z.write_all(&npy("<f4", &[1], &2.5f32.to_le_bytes())).unwrap();
        z.finish().unwrap();
        let mut a = NpzArchive::open(&path).unwrap();
        assert_eq!(a.keys(), vec!["x", "y"]);
        assert!(a.has("x") && !a.has("z"));
        assert_eq!(a.read_i64("x").unwrap(), vec![1, 2]);
        assert_eq!(a.read_f32("y").unwrap(), vec![2.5]);
        assert_eq!(a.shape("x").unwrap(), vec![2]);
        let e = a.read_i64("z").unwrap_err().to_string();
        assert!(e.contains("a.npz") && e.contains("`z`") && e.contains("missing"), "{e}");
        assert!(a.read_strings("x").is_err());

        let bytes = std::fs::read(&path).unwrap();
        let cut = dir.path().join("cut.npz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let e = NpzArchive::open(&cut).unwrap_err().to_string();
        assert!(e.contains("cut.npz"), "{e}");
    }
}
