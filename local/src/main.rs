//! `capabilities`, the native binary: the local hub and its CLI.

fn main() -> std::process::ExitCode {
    capabilities::cli::main()
}
