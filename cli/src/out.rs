//! Standard output for the commands' results.
//!
//! `println!` panics when standard output is gone: a reader that closed
//! the pipe (`mesa std | head -1`) or a full disk (`> /dev/full`).
//! [`outln!`] and [`out!`] end the process instead: quietly with status 0
//! when the reader closed the pipe (it has read all it wanted, as with any
//! Unix filter), and with `error: cannot write to standard output: ...`
//! and status 1 on any other failure. Commands that write through their
//! own buffered writer return the same error, [`CliError::Stdout`], which
//! `main` treats the same way (see [`CliError::is_broken_pipe`]).
//!
//! [`CliError::Stdout`]: crate::error::CliError::Stdout
//! [`CliError::is_broken_pipe`]: crate::error::CliError::is_broken_pipe

/// `println!` to standard output, ending the process if it is gone.
macro_rules! outln {
    () => {
        $crate::out::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::out::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` to standard output, ending the process if it is gone.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::out::write(format_args!($($arg)*))
    };
}

/// Writes to standard output, or ends the process as the module says.
pub fn write(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_fmt(args) {
        gone(e)
    }
}

/// Ends the process after a failed write to standard output, as `main`
/// ends it for [`CliError::Stdout`].
///
/// [`CliError::Stdout`]: crate::error::CliError::Stdout
fn gone(e: std::io::Error) -> ! {
    let e = crate::error::CliError::Stdout(e);
    if e.is_broken_pipe() {
        std::process::exit(0)
    }
    eprintln!("error: {e}");
    std::process::exit(i32::from(e.exit_code()))
}
