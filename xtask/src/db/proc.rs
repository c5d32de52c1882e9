//! Running external commands so that every failure is visible: the error names
//! the step, the exact command line, its exit status and its stderr/stdout.

use std::io::ErrorKind;
use std::process::{Command, ExitStatus, Stdio};

/// What a finished command produced.
pub struct Finished {
    /// Exit status of the process.
    pub status: ExitStatus,
    /// Captured stdout (lossy UTF-8).
    pub stdout: String,
    /// Captured stderr (lossy UTF-8).
    pub stderr: String,
}

/// Render a command as a copy-pasteable shell line.
pub fn describe(cmd: &Command) -> String {
    let mut parts = vec![shell_quote(&cmd.get_program().to_string_lossy())];
    parts.extend(cmd.get_args().map(|a| shell_quote(&a.to_string_lossy())));
    parts.join(" ")
}

/// Quote one word for a POSIX shell (only when needed).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Whether verbose tracing of commands is on (`OPENVIBE_XTASK_VERBOSE=1`).
fn verbose() -> bool {
    std::env::var_os("OPENVIBE_XTASK_VERBOSE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Run `cmd` to completion, capturing output, whatever its exit status.
/// Fails only when the program cannot be started; `what` names the step.
pub fn capture(cmd: &mut Command, what: &str) -> Result<Finished, String> {
    let line = describe(cmd);
    if verbose() {
        eprintln!("db: + {line}");
    }
    let out = cmd.stdin(Stdio::null()).output().map_err(|e| {
        let program = cmd.get_program().to_string_lossy().into_owned();
        if e.kind() == ErrorKind::NotFound {
            format!("{what}: `{program}` was not found on PATH (command: {line})")
        } else {
            format!("{what}: could not start `{line}`: {e}")
        }
    })?;
    Ok(Finished {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Run `cmd` and require success; returns its stdout.
pub fn run(cmd: &mut Command, what: &str) -> Result<String, String> {
    let done = capture(cmd, what)?;
    if done.status.success() {
        Ok(done.stdout)
    } else {
        Err(failure(cmd, what, &done))
    }
}

/// Format a failed command as a multi-line error message.
pub fn failure(cmd: &Command, what: &str, done: &Finished) -> String {
    let mut msg = format!(
        "{what} failed: `{}` exited with {}",
        describe(cmd),
        done.status
    );
    for (name, text) in [("stderr", &done.stderr), ("stdout", &done.stdout)] {
        let text = text.trim_end();
        if !text.is_empty() {
            msg.push_str(&format!("\n--- {name} ---\n{}", tail(text, 40)));
        }
    }
    msg
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Whether `program` can be started (probing with `arg`, e.g. `--version`).
pub fn available(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
