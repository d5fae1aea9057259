//! The CPU priority of the actors that only learn from a turn.
//!
//! A turn's path is the listener, the router, the planner and the reply
//! loop. The pattern store, the judge, the summariser, the knowledge graph
//! and the memory indexer ([`BACKGROUND_ROLES`]) fold what a turn did after
//! its reply is delivered; nobody waits for them. On a machine of few cores
//! their work ran beside the next turn's actors and delayed each of its
//! hops: the memory indexer embeds every turn's words (≈ 0.5 ms of a core),
//! so turns taken back to back kept one of two cores busy with it
//! (docs/performance.md, *Fewer hops*). Their threads run at nice
//! [`BACKGROUND_NICE`]: the scheduler gives the core to a turn's actor
//! first and to the learning actors whatever the turns leave. On an idle
//! machine that is all of it — nice weighs shares of a busy core, it
//! starves nothing — so they keep up as before.
//!
//! Linux only (a thread's own nice value, `setpriority` on its thread id);
//! elsewhere the threads keep the process's priority. A refusal (a
//! sandbox's seccomp) is logged and changes nothing else.

/// The roles whose threads run at [`BACKGROUND_NICE`], by actor name.
pub const BACKGROUND_ROLES: &[&str] = &["pattern_store", "judge", "summariser", "graph", "memory"];

/// The nice value of a background role's thread: 10 weighs it at about a
/// tenth of a turn's actor (nice 0) when both want a core.
pub const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread to [`BACKGROUND_NICE`].
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: both calls take plain integers and touch no memory of ours.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE) };
        if r != 0 {
            tracing::debug!("a background actor keeps its priority: {}", std::io::Error::last_os_error());
        }
    }
}
