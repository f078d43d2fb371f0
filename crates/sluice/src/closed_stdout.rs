//! A closed stdout ends the command quietly: `sluice status | head` stops
//! with exit status 0 and prints nothing on stderr once `head` has what it
//! wanted, as `yes | head` does in spirit. (0, not the shell's 141 for
//! SIGPIPE: under `set -o pipefail` a reader that stops early is not a
//! failure of sluice.)
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe returns
//! `io::ErrorKind::BrokenPipe`, and `println!` turns that error into a panic
//! ("failed printing to stdout: Broken pipe"). Restoring SIGPIPE would need
//! `unsafe`, which the workspace forbids, and every command prints through
//! `println!`, on the main thread or on tokio's workers. So the panic hook
//! recognises that one panic, wherever it happens, and exits; every other
//! panic goes to the default hook as before.

use std::panic::PanicHookInfo;
use std::process;

/// The exit status when stdout was closed by its reader.
pub(crate) const EXIT_STATUS: i32 = 0;

/// Installs the hook. Call it first thing in `main`.
pub(crate) fn exit_quietly_on_closed_stdout() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if is_closed_stdout(info) {
            process::exit(EXIT_STATUS);
        }
        default_hook(info);
    }));
}

/// The panic `print!`/`println!` raise when the write fails because the
/// reading end of the pipe is gone.
fn is_closed_stdout(info: &PanicHookInfo<'_>) -> bool {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    is_closed_stdout_message(message)
}

fn is_closed_stdout_message(message: &str) -> bool {
    // std's wording: "failed printing to stdout: {io::Error}", the error
    // being EPIPE's "Broken pipe (os error 32)".
    message.starts_with("failed printing to stdout") && message.to_lowercase().contains("broken pipe")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_broken_stdout_is_quiet() {
        assert!(is_closed_stdout_message("failed printing to stdout: Broken pipe (os error 32)"));
        assert!(!is_closed_stdout_message("failed printing to stdout: No space left on device (os error 28)"));
        assert!(!is_closed_stdout_message("failed printing to stderr: Broken pipe (os error 32)"));
        assert!(!is_closed_stdout_message("called `Option::unwrap()` on a `None` value"));
    }
}
