//! The signals that end `engram run` as the end of its input does: SIGINT
//! (Ctrl-C), SIGTERM (a service manager), SIGHUP (the terminal closed).
//!
//! By default each kills the process where it stands: the session is never
//! ended, so its summary and facts never come, and no later run ends it.
//! Caught instead, the run stops reading, ends the session and shuts the
//! runtime down as at the end of input, then exits 128 + the signal (130
//! for Ctrl-C), as shells expect of a program a signal ended.
//!
//! The signals are blocked in the thread that calls [`watch`] — and so in
//! every thread started from it afterwards, the runtime's included — and
//! one thread of its own waits for them with `sigwait`: no handler runs in
//! an arbitrary thread at an arbitrary point. A second signal while the
//! session ends kills at once, as an impatient user means it to.
//! (Children keep the default: the standard library resets the mask and
//! dispositions of what it spawns.)

/// The signals that end a run.
const ENDING: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Starts watching for the ending signals; `on` is called with the first
/// one, on the watching thread. Call it before any other thread starts
/// (the runtime's), so that none of them takes the signal with its
/// default action.
pub fn watch(on: impl FnOnce(libc::c_int) + Send + 'static) -> std::io::Result<()> {
    // SAFETY: sigset_t is plain data, set up by sigemptyset/sigaddset
    // before use; pthread_sigmask changes this thread's mask only.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in ENDING {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    std::thread::Builder::new().name("engram-signals".into()).spawn(move || {
        let mut sig = 0;
        // SAFETY: `set` is a valid set; sigwait writes the signal taken.
        if unsafe { libc::sigwait(&set, &mut sig) } != 0 {
            return;
        }
        on(sig);
        // From now on a signal takes its default action: this thread
        // unblocks them, and the process ends on the next one.
        // SAFETY: restoring default dispositions and this thread's mask.
        unsafe {
            for s in ENDING {
                libc::signal(s, libc::SIG_DFL);
            }
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        loop {
            std::thread::park();
        }
    })?;
    Ok(())
}

/// The signal's name, for the line that says why the run ends.
pub fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
