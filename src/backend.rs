//! Scenario backend → Burn device. Burn 0.22 dispatches on the device, so this is the
//! only place that knows which backends exist; every model and training line is shared.

use burn::tensor::{Device, DeviceKind, Tensor};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Where tensors live (YAML `backend:`, CLI `--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// burn-flex on the CPU.
    #[default]
    Cpu,
    /// burn-ndarray on the CPU (slower; deprecated upstream).
    Ndarray,
    /// burn-wgpu: a GPU, or Mesa's software Vulkan driver.
    Wgpu,
}

/// The device for `backend`, checked to work: a wgpu request on a machine without a
/// usable adapter (no GPU and no software Vulkan driver) is a clear error, not a panic.
pub fn device(backend: Backend) -> Result<Device> {
    match backend {
        // burn-flex: Burn 0.22's CPU backend; its strided gemm takes the transposed
        // feature matrix of the backward pass without copying it (6.7× faster than
        // burn-ndarray on a Cora GCN epoch, see `fgl-sim bench train`).
        Backend::Cpu => Ok(Device::flex()),
        #[allow(deprecated)] // deprecated upstream in favour of burn-flex; kept selectable.
        Backend::Ndarray => Ok(Device::ndarray()),
        Backend::Wgpu => {
            let device = Device::wgpu(DeviceKind::DefaultDevice);
            let probe = device.clone();
            let ok = std::panic::catch_unwind(move || {
                let t = Tensor::<1>::from_floats([1.0, 2.0], &probe);
                t.sum().into_scalar::<f32>()
            });
            match ok {
                Ok(3.0) => Ok(device),
                _ => Err(Error::param(
                    "backend",
                    "wgpu found no usable adapter: install a GPU driver with Vulkan support, or Mesa's software driver \
                     (Debian: mesa-vulkan-drivers), or use `backend: cpu`",
                )),
            }
        }
    }
}

/// Whether clients of a round may train in parallel on this backend (CPU: yes; the GPU
/// serialises kernels anyway).
pub fn parallel_clients(backend: Backend) -> bool {
    matches!(backend, Backend::Cpu | Backend::Ndarray)
}

/// The cores this process may use (1 where unknown).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Peak resident memory of this process in MiB (Linux `VmHWM`), if available.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// The most worker threads `--threads` may ask for.
pub const MAX_THREADS: usize = 1024;

/// Run `f` on a rayon pool of `threads` workers (`None`: the global pool, one worker
/// per core). Results never depend on the count; only speed does.
pub fn with_threads<T: Send>(threads: Option<usize>, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    match threads {
        None => f(),
        // Spawning 100 000 threads spun for 18 s before failing (issue 27).
        Some(n) if n > MAX_THREADS => Err(Error::param(
            "--threads",
            format!("{n} is more than fgl-sim runs ({MAX_THREADS} at most; this machine has {} cores)", available_cores()),
        )),
        Some(n) => {
            rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build().map_err(|e| Error::param("--threads", e.to_string()))?.install(f)
        }
    }
}
