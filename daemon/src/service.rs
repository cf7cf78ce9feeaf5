//! Service-manager integration: socket activation (systemd `LISTEN_FDS`,
//! launchd `launch_activate_socket`), `READY=1` / `STOPPING=1`
//! notifications and the systemd watchdog. The daemon never forks itself.

use crate::shutdown::Shutdown;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixListener;
use swival_protocol::Activation;

/// A listening socket handed over by the service manager.
#[derive(Debug)]
pub struct ActivatedSocket {
    /// The listener, already bound and listening.
    pub listener: UnixListener,
    /// Who handed it over.
    pub activation: Activation,
}

/// Why an activation socket could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// The environment said there are sockets but they could not be read.
    #[error("socket activation failed: {0}")]
    Io(#[from] std::io::Error),
    /// The passed descriptor is not a listening Unix stream socket.
    #[error("socket activation passed fd {fd}, which is not a listening Unix stream socket; set ListenStream= to a path in the .socket unit")]
    NotAUnixListener { fd: RawFd },
}

/// Take the socket passed by systemd or launchd, if any. Must run before the
/// async runtime starts: it reads and clears `LISTEN_*` while the process is
/// still single-threaded.
pub fn take_activation_socket() -> Result<Option<ActivatedSocket>, ActivationError> {
    if let Some(s) = take_systemd_socket()? {
        return Ok(Some(s));
    }
    take_launchd_socket()
}

fn take_systemd_socket() -> Result<Option<ActivatedSocket>, ActivationError> {
    let mut fds = sd_notify::listen_fds()?;
    let Some(fd) = fds.next() else {
        return Ok(None);
    };
    check_unix_listener(fd)?;
    // SAFETY: systemd passes us ownership of fd (LISTEN_PID matched us), we
    // checked it is a Unix stream listener, and nothing else owns it.
    let listener = unsafe { UnixListener::from_raw_fd(fd) };
    Ok(Some(ActivatedSocket { listener, activation: Activation::Systemd }))
}

fn check_unix_listener(fd: RawFd) -> Result<(), ActivationError> {
    use nix::sys::socket::{getsockname, getsockopt, sockopt, SockType, SockaddrStorage};
    // SAFETY: fd is open for the duration of this call (owned by us).
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let bad = || ActivationError::NotAUnixListener { fd };
    let ty = getsockopt(&borrowed, sockopt::SockType).map_err(|_| bad())?;
    let listening = getsockopt(&borrowed, sockopt::AcceptConn).map_err(|_| bad())?;
    let addr: SockaddrStorage = getsockname(fd).map_err(|_| bad())?;
    if ty != SockType::Stream || !listening || addr.as_unix_addr().is_none() {
        return Err(bad());
    }
    Ok(())
}

#[cfg(target_os = "macos")]
fn take_launchd_socket() -> Result<Option<ActivatedSocket>, ActivationError> {
    use std::ffi::CString;
    extern "C" {
        fn launch_activate_socket(
            name: *const libc::c_char,
            fds: *mut *mut libc::c_int,
            cnt: *mut libc::size_t,
        ) -> libc::c_int;
    }
    // The name matches the `Sockets` key in launchd/com.swival.swivald.plist.
    let name = CString::new("Listeners").expect("static name");
    let mut fds: *mut libc::c_int = std::ptr::null_mut();
    let mut cnt: libc::size_t = 0;
    // SAFETY: launchd's documented call; it allocates `fds`, which we free.
    let rc = unsafe { launch_activate_socket(name.as_ptr(), &mut fds, &mut cnt) };
    if rc != 0 || cnt == 0 || fds.is_null() {
        // ESRCH / ENOENT: not started by launchd, or no such socket.
        return Ok(None);
    }
    // SAFETY: launchd returned `cnt` fds at `fds`.
    let fd = unsafe { *fds };
    unsafe { libc::free(fds.cast()) };
    check_unix_listener(fd)?;
    // SAFETY: launchd gave us this descriptor.
    let listener = unsafe { UnixListener::from_raw_fd(fd) };
    Ok(Some(ActivatedSocket { listener, activation: Activation::Launchd }))
}

#[cfg(not(target_os = "macos"))]
fn take_launchd_socket() -> Result<Option<ActivatedSocket>, ActivationError> {
    Ok(None)
}

/// Tell the service manager we are serving (no-op without NOTIFY_SOCKET).
pub fn notify_ready() {
    if let Err(e) = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]) {
        tracing::warn!("could not send READY=1 to the service manager: {e}");
    }
}

/// Tell the service manager we are stopping.
pub fn notify_stopping() {
    if let Err(e) = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]) {
        tracing::warn!("could not send STOPPING=1 to the service manager: {e}");
    }
}

/// When `WATCHDOG_USEC` is set, pet the watchdog at half its period until
/// shutdown. A hung runtime stops petting and systemd restarts us.
pub fn spawn_watchdog(shutdown: Shutdown) {
    let mut usec = 0u64;
    if !sd_notify::watchdog_enabled(false, &mut usec) || usec == 0 {
        return;
    }
    let period = std::time::Duration::from_micros(usec / 2);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
                }
                _ = shutdown.wait() => break,
            }
        }
    });
}
