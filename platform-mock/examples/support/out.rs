//! Standard output for the mock's command-line examples: a reader that
//! stops early (`| head`) ends the program quietly (status 0), any other
//! write error (a full disk) is one line on stderr and status 1 — never a
//! panic, which `println!` is on a closed pipe.

use std::io::{ErrorKind, Write};

/// Writes `args` to standard output, or ends the process as above.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        if e.kind() == ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr(), "standard output: {e}");
        std::process::exit(1);
    }
}

/// `print!` that never panics (see the module).
#[allow(unused_macros)]
macro_rules! out {
    ($($t:tt)*) => { $crate::out::write(format_args!($($t)*)) };
}

/// `println!` that never panics (see the module).
macro_rules! outln {
    () => { $crate::out::write(format_args!("\n")) };
    ($($t:tt)*) => { $crate::out::write(format_args!("{}\n", format_args!($($t)*))) };
}
