use std::alloc::{GlobalAlloc, Layout};

// mimalloc keeps freed pages for reuse; glibc's malloc hands large tensor buffers back to
// the kernel on free and takes a page fault per 4 KiB when the next epoch allocates them
// again (13 % of a GAT epoch on 20 000 nodes).
#[global_allocator]
static ALLOCATOR: OutOfMemoryLine = OutOfMemoryLine(mimalloc::MiMalloc);

/// mimalloc, but an allocation it cannot serve ends the process with one clear line on
/// stderr (exit 1) instead of Rust's abort message and SIGABRT (issue 27).
struct OutOfMemoryLine(mimalloc::MiMalloc);

unsafe impl GlobalAlloc for OutOfMemoryLine {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        checked(unsafe { self.0.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { self.0.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(unsafe { self.0.realloc(ptr, layout, new_size) }, new_size)
    }
}

fn checked(ptr: *mut u8, size: usize) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory(size);
    }
    ptr
}

/// Write the line without allocating (the heap just failed) and exit.
fn out_of_memory(size: usize) -> ! {
    let mut line = [0u8; 320];
    let mut len = 0;
    let mut put = |bytes: &[u8]| {
        let n = bytes.len().min(line.len() - len);
        line[len..len + n].copy_from_slice(&bytes[..n]);
        len += n;
    };
    put(b"error: out of memory: an allocation of ");
    let mut digits = [0u8; 20];
    let (mut k, mut v) = (digits.len(), size);
    loop {
        k -= 1;
        digits[k] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[k..]);
    put(b" bytes failed; the scenario needs more memory than this machine (or its limit) gives: see its estimate with `fgl-sim run FILE --dry-run`\n");
    // SAFETY: write(2) and _exit(2) are async-signal-safe and do not allocate.
    unsafe {
        libc::write(2, line.as_ptr().cast(), len);
        libc::_exit(1);
    }
}

fn main() {
    // `fgl-sim … | head` ends quietly when the reader goes, as other Unix tools do (Rust
    // ignores SIGPIPE, so a closed stdout would panic in println!).
    // SAFETY: restoring a signal's default disposition at startup, before any thread.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    std::process::exit(fgl_sim::cli::main());
}
