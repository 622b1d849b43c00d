// mimalloc keeps freed pages for reuse; glibc's malloc hands large tensor buffers back to
// the kernel on free and takes a page fault per 4 KiB when the next epoch allocates them
// again (13 % of a GAT epoch on 20 000 nodes).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    std::process::exit(fgl_sim::cli::main());
}
