//! A scripted LLM: answers from a queue and records every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use openvibe_protocols::{LlmError, LlmProvider, LlmRequest, LlmResponse};

type Responder = Arc<dyn Fn(&LlmRequest) -> Result<LlmResponse, LlmError> + Send + Sync>;

#[derive(Default)]
struct Inner {
    queue: VecDeque<Result<LlmResponse, LlmError>>,
    requests: Vec<LlmRequest>,
    repeat_last: bool,
    last: Option<Result<LlmResponse, LlmError>>,
}

/// An [`LlmProvider`] that answers from a script and records every request.
///
/// ```
/// use openvibe_primitives::testing::ScriptedLlm;
/// use openvibe_protocols::{LlmProvider, LlmRequest, LlmResponse};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let llm = ScriptedLlm::new([LlmResponse::text("hello")]);
/// let answer = llm.call(&LlmRequest::new("haiku", "hi")).await.unwrap();
/// assert_eq!(answer.content, "hello");
/// assert_eq!(llm.requests()[0].first_user_text(), "hi");
/// assert!(llm.call(&LlmRequest::new("haiku", "again")).await.is_err()); // script exhausted
/// # });
/// ```
#[derive(Clone, Default)]
pub struct ScriptedLlm {
    inner: Arc<Mutex<Inner>>,
    responder: Option<Responder>,
}

impl ScriptedLlm {
    /// Answer with these responses, in order; once they are used up, calls fail.
    pub fn new(responses: impl IntoIterator<Item = LlmResponse>) -> Self {
        let llm = Self::default();
        for r in responses {
            llm.push(r);
        }
        llm
    }

    /// Answer every call with `response`.
    pub fn always(response: LlmResponse) -> Self {
        let llm = Self::new([response]);
        llm.lock().repeat_last = true;
        llm
    }

    /// Answer every call by running `f` on the request.
    pub fn from_fn(
        f: impl Fn(&LlmRequest) -> Result<LlmResponse, LlmError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::default(),
            responder: Some(Arc::new(f)),
        }
    }

    /// Queue one more response.
    pub fn push(&self, response: LlmResponse) -> &Self {
        self.lock().queue.push_back(Ok(response));
        self
    }

    /// Queue an error.
    pub fn push_error(&self, error: LlmError) -> &Self {
        self.lock().queue.push_back(Err(error));
        self
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.lock().requests.clone()
    }

    /// The most recent request.
    pub fn last_request(&self) -> Option<LlmRequest> {
        self.lock().requests.last().cloned()
    }

    /// Number of calls so far.
    pub fn call_count(&self) -> usize {
        self.lock().requests.len()
    }

    /// Responses still queued.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock can only come from a test; the data
        // (a queue and a log) stays consistent, so keep going.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl LlmProvider for ScriptedLlm {
    async fn call(&self, request: &LlmRequest) -> Result<LlmResponse, LlmError> {
        let mut inner = self.lock();
        inner.requests.push(request.clone());
        if let Some(f) = &self.responder {
            drop(inner);
            return f(request);
        }
        if let Some(next) = inner.queue.pop_front() {
            if inner.repeat_last {
                inner.last = Some(next.clone());
            }
            return next;
        }
        if inner.repeat_last
            && let Some(last) = inner.last.clone()
        {
            return last;
        }
        Err(LlmError::Other(format!(
            "ScriptedLlm has no response left for call #{} (model {}); queue more responses",
            inner.requests.len(),
            request.model
        )))
    }
}

impl std::fmt::Debug for ScriptedLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("ScriptedLlm")
            .field("queued", &inner.queue.len())
            .field("calls", &inner.requests.len())
            .finish()
    }
}
