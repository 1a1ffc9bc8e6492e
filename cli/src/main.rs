//! The `streamcore` command line.

fn main() {
    eprintln!("streamcore: no command yet");
    std::process::exit(2);
}
