//! The Python package (`python/`): its wheel built by maturin from this checkout, installed
//! into a venv, and its pytest suite run against this build's `fgl-sim` binary.
//!
//! The venv lives in cargo's target directory (`CARGO_TARGET_TMPDIR`), so its packages
//! (maturin, numpy, pandas, pytest, tqdm, PyYAML, ipykernel, jupyter_client, from PyPI) are installed once per
//! machine. maturin builds the extension with the same profile and dependency features
//! as this test build, so it links the Burn already compiled here (seconds, not a second
//! cold build). Without Python ≥ 3.10 or PyPI the test says why and passes — except under
//! `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the venv needs: the build tool, the package's dependencies, and what its tests use
/// (a Jupyter kernel among them).
const PACKAGES: &[&str] =
    &["maturin>=1.7,<2", "numpy>=1.23", "pandas>=1.5", "pytest>=7", "tqdm>=4.60", "pyyaml>=6", "ipykernel>=6", "jupyter_client>=8"];

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Give up: a failure under CI, a note otherwise.
fn unavailable(why: &str) {
    assert!(!in_ci(), "the Python package cannot be tested: {why}");
    eprintln!("skipping the Python package's tests: {why}");
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{what}: cannot start: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!("{what} failed ({}):\n{}\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// A venv with the test's packages: reused when it already imports them.
fn venv(dir: &Path) -> Result<PathBuf, String> {
    let python = dir.join("bin/python");
    let ready = python.exists()
        && Command::new(&python)
            .args(["-c", "import maturin, numpy, pandas, pytest, tqdm, yaml, ipykernel, jupyter_client"])
            .output()
            .is_ok_and(|o| o.status.success());
    if !ready {
        let host = std::env::var("FGL_PYTHON").unwrap_or_else(|_| "python3".into());
        let version = Command::new(&host)
            .args(["-c", "import sys; print(sys.version_info >= (3, 10))"])
            .output()
            .map_err(|e| format!("no `{host}` (set FGL_PYTHON to a Python ≥ 3.10): {e}"))?;
        if String::from_utf8_lossy(&version.stdout).trim() != "True" {
            return Err(format!("`{host}` is older than Python 3.10"));
        }
        run(Command::new(&host).args(["-m", "venv", "--clear"]).arg(dir), "python3 -m venv")?;
        run(Command::new(&python).args(["-m", "pip", "install", "--quiet", "--upgrade"]).args(PACKAGES), "pip install (from PyPI)")?;
    }
    Ok(python)
}

#[test]
fn python_package_builds_and_its_tests_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let python = match venv(&tmp.join("python-venv")) {
        Ok(p) => p,
        Err(why) => return unavailable(&why),
    };
    let wheels = tmp.join("python-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    // The same target directory as this build (cargo's default unless CARGO_TARGET_DIR
    // says otherwise), release profile: the compiled dependencies are shared.
    let target = Path::new(env!("CARGO_BIN_EXE_fgl-sim")).parent().and_then(Path::parent).expect("target/<profile>/fgl-sim");
    let mut maturin = Command::new(&python);
    maturin.args(["-m", "maturin", "build", "--release", "--quiet", "--manifest-path"]);
    maturin.arg(root.join("python/Cargo.toml")).arg("--out").arg(&wheels).env("CARGO_TARGET_DIR", target);
    // cargo gives a test CARGO_MANIFEST_DIR, CARGO_PKG_NAME, …: build scripts that watch
    // those (ring's does) would see them change and build again, here and in the next
    // `cargo test` — a two-minute rebuild each way.
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(|n| n.starts_with("CARGO_") && n != "CARGO_HOME" && n != "CARGO_TARGET_DIR") {
            maturin.env_remove(name);
        }
    }
    run(&mut maturin, "maturin build").unwrap();
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("maturin wrote a wheel");
    run(
        Command::new(&python).args(["-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps"]).arg(&wheel),
        "pip install the wheel",
    )
    .unwrap();
    // From the repository root (the tests read scenarios/), against this build's binary.
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "python/tests"])
        .current_dir(root)
        .env("FGL_SIM_BIN", env!("CARGO_BIN_EXE_fgl-sim"))
        .env("FGL_TEST_TMP", tmp)
        .status()
        .expect("pytest starts");
    assert!(status.success(), "pytest failed ({status}); its output is above");
}
