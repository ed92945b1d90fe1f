//! An application serving its own engine (`Server`): the store is the builder's file, wherever
//! it lies, not the tree's default directory.

use magrathea_core::Engine;
use magrathea_server::{Access, Server};

/// The directory of the builder's redb file is the server's store: it is marked as served, as
/// `magrathea serve` marks its own (the `magrathea` command then drives its runs under the
/// served tree's rules), and the tree's default store directory is not made.
#[tokio::test]
async fn the_builders_file_is_the_served_store() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    let store = tmp.path().join("app-data");
    std::fs::create_dir_all(&store).unwrap();
    let engine = Engine::builder().path(store.join("app.redb"));
    let (_, handle) = Server::new(engine, &root)
        .addr("127.0.0.1:0".parse().unwrap())
        .access(Access::InsecureNoAuth)
        .serve()
        .await
        .unwrap();
    assert!(
        store.join("served").is_file(),
        "the builder's store is marked"
    );
    assert!(
        !root.join(".magrathea").exists(),
        "no store of the tree's own"
    );
    handle.shutdown().await.unwrap();
}

/// An application that serves again in the same process on the same store stops the engine
/// before it shuts the server down: the new server's engine then has the file at once, however
/// long the old server's parts keep their handles.
#[tokio::test]
async fn serving_again_after_stopping_the_engine_opens_the_same_store() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    let file = tmp.path().join("app.redb");
    for _ in 0..3 {
        let (_, handle) = Server::new(Engine::builder().path(&file), &root)
            .addr("127.0.0.1:0".parse().unwrap())
            .access(Access::InsecureNoAuth)
            .serve()
            .await
            .expect("the store opens");
        handle
            .engine()
            .stop(std::time::Duration::from_secs(5))
            .await;
        handle.shutdown().await.unwrap();
    }
}
