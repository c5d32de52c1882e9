//! `openvibe-bench [group...]`: run benchmark groups (all but `scale` when
//! none is named).

mod cognitive;
mod console;
mod decision;
mod embed;
mod goals;
mod governance;
mod graph;
mod inbox;
mod memory;
mod pg;
mod primitives;
mod rawlog;
mod scale;
mod schedule;
mod service;
mod spaces;
mod working;

type Group = (
    &'static str,
    fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>,
);

const GROUPS: &[Group] = &[
    ("primitives", || Box::pin(primitives::run())),
    ("graph", || Box::pin(graph::run())),
    ("memory", || Box::pin(memory::run())),
    ("pg", || Box::pin(pg::run())),
    ("semantic", || Box::pin(working::run_memory())),
    ("pg_working", || Box::pin(working::run_pg())),
    ("pg_gov", || Box::pin(governance::run())),
    ("svc", || Box::pin(service::run())),
    ("embed", || Box::pin(embed::run())),
    ("sched", || Box::pin(schedule::run())),
    ("rawlog", || Box::pin(rawlog::run())),
    ("decision", || Box::pin(decision::run_memory())),
    ("pg_decision", || Box::pin(decision::run_pg())),
    ("pg_goals", || Box::pin(goals::run_pg())),
    ("loop", || Box::pin(cognitive::run())),
    ("spaces", || Box::pin(spaces::run())),
    ("pg_spaces", || Box::pin(spaces::run_pg())),
    ("pg_console", || Box::pin(console::run_pg())),
    ("pg_inbox", || Box::pin(inbox::run_pg())),
    ("scale", || Box::pin(scale::run())),
];

fn main() -> std::process::ExitCode {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    // A loop process of `pg_inbox`'s figures.
    if let [flag, url, tenant, holder, lease_ms] = wanted.as_slice()
        && flag == inbox::LOOP_FLAG
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        return match runtime
            .map(|rt| rt.block_on(inbox::loop_process(url, tenant, holder, lease_ms)))
        {
            Ok(Ok(())) => std::process::ExitCode::SUCCESS,
            Ok(Err(e)) => {
                eprintln!("inbox loop: {e}");
                std::process::ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("inbox loop: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    // The other process of `pg_spaces`' delivery figure.
    if let [flag, url] = wanted.as_slice()
        && flag == spaces::READER_FLAG
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        return match runtime.map(|rt| rt.block_on(spaces::reader(url))) {
            Ok(Ok(())) => std::process::ExitCode::SUCCESS,
            Ok(Err(e)) => {
                eprintln!("space reader: {e}");
                std::process::ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("space reader: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    if let Some(unknown) = wanted.iter().find(|w| !GROUPS.iter().any(|(n, _)| n == w)) {
        let names: Vec<&str> = GROUPS.iter().map(|(n, _)| *n).collect();
        eprintln!(
            "unknown benchmark group `{unknown}`; groups: {}",
            names.join(", ")
        );
        return std::process::ExitCode::FAILURE;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    for (name, run) in GROUPS {
        // `scale` loads millions of records: only when named.
        let default = *name != "scale";
        if (wanted.is_empty() && default) || wanted.iter().any(|w| w == name) {
            runtime.block_on(run());
        }
    }
    std::process::ExitCode::SUCCESS
}
