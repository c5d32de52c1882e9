//! Console sessions: who signed in (the caller context their API key
//! resolved to when they signed in), the CSRF token of their forms, and
//! when they were last seen. The browser holds only an opaque session id
//! in an `HttpOnly`, `SameSite=Strict` cookie scoped to `/console`; neither
//! the browser nor the server keeps the key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use openvibe_protocols::CallerContext;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "openvibe_console";

/// The most sessions held at once; signing in beyond it, once the idle
/// ones are dropped, is refused (503) rather than growing without bound.
pub(crate) const MAX_SESSIONS: usize = 10_000;

/// One signed-in person.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Who they are, as their key said when they signed in (tool `console`).
    pub(crate) ctx: CallerContext,
    /// The token every change they submit must carry.
    pub(crate) csrf: String,
    /// When they last asked for something.
    last_seen: Instant,
}

/// The sessions of one service.
#[derive(Debug)]
pub(crate) struct Sessions {
    idle: Duration,
    secure: bool,
    map: Mutex<HashMap<String, Session>>,
}

/// Why a session could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The operating system gave no randomness.
    Random,
    /// [`MAX_SESSIONS`] are open and none is idle.
    Full,
}

impl Sessions {
    /// Sessions ending after `idle` without a request; cookies marked
    /// `Secure` when `secure` (the service is reached over TLS).
    pub(crate) fn new(idle: Duration, secure: bool) -> Self {
        Self {
            idle,
            secure,
            map: Mutex::new(HashMap::new()),
        }
    }

    /// Open a session for `ctx`: its id (the cookie's value) and itself.
    pub(crate) fn open(&self, ctx: CallerContext) -> Result<(String, Session), OpenError> {
        let id = token().ok_or(OpenError::Random)?;
        let session = Session {
            ctx,
            csrf: token().ok_or(OpenError::Random)?,
            last_seen: Instant::now(),
        };
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_SESSIONS {
            let idle = self.idle;
            map.retain(|_, s| s.last_seen.elapsed() < idle);
            if map.len() >= MAX_SESSIONS {
                return Err(OpenError::Full);
            }
        }
        map.insert(id.clone(), session.clone());
        Ok((id, session))
    }

    /// The session `id`, seen now; `None` when there is none or it was idle
    /// past the timeout (then it is ended).
    pub(crate) fn touch(&self, id: &str) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let session = map.get_mut(id)?;
        if session.last_seen.elapsed() >= self.idle {
            map.remove(id);
            return None;
        }
        session.last_seen = Instant::now();
        Some(session.clone())
    }

    /// End the session `id`.
    pub(crate) fn close(&self, id: &str) {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// The `Set-Cookie` value that hands the browser session `id`.
    pub(crate) fn cookie(&self, id: &str, headers: &HeaderMap) -> HeaderValue {
        let secure = if self.secure || forwarded_https(headers) {
            "; Secure"
        } else {
            ""
        };
        HeaderValue::from_str(&format!(
            "{COOKIE}={id}; Path=/console; HttpOnly; SameSite=Strict{secure}"
        ))
        .unwrap_or_else(|_| HeaderValue::from_static("openvibe_console=; Path=/console"))
    }

    /// The `Set-Cookie` value that removes the session cookie.
    pub(crate) fn removal(&self) -> HeaderValue {
        HeaderValue::from_static(
            "openvibe_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0",
        )
    }
}

/// Whether a TLS-terminating proxy in front says the browser used HTTPS.
fn forwarded_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// 32 random bytes from the operating system, as hex.
fn token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

/// The session id the request's cookie carries.
pub(crate) fn cookie_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, value)| *name == COOKIE && !value.is_empty())
        .map(|(_, value)| value)
}

/// Whether `given` is the session's CSRF token (compared in constant time).
pub(crate) fn csrf_matches(session: &Session, given: &str) -> bool {
    let (a, b) = (session.csrf.as_bytes(), given.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A signed-in request: its session id and the session.
#[derive(Debug, Clone)]
pub(crate) struct SignedIn {
    pub(crate) id: String,
    pub(crate) session: Session,
}

impl SignedIn {
    /// Who is asking.
    pub(crate) fn ctx(&self) -> &CallerContext {
        &self.session.ctx
    }
}

impl<S> FromRequestParts<S> for SignedIn
where
    Arc<Sessions>: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let sessions = Arc::<Sessions>::from_ref(state);
        let found =
            cookie_of(&parts.headers).and_then(|id| Some((id.to_owned(), sessions.touch(id)?)));
        match found {
            Some((id, session)) => {
                let span = tracing::Span::current();
                span.record("tenant", session.ctx.tenant_id());
                span.record(
                    "principal",
                    tracing::field::display(session.ctx.principal()),
                );
                Ok(Self { id, session })
            }
            None => Err(sign_in_again(parts)),
        }
    }
}

/// Where a request without a live session goes: the sign-in page (for
/// htmx, through its `HX-Redirect` header; for other changes, a 401).
fn sign_in_again(parts: &Parts) -> Response {
    if parts.headers.contains_key("hx-request") {
        let mut response = StatusCode::UNAUTHORIZED.into_response();
        response.headers_mut().insert(
            "hx-redirect",
            HeaderValue::from_static("/console/login?expired=1"),
        );
        return response;
    }
    if parts.method == Method::GET {
        Redirect::to("/console/login").into_response()
    } else {
        Redirect::to("/console/login?expired=1").into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openvibe_protocols::Principal;

    fn ctx() -> CallerContext {
        CallerContext::new("t1", Principal::user("ann"))
    }

    #[test]
    fn sessions_end_when_idle_or_closed() {
        let sessions = Sessions::new(Duration::from_millis(50), false);
        let (id, session) = sessions.open(ctx()).unwrap();
        assert_eq!(id.len(), 64);
        assert_ne!(id, session.csrf);
        assert!(sessions.touch(&id).is_some());
        std::thread::sleep(Duration::from_millis(60));
        assert!(sessions.touch(&id).is_none(), "idle past the timeout");
        let (id, _) = sessions.open(ctx()).unwrap();
        sessions.close(&id);
        assert!(sessions.touch(&id).is_none());
        assert!(sessions.touch("not-a-session").is_none());
    }

    #[test]
    fn cookies_are_http_only_strict_and_secure_behind_tls() {
        let sessions = Sessions::new(Duration::from_secs(60), false);
        let plain = sessions.cookie("abc", &HeaderMap::new());
        assert_eq!(
            plain.to_str().unwrap(),
            "openvibe_console=abc; Path=/console; HttpOnly; SameSite=Strict"
        );
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(
            sessions
                .cookie("abc", &headers)
                .to_str()
                .unwrap()
                .ends_with("; Secure")
        );
        let tls = Sessions::new(Duration::from_secs(60), true);
        assert!(
            tls.cookie("abc", &HeaderMap::new())
                .to_str()
                .unwrap()
                .ends_with("; Secure")
        );
    }

    #[test]
    fn the_cookie_is_found_among_others_and_csrf_compares_exactly() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; openvibe_console=s3ss10n; b=2"),
        );
        assert_eq!(cookie_of(&headers), Some("s3ss10n"));
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("openvibe_console="),
        );
        assert_eq!(cookie_of(&headers), None);
        let sessions = Sessions::new(Duration::from_secs(60), false);
        let (_, session) = sessions.open(ctx()).unwrap();
        let token = session.csrf.clone();
        assert!(csrf_matches(&session, &token));
        assert!(!csrf_matches(&session, &token[..63]));
        assert!(!csrf_matches(&session, ""));
        let mut other = token.into_bytes();
        other[0] = if other[0] == b'a' { b'b' } else { b'a' };
        assert!(!csrf_matches(&session, &String::from_utf8(other).unwrap()));
    }
}
