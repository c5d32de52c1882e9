//! The memory filesystem's paths: any path (and content) browses, reads and
//! writes to a value or a typed error; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openvibe_memory::{AgentMemory, MemoryFilesystem, WorkspaceMemory};

thread_local! {
    static RUNTIME: tokio::runtime::Runtime =
        tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (path, content) = text.split_once('\n').unwrap_or((text, "x"));
    RUNTIME.with(|rt| {
        rt.block_on(async {
            let memory = AgentMemory::new("cro").with_workspace(WorkspaceMemory::new());
            let fs = MemoryFilesystem::new("cro", memory).with_soul("soul");
            let _ = fs.browse(path).await;
            let _ = fs.read(path).await;
            let _ = fs.write(path, content).await;
            let _ = fs.search(content, path).await;
        });
    });
});
