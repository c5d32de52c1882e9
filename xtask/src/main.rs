//! Project automation. `cargo xtask <task>`; see `cargo xtask help`.

mod db;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("db") => db::main(&args[1..]),
        _ => Err("usage: cargo xtask db <up|down|status|reset|migrate|url>".into()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
