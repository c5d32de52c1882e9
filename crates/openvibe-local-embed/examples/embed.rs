//! Embed lines of standard input (or a built-in sample) and print how fast.
//!
//! ```text
//! cargo xtask models fetch
//! cargo run --release -p openvibe-local-embed --example embed < texts.txt
//! ```

use std::io::Read;
use std::time::Instant;

use openvibe_local_embed::LocalEmbedder;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let embedder = LocalEmbedder::minilm()?;
    let mut input = String::new();
    if !std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        std::io::stdin().read_to_string(&mut input)?;
    }
    let texts: Vec<String> = if input.trim().is_empty() {
        (0..256)
            .map(|i| format!("Sample sentence number {i}: I went hiking with my dog last weekend and it rained."))
            .collect()
    } else {
        input.lines().map(str::to_owned).collect()
    };
    let start = Instant::now();
    let vectors = embedder.embed_blocking(&texts)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} texts in {secs:.2} s: {:.1} texts/s; first values {:?}",
        vectors.len(),
        vectors.len() as f64 / secs,
        &vectors[0][..4]
    );
    Ok(())
}
