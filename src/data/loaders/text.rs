//! Shared helpers: reading text files and CSV, locating and parsing cells, and the
//! two-column edge CSV used by several formats.

use std::fmt;
use std::path::Path;

use super::file_name;
use crate::error::{Error, Result};

/// Read a whole text file: missing, empty and non-UTF-8 files are errors that say so.
/// A UTF-8 byte-order mark is dropped.
pub(super) fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::data_file(path, "file is empty"));
    }
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.starts_with('\u{feff}') {
                s.drain(..3);
            }
            Ok(s)
        }
        Err(e) => {
            let pos = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(Error::data_file(path, format!("is not valid UTF-8 text (first bad byte on line {line}, byte offset {pos})")))
        }
    }
}

/// Fields are trimmed where they are parsed: the csv crate's own `Trim::All` costs about
/// 8x the parse time on Facebook's 171k-row edge list.
pub(super) fn csv_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes())
}

fn csv_error(path: &Path, text: &str, e: csv::Error) -> Error {
    let msg = match e.kind() {
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map_or_else(|| "?".to_string(), |p| Loc { text, byte: p.byte() }.to_string());
            format!("line {line}: {len} fields, but the header has {expected_len}")
        }
        _ => format!("malformed CSV: {e}"),
    };
    Error::data_file(path, msg)
}

pub(super) fn csv_headers(path: &Path, text: &str, rdr: &mut csv::Reader<&[u8]>) -> Result<Vec<String>> {
    let h = rdr.headers().map_err(|e| csv_error(path, text, e))?;
    Ok(h.iter().map(|f| f.trim().to_string()).collect())
}

pub(super) fn next_record(path: &Path, text: &str, rdr: &mut csv::Reader<&[u8]>, rec: &mut csv::StringRecord) -> Result<bool> {
    rdr.read_record(rec).map_err(|e| csv_error(path, text, e))
}

/// A record's place in its file; displays as the 1-based line number. Computed from the
/// byte offset only when an error is formatted (the csv crate's own line counter is off
/// by one after CRLF line ends).
#[derive(Clone, Copy)]
pub(super) struct Loc<'a> {
    text: &'a str,
    byte: u64,
}

impl<'a> Loc<'a> {
    pub(super) fn of(text: &'a str, rec: &csv::StringRecord) -> Self {
        Loc { text, byte: rec.position().map_or(0, |p| p.byte()) }
    }
}

impl fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.text.as_bytes();
        // A record may start on the '\n' left over from the previous line's "\r\n".
        let mut start = usize::try_from(self.byte).unwrap_or(usize::MAX).min(bytes.len());
        while start < bytes.len() && matches!(bytes[start], b'\r' | b'\n') {
            start += 1;
        }
        let line = bytes[..start].iter().filter(|&&b| b == b'\n').count() + 1;
        write!(f, "{line}")
    }
}

pub(super) fn column(path: &Path, headers: &[String], name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| Error::data_file(path, format!("missing column `{name}` (header is {})", headers.join(","))))
}

pub(super) fn parse_index(path: &Path, line: Loc<'_>, col: &str, s: &str) -> Result<usize> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| Error::data_file(path, format!("line {line}, column `{col}`: {s:?} is not a non-negative integer")))
}

pub(super) fn parse_number(path: &Path, line: Loc<'_>, col: &str, s: &str) -> Result<f32> {
    s.trim()
        .parse::<f32>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| Error::data_file(path, format!("line {line}, column `{col}`: {s:?} is not a finite number")))
}

/// Two-column edge CSV whose header is one of `headers`; ids must be below `n` (the row
/// count of `nodes_file`, named in the error).
pub(super) fn read_edge_csv(path: &Path, headers: &[[&str; 2]], n: usize, nodes_file: &Path) -> Result<Vec<(usize, usize)>> {
    let text = read_text(path)?;
    let mut rdr = csv_reader(&text);
    let h = csv_headers(path, &text, &mut rdr)?;
    if !headers.iter().any(|e| h.len() == 2 && h[0] == e[0] && h[1] == e[1]) {
        let allowed: Vec<String> = headers.iter().map(|e| e.join(",")).collect();
        return Err(Error::data_file(path, format!("header is {:?}, expected {}", h.join(","), allowed.join(" or "))));
    }
    let mut edges = Vec::with_capacity(text.len() / 12);
    let mut rec = csv::StringRecord::new();
    while next_record(path, &text, &mut rdr, &mut rec)? {
        let line = Loc::of(&text, &rec);
        let u = parse_index(path, line, &h[0], &rec[0])?;
        let v = parse_index(path, line, &h[1], &rec[1])?;
        if u >= n || v >= n {
            return Err(Error::data_file(
                path,
                format!(
                    "line {line}: edge ({u}, {v}) points past the node count {n} of {} (ids must be 0..{})",
                    file_name(nodes_file),
                    n.saturating_sub(1)
                ),
            ));
        }
        edges.push((u, v));
    }
    Ok(edges)
}
