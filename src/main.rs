fn main() {
    std::process::exit(fgl_sim::cli::main());
}
