//! `openvibe-migrate`: apply the embedded migrations to `DATABASE_URL`
//! (what `cargo xtask db migrate` runs).

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::var("DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        eprintln!(
            "openvibe-migrate: DATABASE_URL is not set (run `cargo xtask db migrate`, \
             or `cargo xtask db up` and export the URL it prints)"
        );
        return ExitCode::FAILURE;
    };
    let options = match openvibe_postgres::connect_options(&url) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("openvibe-migrate: {e}");
            return ExitCode::FAILURE;
        }
    };
    let pool = match openvibe_postgres::pool_options(1)
        .connect_with(options)
        .await
    {
        Ok(p) => p,
        Err(e) => {
            eprintln!("openvibe-migrate: cannot connect: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = openvibe_postgres::migrate(&pool).await {
        eprintln!("openvibe-migrate: {e}");
        return ExitCode::FAILURE;
    }
    for m in openvibe_postgres::MIGRATOR.iter() {
        println!("migration {} {}: applied", m.version, m.description);
    }
    pool.close().await;
    ExitCode::SUCCESS
}
