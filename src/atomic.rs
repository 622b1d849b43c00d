//! Putting a file or a directory into place whole. Whatever the crate writes for a
//! reader — results, a matrix's run directories, downloaded and derived data files —
//! is first filled at a staging path beside its destination and renamed over it only
//! once complete (a rename within one folder is atomic), so a reader, or a rerun after
//! a kill, never sees half of it. A failed fill removes the staging path.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Where a destination is filled before it is moved into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// `.<name>.tmp-<pid>-<thread>`: private to one writer, so concurrent writers of
    /// one destination never share it; a killed process's leftovers carry its pid
    /// ([`leftover_of_dead_process`]).
    Private,
    /// `.<name>.part`: one stable name, so a later attempt finds what an interrupted
    /// one left (a download resumes from it).
    Resumable,
}

/// The staging path of `dest`.
pub fn staging_path(dest: &Path, staging: Staging) -> PathBuf {
    let name = dest.file_name().map_or_else(|| "out".into(), |n| n.to_string_lossy());
    match staging {
        Staging::Private => {
            let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_digit(), "");
            dest.with_file_name(format!(".{name}.tmp-{}-{thread}", std::process::id()))
        }
        Staging::Resumable => dest.with_file_name(format!(".{name}.part")),
    }
}

/// Whether `name` (a file name in a folder) is a [`Staging::Private`] path that a
/// process no longer running left behind.
pub fn leftover_of_dead_process(name: &str) -> bool {
    let Some((_, rest)) = name.strip_prefix('.').and_then(|n| n.rsplit_once(".tmp-")) else { return false };
    let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { return false };
    !process_alive(pid)
}

/// Whether process `pid` is running (this one included). Where `/proc` is missing every
/// process counts as running: nothing of another's is ever taken.
pub fn process_alive(pid: u32) -> bool {
    pid == std::process::id() || !Path::new("/proc/self").exists() || Path::new(&format!("/proc/{pid}")).exists()
}

/// Fill `dest`'s staging path with `fill`, then rename it over `dest` (a file, or a
/// directory, which is replaced whole). On failure the staging path is removed and
/// `dest` is left as it was. `blame` builds the error of a folder or a move that fails
/// (`Error::output` for results, `Error::data_file` for data).
pub fn into_place<T>(dest: &Path, staging: Staging, blame: fn(&Path, String) -> Error, fill: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let parent = dest.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(|e| blame(parent, format!("cannot create the folder: {e}")))?;
    let staged = staging_path(dest, staging);
    let result = fill(&staged).and_then(|t| {
        if staged.is_dir() && dest.is_dir() {
            fs::remove_dir_all(dest).map_err(|e| blame(dest, format!("cannot replace what was there: {e}")))?;
        }
        fs::rename(&staged, dest).map_err(|e| blame(dest, format!("cannot move into place: {e}")))?;
        Ok(t)
    });
    if result.is_err() {
        let _ = if staged.is_dir() { fs::remove_dir_all(&staged) } else { fs::remove_file(&staged) };
    }
    result
}

/// Write `contents` to `path` whole, synced to disk before the rename.
pub fn write_file(path: &Path, contents: &[u8]) -> Result<()> {
    into_place(
        path,
        Staging::Private,
        |p, m| Error::output(p, m),
        |tmp| {
            let mut f = fs::File::create(tmp).map_err(|e| Error::output(path, format!("cannot write: {e}")))?;
            f.write_all(contents).and_then(|()| f.sync_all()).map_err(|e| Error::output(path, format!("cannot write: {e}")))
        },
    )
}

/// Write `files` (name, contents) as directory `dir` whole, replacing what `dir` held.
pub fn write_dir<'a>(dir: &Path, files: impl IntoIterator<Item = &'a (&'a str, &'a str)>) -> Result<()> {
    into_place(
        dir,
        Staging::Private,
        |p, m| Error::output(p, m),
        |tmp| {
            let _ = fs::remove_dir_all(tmp);
            fs::create_dir(tmp).map_err(|e| Error::output(tmp, format!("cannot create: {e}")))?;
            for (name, contents) in files {
                write_file(&tmp.join(name), contents.as_bytes())?;
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_fill_leaves_the_destination_as_it_was_and_no_staging_file() {
        let tmp = tempfile::tempdir().unwrap();
        let dest = tmp.path().join("a.txt");
        write_file(&dest, b"first").unwrap();
        let e = into_place(
            &dest,
            Staging::Private,
            |p, m| Error::output(p, m),
            |staged| -> Result<()> {
                fs::write(staged, b"half").unwrap();
                Err(Error::Other("interrupted".into()))
            },
        );
        assert!(e.is_err());
        assert_eq!(fs::read(&dest).unwrap(), b"first");
        let names: Vec<String> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        assert_eq!(names, ["a.txt"]);
    }

    #[test]
    fn a_directory_is_replaced_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cells").join("seed=1");
        write_dir(&dir, &[("error.txt", "failed\n")]).unwrap();
        write_dir(&dir, &[("metrics.json", "{}"), ("summary.md", "# ok\n")]).unwrap();
        let mut names: Vec<String> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        assert_eq!(names, ["metrics.json", "summary.md"], "the failed attempt's record is gone");
        assert_eq!(fs::read_dir(dir.parent().unwrap()).unwrap().count(), 1, "no staging directory left");
    }

    #[test]
    fn staging_names() {
        let p = Path::new("/x/data/cora.npz");
        assert_eq!(staging_path(p, Staging::Resumable), Path::new("/x/data/.cora.npz.part"));
        let private = staging_path(p, Staging::Private);
        let name = private.file_name().unwrap().to_string_lossy().to_string();
        assert!(name.starts_with(&format!(".cora.npz.tmp-{}-", std::process::id())), "{name}");
        assert!(!leftover_of_dead_process(&name), "this process is alive");
        assert!(leftover_of_dead_process(".seed=1.tmp-4000000000-7"), "no such pid");
        assert!(!leftover_of_dead_process("seed=1") && !leftover_of_dead_process(".cora.npz.part"));
    }
}
