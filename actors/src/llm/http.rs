//! The transport both adapters share: a JSON POST whose timeout bounds the
//! whole call (connect, headers and the whole streamed body), a line reader
//! over the stream, and the mapping of transport failures to [`LlmError`].

use std::io::{BufRead, BufReader, Read};
use std::time::Duration;

use super::{ApiKey, LlmError};

/// Largest streamed body read (a runaway server cannot exhaust memory).
const MAX_BODY_BYTES: u64 = 32 << 20;
/// How much of an error body is kept in [`LlmError::Http`].
const ERROR_BODY_CHARS: usize = 512;

/// One server: base URL, optional key, and a connection-pooling agent.
pub(crate) struct Transport {
    agent: ureq::Agent,
    base_url: String,
    api_key: Option<ApiKey>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Transport {
    /// A transport to `base_url` (`http://` or `https://`, trailing `/` dropped).
    pub(crate) fn new(base_url: &str, api_key: Option<ApiKey>) -> Result<Self, LlmError> {
        let base_url = base_url.trim().trim_end_matches('/').to_owned();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(LlmError::Config(format!("llm.base_url {base_url:?} must start with http:// or https://")));
        }
        let mut config = ureq::Agent::config_builder().http_status_as_error(false);
        if is_loopback(&base_url) {
            // A local model server is never behind the environment's HTTP proxy.
            config = config.proxy(None);
        }
        let agent = config.build().new_agent();
        Ok(Transport { agent, base_url, api_key })
    }

    /// The base URL, without a trailing `/`.
    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// POSTs `body` to `url` and returns the streamed answer's lines. A
    /// non-2xx status is [`LlmError::Http`], whatever the body says: what a
    /// server supports is configured or probed, never read from an error.
    pub(crate) fn post_stream(
        &self,
        url: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<Lines, LlmError> {
        let mut req = self
            .agent
            .post(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            req = req.header("authorization", format!("Bearer {}", key.expose()));
        }
        let resp = req.send(body.to_string()).map_err(|e| self.transport_error(e, timeout))?;
        let status = resp.status().as_u16();
        let mut reader = resp.into_body().into_with_config().limit(MAX_BODY_BYTES).reader();
        if !(200..300).contains(&status) {
            let mut raw = Vec::new();
            // Best effort: the status alone is the error if the body fails.
            let _ = (&mut reader).take(16 * 1024).read_to_end(&mut raw);
            let body = self.redact(&String::from_utf8_lossy(&raw));
            return Err(LlmError::Http { status, body: engram_learning::text::truncate(&body, ERROR_BODY_CHARS) });
        }
        Ok(Lines { reader: BufReader::new(reader), timeout, line_no: 0, buf: Vec::new(), key: self.api_key.clone() })
    }

    /// POSTs `body` to `url` and parses the whole (non-streamed) answer as
    /// JSON: for metadata endpoints such as Ollama's `/api/show`.
    pub(crate) fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, LlmError> {
        let mut lines = self.post_stream(url, body, timeout)?;
        let mut text = String::new();
        while let Some((_, line)) = lines.next_line()? {
            text.push_str(&line);
            text.push('\n');
        }
        serde_json::from_str(&text).map_err(|e| LlmError::Malformed(format!("answer is not JSON: {e}")))
    }

    /// Removes the key, in every spelling, from text a server sent back
    /// (some echo it).
    fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) => key.scrub(text).into_owned(),
            None => text.to_owned(),
        }
    }

    /// Removes the key from an answer: its text and its tool calls'
    /// arguments (a server that echoes the key in a 200 answer must not put
    /// it into `reply.delivered` or any other event).
    pub(crate) fn scrub_response(&self, resp: &mut super::ChatResponse) {
        let Some(key) = &self.api_key else { return };
        if let std::borrow::Cow::Owned(clean) = key.scrub(&resp.content) {
            resp.content = clean;
        }
        for call in &mut resp.tool_calls {
            call.name = key.scrub(&call.name).into_owned();
            let args = serde_json::Value::Object(std::mem::take(&mut call.arguments)).to_string();
            let clean = key.scrub(&args);
            call.arguments = serde_json::from_str(&clean).unwrap_or_default();
        }
    }

    fn transport_error(&self, e: ureq::Error, timeout: Duration) -> LlmError {
        match e {
            ureq::Error::Timeout(_) => timed_out(timeout),
            ureq::Error::Io(io) => io_error(io, timeout),
            ureq::Error::BodyExceedsLimit(n) => LlmError::Malformed(format!("answer larger than {n} bytes")),
            other => LlmError::Unreachable(self.redact(&other.to_string())),
        }
    }
}

/// True for `http(s)://localhost`, `127.x.x.x` and `[::1]` URLs.
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn timed_out(timeout: Duration) -> LlmError {
    LlmError::Timeout { after_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX) }
}

/// Maps an I/O error from connecting or reading the stream.
fn io_error(e: std::io::Error, timeout: Duration) -> LlmError {
    use std::io::ErrorKind;
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<ureq::Error>()) {
        match inner {
            ureq::Error::Timeout(_) => return timed_out(timeout),
            ureq::Error::BodyExceedsLimit(n) => return LlmError::Malformed(format!("answer larger than {n} bytes")),
            _ => {}
        }
    }
    match e.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => timed_out(timeout),
        _ => LlmError::Unreachable(e.to_string()),
    }
}

/// The lines of a streamed body, numbered from 1 for error messages.
pub(crate) struct Lines {
    reader: BufReader<ureq::BodyReader<'static>>,
    timeout: Duration,
    line_no: usize,
    buf: Vec<u8>,
    /// Scrubbed from every line before it is parsed (and so from what a
    /// parse error quotes).
    key: Option<ApiKey>,
}

impl Lines {
    /// The next line without its line ending, with its number; `None` at
    /// the end of the stream.
    pub(crate) fn next_line(&mut self) -> Result<Option<(usize, String)>, LlmError> {
        self.buf.clear();
        let n = self.reader.read_until(b'\n', &mut self.buf).map_err(|e| io_error(e, self.timeout))?;
        if n == 0 {
            return Ok(None);
        }
        self.line_no += 1;
        let line = std::str::from_utf8(&self.buf)
            .map_err(|_| LlmError::Malformed(format!("line {} is not UTF-8", self.line_no)))?;
        let line = line.trim_end_matches(['\n', '\r']);
        let line = match &self.key {
            Some(key) => key.scrub(line).into_owned(),
            None => line.to_owned(),
        };
        Ok(Some((self.line_no, line)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_urls_are_recognised() {
        for url in [
            "http://127.0.0.1:11434",
            "http://localhost",
            "https://LOCALHOST:8443/v1",
            "http://[::1]:8080/",
            "http://127.1.2.3",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in [
            "https://api.example.com/v1",
            "http://10.0.0.2:11434",
            "http://localhost.example.com",
            "http://[2001:db8::1]",
        ] {
            assert!(!is_loopback(url), "{url}");
        }
    }
}
