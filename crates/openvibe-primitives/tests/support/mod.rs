//! What the provider tests share.

use std::time::Duration;

use openvibe_primitives::{ProviderConfig, RetryPolicy};

/// A configuration for a mock server at `base_url`: `api_key` (if any),
/// a 10 s timeout and quick retries (2 retries, 1–5 ms backoff, a server's
/// retry-after honoured up to 5 s).
pub fn quick_config(base_url: &str, api_key: Option<&str>) -> ProviderConfig {
    let mut config = ProviderConfig::new(base_url);
    config.api_key = api_key.map(str::to_owned);
    config.timeout = Duration::from_secs(10);
    config.retry = RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
        max_retry_after: Duration::from_secs(5),
    };
    config
}
