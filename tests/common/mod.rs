//! Helpers shared by integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// The data directory for tests that need the real dataset files.
///
/// Missing data is a skip (with the reason on stderr) on a developer machine, but a
/// failure in CI (`CI=true`), where a silently skipped test would hide a broken setup.
pub fn data_dir() -> Option<PathBuf> {
    let dir = fgl_sim::data::registry::resolve_data_dir(None).filter(|d| d.is_dir());
    if dir.is_none() {
        let msg =
            format!("dataset directory not found: set {} or place the data at ../shared/datasets", fgl_sim::data::registry::DATA_DIR_ENV);
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg} (CI=true: tests that need data must not be skipped)");
        }
        eprintln!("skipping: {msg}");
    }
    dir
}

/// Runs the `fgl-sim` binary built for these tests with `--data-dir data` appended when
/// given (and `FGL_DATA_DIR` removed, so nothing is found by accident).
pub fn fgl(args: &[&str], data: Option<&std::path::Path>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fgl-sim"));
    cmd.args(args).env_remove("FGL_DATA_DIR");
    if let Some(d) = data {
        cmd.arg("--data-dir").arg(d);
    }
    cmd.output().expect("run fgl-sim")
}

/// The rows of `dir/reproduce.csv` after checking its header is the CSV contract's.
pub fn rows(dir: &std::path::Path) -> Vec<Vec<String>> {
    let csv = std::fs::read_to_string(dir.join("reproduce.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(fgl_sim::reproduce::CSV_HEADER));
    lines.map(|l| l.split(',').map(str::to_string).collect()).collect()
}

// 7z archives as 7-Zip writes them (the PubMed features are published in one), for the
// fetch tests and the 7z fuzz target.

/// 7z's number, in its always-valid 9-byte form.
fn num(v: u64) -> Vec<u8> {
    let mut o = vec![0xff];
    o.extend(v.to_le_bytes());
    o
}

/// Raw LZMA1 (lc 3, lp 0, pb 2, 1 MiB dictionary) and its 5 property bytes.
fn lzma1(data: &[u8]) -> (Vec<u8>, Vec<u8>) {
    use liblzma::stream::{Action, Filters, LzmaOptions, Status, Stream};
    let mut opts = LzmaOptions::new_preset(1).unwrap();
    opts.dict_size(1 << 20).literal_context_bits(3).literal_position_bits(0).position_bits(2);
    let mut filters = Filters::new();
    filters.lzma1(&opts);
    let mut s = Stream::new_raw_encoder(&filters).unwrap();
    let mut out = Vec::with_capacity(data.len() / 2 + 4096);
    loop {
        let status = s.process_vec(&data[s.total_in() as usize..], &mut out, Action::Finish).unwrap();
        if status == Status::StreamEnd {
            break;
        }
        out.reserve(1 << 20);
    }
    let mut props = vec![0x5d];
    props.extend((1u32 << 20).to_le_bytes());
    (out, props)
}

/// Streams info of one folder (coder `id` with `props`) packed at `pack_pos`.
fn streams_info(pack_pos: u64, packed: u64, id: &[u8], props: &[u8], files: &[u64]) -> Vec<u8> {
    let mut h = vec![0x06];
    h.extend(num(pack_pos));
    h.extend(num(1));
    h.push(0x09);
    h.extend(num(packed));
    h.extend([0x00, 0x07, 0x0b]);
    h.extend(num(1));
    h.push(0x00);
    h.extend(num(1));
    h.push(if props.is_empty() { 0 } else { 0x20 } | id.len() as u8);
    h.extend(id);
    if !props.is_empty() {
        h.extend(num(props.len() as u64));
        h.extend(props);
    }
    h.push(0x0c);
    h.extend(num(files.iter().sum()));
    h.push(0x00);
    if files.len() > 1 {
        h.extend([0x08, 0x0d]);
        h.extend(num(files.len() as u64));
        h.push(0x09);
        for &f in &files[..files.len() - 1] {
            h.extend(num(f));
        }
        h.push(0x00);
    }
    h.push(0x00);
    h
}

/// A solid 7z archive of `files`, LZMA-compressed (or stored with `lzma: false`), its
/// header plain or itself LZMA-compressed (`encoded_header`), as 7-Zip writes them.
pub fn seven_zip(files: &[(&str, &[u8])], lzma: bool, encoded_header: bool) -> Vec<u8> {
    let data: Vec<u8> = files.iter().flat_map(|(_, d)| d.iter().copied()).collect();
    let (packed, id, props) = if lzma {
        let (p, props) = lzma1(&data);
        (p, vec![3, 1, 1], props)
    } else {
        (data.clone(), vec![0], vec![])
    };
    let sizes: Vec<u64> = files.iter().map(|(_, d)| d.len() as u64).collect();
    let mut header = vec![0x01, 0x04];
    header.extend(streams_info(0, packed.len() as u64, &id, &props, &sizes));
    header.push(0x05);
    header.extend(num(files.len() as u64));
    let names: Vec<u8> =
        files.iter().flat_map(|(n, _)| n.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect::<Vec<u8>>()).collect();
    header.push(0x11);
    header.extend(num(names.len() as u64 + 1));
    header.push(0x00);
    header.extend(names);
    header.extend([0x00, 0x00]);
    let mut body = packed;
    if encoded_header {
        let (hp, hprops) = lzma1(&header);
        let pos = body.len() as u64;
        body.extend(&hp);
        let plain_len = header.len() as u64;
        header = vec![0x17];
        header.extend(streams_info(pos, hp.len() as u64, &[3, 1, 1], &hprops, &[plain_len]));
    }
    let mut out = b"7z\xbc\xaf\x27\x1c\x00\x04".to_vec();
    out.extend([0; 4]); // start header CRC: not checked by the reader (sha256 checks the file)
    out.extend((body.len() as u64).to_le_bytes());
    out.extend((header.len() as u64).to_le_bytes());
    out.extend([0; 4]);
    out.extend(body);
    out.extend(header);
    out
}

/// Every built-in defense and attack preset as (what, `--set` overrides of the
/// quickstart), adapted only where the preset needs it: discrete features for rgnn,
/// features in [0, 1] for the multi-bit mechanism (the attacks need a head and a plain
/// SGD update, which the callers set for all).
pub fn every_preset() -> Vec<(String, Vec<String>)> {
    let mut cases = Vec::new();
    for (kind, _) in fgl_sim::defenses::PRESETS {
        let mut o = vec![format!("defenses=[{kind}]")];
        match *kind {
            "rgnn" => o.push("dataset.preprocess={group_columns: 2}".into()),
            "ldp-features" | "lpgnn" | "solitude" => o.push("dataset.preprocess={minmax: true}".into()),
            _ => {}
        }
        cases.push((format!("defense {kind}"), o));
    }
    for (kind, _) in fgl_sim::attacks::PRESETS {
        cases.push((format!("attack {kind}"), vec![format!("attacks=[{kind}]")]));
    }
    cases
}

/// The members of the npz archive at `path`, in order: (name, bytes).
pub fn npz_members(path: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|i| {
            let mut f = archive.by_index(i).unwrap();
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut v).unwrap();
            (f.name().to_string(), v)
        })
        .collect()
}

/// `members` stored again as an npz archive at `path`, member `k` replaced by `mutated`.
pub fn write_npz(path: &std::path::Path, members: &[(String, Vec<u8>)], k: usize, mutated: &[u8]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opt = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (j, (name, data)) in members.iter().enumerate() {
        z.start_file(name.as_str(), opt).unwrap();
        std::io::Write::write_all(&mut z, if j == k { mutated } else { data }).unwrap();
    }
    z.finish().unwrap();
}
