//! Tools from MCP servers: the connections to the servers of `[mcp]`, and
//! each of their tools as an engram [`Tool`](crate::tools::Tool).
//!
//! An MCP server is a program (run as a child over stdio) or a URL
//! (streamable HTTP) that lists tools and runs them. [`McpHub`] keeps one
//! connection per configured server on its own thread and tokio runtime,
//! because the actors call tools synchronously from actix handlers, each on
//! a current-thread runtime of its own: the hub never calls `block_on` on
//! the caller's thread, it sends the work to its runtime and waits on a
//! channel with a timeout. The rules, in order:
//!
//! 1. **A tool is what the server says it is.** Its name is the server's
//!    name for it (two servers offering the same name: the registry keeps
//!    the later one, see [`ToolRegistry`](super::ToolRegistry)); its
//!    description is the server's, whole up to [`DESCRIPTION_MAX_CHARS`]
//!    characters; its parameters are its `inputSchema`. The description is
//!    the server's text, not ours: a planner must treat it as such.
//! 2. **Side effects from the annotations, effectful unless said
//!    otherwise** ([`side_effect_from_hints`]): `readOnlyHint: true` is
//!    [`Read`](engram_events::payloads::SideEffectClass::Read); `openWorldHint: true` (and not
//!    read-only) is [`Network`](engram_events::payloads::SideEffectClass::Network); anything else,
//!    an unannotated tool included, is [`Write`](engram_events::payloads::SideEffectClass::Write).
//!    The hints are the server's claims; an unknown tool is assumed to act.
//! 3. **A call is bounded and its output is data.** `tools/call` waits at
//!    most the server's `timeout_ms`; past it the call fails naming the
//!    server, the tool and the timeout, and the request is cancelled
//!    (`notifications/cancelled`). The result's text items are joined with
//!    newlines, other items named (`[image: image/png]`,
//!    `[resource: file:///…]`), the whole capped at [`OUTPUT_MAX_BYTES`]
//!    (saying it was cut). `isError: true` fails the call with the text.
//!    The output is always [`ToolOutput::untrusted`](super::ToolOutput::untrusted):
//!    fenced as data before an LLM sees it.
//! 4. **A server that dies fails its calls at once and comes back.** A call
//!    in flight when the connection closes fails at once, not after its
//!    timeout; the server is marked [`McpState::Failed`], its tools go away
//!    and it is restarted after 1 s, 2 s, 4 s … up to [`BACKOFF_MAX`]
//!    (the delay starts again at 1 s after a connection that lasted
//!    [`BACKOFF_MAX`]). Nothing a server does panics the caller: a panic on
//!    the hub's thread is caught and logged.
//! 5. **A server that does not speak MCP fails within its start timeout.**
//!    Connecting, `initialize` and the first `tools/list` must finish in
//!    `start_timeout_ms`; past it the server is failed with a note of what
//!    it did (lines on stdout that are not JSON-RPC, its last stderr line)
//!    and retried as in rule 4. A server whose configuration cannot be met
//!    (an environment variable it names is not set, a program that cannot
//!    be run) fails the same way.
//! 6. **Secrets stay in the environment.** `env` and `headers` name
//!    variables of engram's environment; their values reach the child or
//!    the request only, never the configuration file, a log line or an
//!    event. A stdio child gets only those and [`INHERITED_ENV`] from
//!    engram's environment, not the rest of it.
//!
//! Every change in the set of tools (a server ready, a
//! `notifications/tools/list_changed` whose re-listing differs, a server
//! gone or back) calls the hub's `on_change`, on a thread of the hub's
//! runtime, holding no lock of the hub's — except the changes
//! [`McpHub::start`] waited for: the caller reads [`McpHub::tools`] after
//! it returns.

mod section;
mod status;
pub use section::{McpSection, McpServerSection};
pub use status::{McpServerStatus, McpState, BACKOFF_FIRST, BACKOFF_MAX, INHERITED_ENV};

#[cfg(feature = "mcp")]
mod hub;
#[cfg(feature = "mcp")]
mod server;
#[cfg(feature = "mcp")]
mod spec;
#[cfg(feature = "mcp")]
mod tool;
#[cfg(feature = "mcp")]
pub use hub::*;
#[cfg(feature = "mcp")]
pub use spec::{side_effect_from_hints, DESCRIPTION_MAX_CHARS};
#[cfg(feature = "mcp")]
pub use tool::{McpTool, OUTPUT_MAX_BYTES};

#[cfg(all(test, feature = "mcp"))]
mod tests;
