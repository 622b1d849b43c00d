//! A minimal 7z reader: enough for the archive PubMed's features are published in
//! (`pubmed.7z`, see the data README §8) and for archives like it — folders of one LZMA,
//! LZMA2 or Copy coder, an encoded (compressed) header or a plain one, several files per
//! folder (solid). Filters chains (BCJ, …), encryption and multi-coder folders are
//! refused with an error naming what the archive uses.
//!
//! Format: 7-Zip's `7zFormat.txt`. Numbers use 7z's variable-length encoding; LZMA
//! streams are decoded by liblzma (its raw LZMA1 / LZMA2 decoders, with the coder's
//! properties from the header).

use std::path::Path;

use crate::error::{Error, Result};

const SIGNATURE: &[u8] = b"7z\xbc\xaf\x27\x1c";

/// The files of a 7z archive, `(name, contents)`, in archive order.
pub fn extract(bytes: &[u8], source: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let err = |m: String| Error::data_file(source, format!("7z archive: {m}"));
    if bytes.len() < 32 || &bytes[..6] != SIGNATURE {
        return Err(err("not a 7z archive (no signature)".into()));
    }
    let next_offset = u64::from_le_bytes(bytes[12..20].try_into().expect("8")) as usize;
    let next_size = u64::from_le_bytes(bytes[20..28].try_into().expect("8")) as usize;
    let start = 32usize
        .checked_add(next_offset)
        .filter(|&s| s.checked_add(next_size).is_some_and(|e| e <= bytes.len()))
        .ok_or_else(|| err("truncated".into()))?;
    let mut header = bytes[start..start + next_size].to_vec();
    loop {
        let mut r = Reader { b: &header, pos: 0, source };
        match r.byte()? {
            0x01 => return r.header(bytes),
            0x17 => {
                // Encoded header: streams info whose one folder unpacks to the real header.
                let info = r.streams_info()?;
                let mut out = info.unpack_folders(bytes, source)?;
                header = out.pop().ok_or_else(|| err("empty encoded header".into()))?;
            }
            id => return Err(err(format!("unexpected header id 0x{id:02x}"))),
        }
    }
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    source: &'a Path,
}

#[derive(Debug, Default)]
struct Folder {
    /// Coder id and properties.
    coder: (Vec<u8>, Vec<u8>),
    unpack_size: u64,
}

#[derive(Debug, Default)]
struct StreamsInfo {
    pack_pos: u64,
    pack_sizes: Vec<u64>,
    folders: Vec<Folder>,
    /// Files per folder, and every file's size (one file per folder when the archive has no
    /// substreams info).
    files_per_folder: Vec<u64>,
    file_sizes: Vec<u64>,
}

impl Reader<'_> {
    fn err(&self, m: impl std::fmt::Display) -> Error {
        Error::data_file(self.source, format!("7z archive header, byte {}: {m}", self.pos))
    }
    fn byte(&mut self) -> Result<u8> {
        let v = *self.b.get(self.pos).ok_or_else(|| self.err("truncated"))?;
        self.pos += 1;
        Ok(v)
    }
    fn bytes(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len()).ok_or_else(|| self.err("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    /// 7z's number: the leading one bits of the first byte count the extra bytes.
    fn number(&mut self) -> Result<u64> {
        let first = self.byte()?;
        let mut mask = 0x80u8;
        let mut value = 0u64;
        for i in 0..8 {
            if first & mask == 0 {
                let high = u64::from(first & mask.wrapping_sub(1));
                return Ok(value | (high << (8 * i)));
            }
            value |= u64::from(self.byte()?) << (8 * i);
            mask >>= 1;
        }
        Ok(value)
    }
    fn size(&mut self) -> Result<usize> {
        usize::try_from(self.number()?).ok().filter(|&n| n <= 1 << 40).ok_or_else(|| self.err("implausible count"))
    }
    fn expect(&mut self, id: u8) -> Result<()> {
        let got = self.byte()?;
        if got != id {
            return Err(self.err(format!("expected property 0x{id:02x}, found 0x{got:02x}")));
        }
        Ok(())
    }
    /// A bit vector of `n` items, or "all defined" (its leading byte 1).
    fn defined(&mut self, n: usize) -> Result<Vec<bool>> {
        if self.byte()? != 0 {
            return Ok(vec![true; n]);
        }
        Ok(bits(self.bytes(n.div_ceil(8))?, n))
    }
    fn digests(&mut self, n: usize) -> Result<()> {
        let defined = self.defined(n)?;
        self.bytes(4 * defined.iter().filter(|&&d| d).count())?;
        Ok(())
    }

    fn streams_info(&mut self) -> Result<StreamsInfo> {
        let mut info = StreamsInfo::default();
        loop {
            match self.byte()? {
                0x00 => {
                    // Without substreams info, every folder is one file.
                    if info.files_per_folder.is_empty() {
                        info.files_per_folder = vec![1; info.folders.len()];
                        info.file_sizes = info.folders.iter().map(|f| f.unpack_size).collect();
                    }
                    return Ok(info);
                }
                0x06 => {
                    info.pack_pos = self.number()?;
                    let n = self.size()?;
                    loop {
                        match self.byte()? {
                            0x00 => break,
                            0x09 => info.pack_sizes = (0..n).map(|_| self.number()).collect::<Result<_>>()?,
                            0x0a => self.digests(n)?,
                            id => return Err(self.err(format!("unexpected pack info property 0x{id:02x}"))),
                        }
                    }
                }
                0x07 => {
                    self.expect(0x0b)?;
                    let n = self.size()?;
                    if self.byte()? != 0 {
                        return Err(self.err("external folder lists are not supported"));
                    }
                    for _ in 0..n {
                        info.folders.push(self.folder()?);
                    }
                    self.expect(0x0c)?;
                    for i in 0..n {
                        info.folders[i].unpack_size = self.number()?;
                    }
                    loop {
                        match self.byte()? {
                            0x00 => break,
                            0x0a => self.digests(n)?,
                            id => return Err(self.err(format!("unexpected unpack info property 0x{id:02x}"))),
                        }
                    }
                }
                0x08 => {
                    info.files_per_folder = vec![1; info.folders.len()];
                    let mut id = self.byte()?;
                    if id == 0x0d {
                        info.files_per_folder = (0..info.folders.len()).map(|_| self.number()).collect::<Result<_>>()?;
                        id = self.byte()?;
                    }
                    if id == 0x09 {
                        for (k, &count) in info.files_per_folder.clone().iter().enumerate() {
                            let mut sum = 0;
                            for _ in 1..count {
                                let s = self.number()?;
                                sum += s;
                                info.file_sizes.push(s);
                            }
                            if count > 0 {
                                let last = info.folders[k]
                                    .unpack_size
                                    .checked_sub(sum)
                                    .ok_or_else(|| self.err("file sizes exceed the folder's"))?;
                                info.file_sizes.push(last);
                            }
                        }
                        id = self.byte()?;
                    } else {
                        for (k, &count) in info.files_per_folder.iter().enumerate() {
                            if count == 1 {
                                info.file_sizes.push(info.folders[k].unpack_size);
                            }
                        }
                    }
                    while id != 0x00 {
                        if id != 0x0a {
                            return Err(self.err(format!("unexpected substreams property 0x{id:02x}")));
                        }
                        let n = info.file_sizes.len();
                        self.digests(n)?;
                        id = self.byte()?;
                    }
                }
                id => return Err(self.err(format!("unexpected streams property 0x{id:02x}"))),
            }
        }
    }

    fn folder(&mut self) -> Result<Folder> {
        let coders = self.size()?;
        if coders != 1 {
            return Err(self.err(format!("a folder of {coders} coders (filter chains such as BCJ are not supported)")));
        }
        let flags = self.byte()?;
        if flags & 0x10 != 0 {
            return Err(self.err("a coder with several streams is not supported"));
        }
        let id = self.bytes(usize::from(flags & 0x0f))?.to_vec();
        let props = if flags & 0x20 != 0 {
            let n = self.size()?;
            self.bytes(n)?.to_vec()
        } else {
            Vec::new()
        };
        Ok(Folder { coder: (id, props), unpack_size: 0 })
    }

    fn header(&mut self, archive: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
        let mut info = None;
        let mut names = Vec::new();
        let mut empty = Vec::new();
        loop {
            match self.byte()? {
                0x00 => break,
                0x02 | 0x03 => return Err(self.err("archive properties and additional streams are not supported")),
                0x05 => {
                    let n = self.size()?;
                    loop {
                        let prop = self.byte()?;
                        if prop == 0x00 {
                            break;
                        }
                        let size = self.size()?;
                        let data = self.bytes(size)?.to_vec();
                        match prop {
                            0x0e => empty = bits(&data, n),
                            0x11 => {
                                if data.first() != Some(&0) {
                                    return Err(self.err("external file names are not supported"));
                                }
                                let units: Vec<u16> = data[1..].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
                                names = units.split(|&u| u == 0).take(n).map(String::from_utf16_lossy).collect();
                            }
                            _ => {}
                        }
                    }
                }
                0x04 => info = Some(self.streams_info()?),
                id => return Err(self.err(format!("unexpected header property 0x{id:02x}"))),
            }
        }
        let info = info.unwrap_or_default();
        let mut contents = info.unpack_folders(archive, self.source)?.into_iter();
        let mut out = Vec::new();
        let mut folder_files: Vec<Vec<u8>> = Vec::new();
        let mut sizes = info.file_sizes.iter();
        for &count in &info.files_per_folder {
            let data = contents.next().ok_or_else(|| self.err("fewer folders than announced"))?;
            let mut at = 0usize;
            for _ in 0..count {
                let size = *sizes.next().ok_or_else(|| self.err("fewer file sizes than files"))? as usize;
                folder_files.push(data.get(at..at + size).ok_or_else(|| self.err("a file runs past its folder"))?.to_vec());
                at += size;
            }
        }
        let mut streams = folder_files.into_iter();
        for (i, name) in names.into_iter().enumerate() {
            let data = if empty.get(i).copied().unwrap_or(false) {
                Vec::new()
            } else {
                streams.next().ok_or_else(|| self.err("more files than streams"))?
            };
            out.push((name, data));
        }
        Ok(out)
    }
}

fn bits(data: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|i| data.get(i / 8).is_some_and(|b| b & (0x80 >> (i % 8)) != 0)).collect()
}

impl StreamsInfo {
    /// Each folder's unpacked bytes.
    fn unpack_folders(&self, archive: &[u8], source: &Path) -> Result<Vec<Vec<u8>>> {
        let err = |m: String| Error::data_file(source, format!("7z archive: {m}"));
        let mut at = 32usize.checked_add(self.pack_pos as usize).ok_or_else(|| err("bad pack position".into()))?;
        let mut out = Vec::new();
        for (k, f) in self.folders.iter().enumerate() {
            let size = *self.pack_sizes.get(k).ok_or_else(|| err("a folder without a packed stream".into()))? as usize;
            let packed = archive.get(at..at + size).ok_or_else(|| err("a packed stream runs past the end of the file".into()))?;
            at += size;
            out.push(decode(&f.coder.0, &f.coder.1, packed, f.unpack_size as usize).map_err(err)?);
        }
        Ok(out)
    }
}

/// One coder: Copy (00), LZMA (03 01 01), LZMA2 (21).
fn decode(id: &[u8], props: &[u8], packed: &[u8], size: usize) -> std::result::Result<Vec<u8>, String> {
    let filters = match id {
        [0x00] => return Ok(packed.to_vec()),
        [0x03, 0x01, 0x01] => {
            let mut f = liblzma::stream::Filters::new();
            f.lzma1_properties(props).map_err(|e| format!("LZMA properties: {e}"))?;
            f
        }
        [0x21] => {
            let mut f = liblzma::stream::Filters::new();
            f.lzma2_properties(props).map_err(|e| format!("LZMA2 properties: {e}"))?;
            f
        }
        other => return Err(format!("coder {other:02x?} is not supported (LZMA, LZMA2 and Copy are)")),
    };
    let mut stream = liblzma::stream::Stream::new_raw_decoder(&filters).map_err(|e| format!("decoder: {e}"))?;
    // The declared size is the archive's claim: memory grows with what the stream really
    // decodes, 16 MiB at a time (a damaged header claiming terabytes aborted here).
    const CHUNK: usize = 16 << 20;
    let mut out = Vec::with_capacity(size.min(CHUNK));
    // 7z's LZMA streams carry no end marker: decode until the folder's size is out.
    while out.len() < size {
        let before = (stream.total_in(), out.len());
        let input = &packed[stream.total_in() as usize..];
        stream.process_vec(input, &mut out, liblzma::stream::Action::Run).map_err(|e| format!("corrupt LZMA data: {e}"))?;
        if out.len() == out.capacity() && out.len() < size {
            out.reserve((size - out.len()).min(CHUNK));
        }
        if (stream.total_in(), out.len()) == before {
            return Err(format!("the LZMA stream ends after {} of {size} bytes", out.len()));
        }
    }
    out.truncate(size);
    Ok(out)
}
