//! Property tests of the memory filesystem's paths: any path (and any
//! content) browses, reads, searches or writes to a value or a typed
//! `MemoryError`, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use openvibe_memory::{AgentMemory, MemoryFilesystem, WorkspaceMemory};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

fn path() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,80}",
        "(/(identity|knowledge|experience|references|raw|\\.\\.|\\.|[a-z_]{1,8}|)){0,5}/?",
        "/[a-z]{1,8}/\\PC{0,20}",
    ]
}

proptest! {
    // Minimised failures are kept beside this file (`properties.regressions`)
    // and replayed first on every run.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource("regressions"))),
        cases: 128,
        ..ProptestConfig::default()
    })]

    #[test]
    fn any_path_gives_a_value_or_a_typed_error(p in path(), content in "\\PC{0,40}") {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let memory = AgentMemory::new("cro").with_workspace(WorkspaceMemory::new());
            let fs = MemoryFilesystem::new("cro", memory).with_soul("soul");
            let _ = fs.browse(&p).await;
            let _ = fs.read(&p).await;
            let _ = fs.search(&content, &p).await;
            if fs.write(&p, &content).await.is_ok() {
                // What was written can be read back from where it went.
                let _ = fs.read(&p).await;
            }
        });
    }
}
