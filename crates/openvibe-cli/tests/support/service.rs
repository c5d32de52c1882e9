//! Processes a test starts: killed and reaped when dropped, and `openvibe
//! serve` on a database with the address it listens on.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child killed when dropped (a failed test leaves no process behind).
pub struct Reaped(pub Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `openvibe serve` on the database, development mode; its address.
pub fn spawn_service(url: &str, tenant: &str) -> (Reaped, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_openvibe"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--database-url",
            url,
            "--tenant",
            tenant,
        ])
        .env_remove("RUST_LOG")
        .env_remove("OPENVIBE_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("a service instance");
    let stderr = child.stderr.take().expect("its stderr");
    let mut lines = BufReader::new(stderr).lines();
    let addr = loop {
        let line = lines
            .next()
            .expect("the service says where it listens")
            .expect("a line");
        if let Some(rest) = line.strip_prefix("memory service on ") {
            break rest
                .split_whitespace()
                .next()
                .expect("an address")
                .to_owned();
        }
    };
    // Keep draining its stderr.
    std::thread::spawn(move || for _ in lines {});
    (Reaped(child), addr)
}
