//! Test support: a service on a loopback port over given stores, and a
//! remote client of it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openvibe_protocols::Stores;
use openvibe_remote::RemoteMemory;
use openvibe_service::{Access, Service};

/// Serve `service` on a free loopback port for the rest of the test; its URL.
pub async fn spawn(service: Service) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(service.serve(listener, std::future::pending()));
    url
}

/// `stores` behind a development service (the caller header honoured as
/// stated), reached through the remote client.
pub async fn remote_over(stores: Stores) -> Stores {
    let url = spawn(Service::new(stores, Access::open("default"))).await;
    RemoteMemory::connect(&url, None).await.unwrap().stores()
}
