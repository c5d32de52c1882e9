//! Log output of the CLI: `tracing` spans and events on stderr, and (with
//! the `otel` feature) spans exported over OTLP.
//!
//! The filter is `RUST_LOG` when set (e.g. `RUST_LOG=openvibe_postgres=debug`),
//! else chosen by `-v`: none → warnings, `-v` → info (activations, nodes,
//! LLM calls with model and tokens), `-vv` → debug (every store query with
//! its tenant and principal, memory assembly, HTTP attempts), `-vvv` →
//! trace. `-q` shows errors only. Human output on a terminal (coloured) or
//! JSON lines with `--log-format json`, each with its span chain. Record
//! contents and secrets are never logged at info level.
//!
//! **OpenTelemetry** (built with `--features otel`): when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
//! is set, spans also go to that OTLP receiver over HTTP, as protobuf or, with
//! `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`, as JSON. The standard variables
//! apply (`OTEL_SERVICE_NAME`, default `openvibe`; `OTEL_RESOURCE_ATTRIBUTES`;
//! `OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`; `OTEL_SDK_DISABLED=true` and
//! `OTEL_TRACES_EXPORTER=none` turn it off). Exported spans follow the log
//! filter but never go below info, so `openvibe demo` exports activations,
//! nodes and LLM calls, and `-vv` adds every store query. Spans are sent in
//! batches from a thread of their own and flushed when the command ends
//! ([`Logging::shutdown`]); a receiver that is down costs the command
//! nothing but a warning.

use std::io::IsTerminal;

use clap::ValueEnum;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

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

/// What [`init`] installed that must be finished before the process exits:
/// spans still queued for the OTLP receiver.
#[derive(Debug, Default)]
#[must_use = "call shutdown() before exiting, or queued spans are lost"]
pub struct Logging {
    #[cfg(feature = "otel")]
    otel: Option<otel::Exporter>,
}

impl Logging {
    /// Send the spans still queued and stop exporting (a no-op without export).
    pub fn shutdown(self) {
        #[cfg(feature = "otel")]
        if let Some(exporter) = self.otel {
            exporter.shutdown();
        }
    }
}

/// The log filter: `RUST_LOG` when set and valid, else `fallback`.
fn filter(fallback: &str) -> EnvFilter {
    EnvFilter::new(filter_spec(fallback, true))
}

/// `RUST_LOG` when set and valid (warning about an invalid one when
/// `warn`), else `fallback`.
fn filter_spec(fallback: &str, warn: bool) -> String {
    match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => match EnvFilter::try_new(&spec) {
            Ok(_) => spec,
            Err(e) => {
                if warn {
                    eprintln!(
                        "openvibe: warning: ignoring RUST_LOG={spec:?} ({e}); using {fallback}"
                    );
                }
                fallback.to_owned()
            }
        },
        _ => fallback.to_owned(),
    }
}

/// What is exported over OTLP: our spans at the `-v` level but at least
/// info (other crates' at warn), or what `RUST_LOG` says; never the
/// exporter's own HTTP stack, whose spans would export themselves.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn export_filter(verbose: u8) -> EnvFilter {
    let level = default_filter(verbose.max(1), false);
    let spec = filter_spec(&format!("warn,openvibe={level}"), false);
    EnvFilter::new(format!(
        "{spec},opentelemetry=off,opentelemetry_sdk=off,opentelemetry_otlp=off,\
         opentelemetry_http=off,reqwest=off,hyper=off,hyper_util=off,h2=off"
    ))
}

/// Install the subscriber. `RUST_LOG` wins over the flags; an invalid
/// `RUST_LOG` is reported and the flags' filter used instead.
pub fn init(verbose: u8, quiet: bool, format: LogFormat) -> Logging {
    // Closing a span prints its duration: what a node, an LLM call or a
    // store query cost.
    let stderr = match format {
        LogFormat::Human => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_span_events(FmtSpan::CLOSE)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
            .compact()
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_span_events(FmtSpan::CLOSE)
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .boxed(),
    }
    .with_filter(filter(default_filter(verbose, quiet)));
    let registry = tracing_subscriber::registry().with(stderr);

    #[cfg(feature = "otel")]
    {
        let exporter = otel::Exporter::from_env();
        let layer = exporter
            .as_ref()
            .map(|e| e.layer().with_filter(export_filter(verbose)));
        let logging = Logging { otel: exporter };
        if let Err(e) = registry.with(layer).try_init() {
            eprintln!("openvibe: warning: logging is not available ({e})");
        }
        logging
    }
    #[cfg(not(feature = "otel"))]
    {
        if let Err(e) = registry.try_init() {
            eprintln!("openvibe: warning: logging is not available ({e})");
        }
        if otel_requested() {
            eprintln!(
                "openvibe: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set, but this openvibe was \
                 built without the `otel` feature; spans are not exported \
                 (cargo install --path crates/openvibe-cli --features otel)"
            );
        }
        Logging::default()
    }
}

/// Whether the environment asks for OTLP export: an endpoint is named and
/// neither `OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says no.
pub fn otel_requested() -> bool {
    otel_requested_by(|name| std::env::var(name).ok())
}

fn otel_requested_by(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let endpoint = set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let exporter_ok = var("OTEL_TRACES_EXPORTER")
        .is_none_or(|v| v.split(',').any(|e| e.trim().eq_ignore_ascii_case("otlp")));
    endpoint && !disabled && exporter_ok
}

#[cfg(feature = "otel")]
mod otel {
    //! Spans over OTLP/HTTP: `tracing-opentelemetry` in front of the
    //! OpenTelemetry SDK's batch processor and OTLP exporter.

    use opentelemetry::trace::TracerProvider as _;
    use opentelemetry_otlp::{Protocol, WithExportConfig};
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::registry::LookupSpan;

    /// The tracer provider that exports; shut down to flush.
    #[derive(Debug)]
    pub(super) struct Exporter {
        provider: SdkTracerProvider,
    }

    impl Exporter {
        /// Set up export when the environment asks for it (see the module
        /// docs); a configuration the exporter refuses is a warning.
        pub(super) fn from_env() -> Option<Self> {
            if !super::otel_requested() {
                return None;
            }
            // OTLP/HTTP means protobuf unless the environment asks for JSON
            // (the exporter's own default, with JSON built in, is JSON).
            let asked = [
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
            let protocol = match asked.as_deref().map(str::trim) {
                None | Some("http/protobuf") => Protocol::HttpBinary,
                Some("http/json") => Protocol::HttpJson,
                Some(other) => {
                    eprintln!(
                        "openvibe: warning: spans are not exported: OTLP protocol {other:?} is \
                         not supported (use http/protobuf or http/json, usually on port 4318)"
                    );
                    return None;
                }
            };
            let exporter = match opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(protocol)
                .build()
            {
                Ok(exporter) => exporter,
                Err(e) => {
                    eprintln!("openvibe: warning: spans are not exported over OTLP ({e})");
                    return None;
                }
            };
            // The standard resource detectors read OTEL_SERVICE_NAME and
            // OTEL_RESOURCE_ATTRIBUTES; `openvibe` only when neither names one.
            let mut resource = Resource::builder();
            if std::env::var_os("OTEL_SERVICE_NAME").is_none()
                && !std::env::var("OTEL_RESOURCE_ATTRIBUTES")
                    .is_ok_and(|a| a.contains("service.name="))
            {
                resource = resource.with_service_name("openvibe");
            }
            let provider = SdkTracerProvider::builder()
                .with_resource(resource.build())
                .with_batch_exporter(exporter)
                .build();
            Some(Self { provider })
        }

        /// The layer that turns `tracing` spans into OpenTelemetry spans.
        pub(super) fn layer<S>(&self) -> impl Layer<S> + use<S>
        where
            S: tracing::Subscriber + for<'a> LookupSpan<'a>,
        {
            tracing_opentelemetry::layer().with_tracer(self.provider.tracer("openvibe"))
        }

        /// Flush what is queued and stop the exporter's thread.
        pub(super) fn shutdown(self) {
            if let Err(e) = self.provider.shutdown() {
                eprintln!("openvibe: warning: exporting spans over OTLP failed ({e})");
            }
        }
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

    #[test]
    fn export_is_asked_for_by_an_endpoint_and_refused_by_the_standard_switches() {
        let with = |vars: &[(&str, &str)]| {
            otel_requested_by(|name| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            })
        };
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        assert!(!with(&[]));
        assert!(!with(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]));
        assert!(with(&[endpoint]));
        assert!(with(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://127.0.0.1:4318/v1/traces"
        )]));
        assert!(!with(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")]));
        assert!(with(&[endpoint, ("OTEL_SDK_DISABLED", "false")]));
        assert!(!with(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")]));
        assert!(with(&[endpoint, ("OTEL_TRACES_EXPORTER", "console, otlp")]));
    }
}
