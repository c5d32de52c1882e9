//! Log output of the CLI: `tracing` spans and events on stderr.
//!
//! The filter is `RUST_LOG` when set (e.g. `RUST_LOG=openvibe_postgres=debug`),
//! else chosen by `-v`: none → warnings, `-v` → info (activations, nodes,
//! LLM calls with model and tokens), `-vv` → debug (every store query with
//! its tenant and principal, memory assembly, HTTP attempts), `-vvv` →
//! trace. `-q` shows errors only. Human output on a terminal (coloured) or
//! JSON lines with `--log-format json`, each with its span chain. Record
//! contents and secrets are never logged at info level.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;

/// How log lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// For people (coloured when stderr is a terminal).
    #[default]
    Human,
    /// One JSON object per line, with the span chain.
    Json,
}

/// The default filter for `verbose` `-v` flags (`quiet`: errors only).
pub fn default_filter(verbose: u8, quiet: bool) -> &'static str {
    match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        (false, _) => "trace",
    }
}

/// Install the subscriber. `RUST_LOG` wins over the flags; an invalid
/// `RUST_LOG` is reported and the flags' filter used instead.
pub fn init(verbose: u8, quiet: bool, format: LogFormat) {
    let fallback = default_filter(verbose, quiet);
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            eprintln!("openvibe: warning: ignoring RUST_LOG={spec:?} ({e}); using {fallback}");
            EnvFilter::new(fallback)
        }),
        _ => EnvFilter::new(fallback),
    };
    // Closing a span prints its duration: what a node, an LLM call or a
    // store query cost.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_span_events(FmtSpan::CLOSE);
    let result = match format {
        LogFormat::Human => builder
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
            .compact()
            .try_init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .try_init(),
    };
    if let Err(e) = result {
        eprintln!("openvibe: warning: logging is not available ({e})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbosity_maps_to_levels() {
        assert_eq!(default_filter(0, false), "warn");
        assert_eq!(default_filter(1, false), "info");
        assert_eq!(default_filter(2, false), "debug");
        assert_eq!(default_filter(5, false), "trace");
        assert_eq!(default_filter(3, true), "error");
    }
}
