//! Room in the pipes between clawai, its client and its server.

use std::os::fd::BorrowedFd;

/// What each pipe to and from clawai is given room for, when it has less.
pub const PIPE_CAPACITY: usize = 256 * 1024;

/// Gives a pipe [`PIPE_CAPACITY`] bytes instead of Linux's default 64 KiB, never
/// shrinking one that has more; anything that is not a pipe (a socket, as Node's
/// `child_process` gives, a terminal, a file) is left alone. With 64 KiB, a 1 MiB result
/// crosses each pipe in 16 rounds of wake-up and copy, and a burst of pipelined calls
/// stalls whenever one side lags a little (in `scripts/bench` the larger pipes about
/// double clawai's throughput of 1 MiB results). The room is kernel memory taken only
/// while data waits, at most 1 MiB for the four pipes of a session; it counts towards
/// the user's pipe limit (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default),
/// which is why it is not the 1 MiB maximum. Failing (the limit reached) changes
/// nothing but speed.
pub fn enlarge_pipe(pipe: BorrowedFd<'_>) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use nix::fcntl::{FcntlArg, fcntl};
        if let Ok(size) = fcntl(pipe, FcntlArg::F_GETPIPE_SZ)
            && (size as usize) < PIPE_CAPACITY
        {
            let _ = fcntl(pipe, FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY as i32));
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = pipe;
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;
    use nix::fcntl::{FcntlArg, fcntl};
    use std::io;
    use std::os::fd::AsFd;

    fn capacity(fd: BorrowedFd<'_>) -> usize {
        fcntl(fd, FcntlArg::F_GETPIPE_SZ).expect("a pipe") as usize
    }

    #[test]
    fn pipes_grow_to_the_capacity_and_larger_ones_are_kept() {
        let (small, _writer) = io::pipe().unwrap();
        assert!(capacity(small.as_fd()) < PIPE_CAPACITY, "the default is smaller");
        enlarge_pipe(small.as_fd());
        assert_eq!(capacity(small.as_fd()), PIPE_CAPACITY);

        let (large, _writer) = io::pipe().unwrap();
        fcntl(large.as_fd(), FcntlArg::F_SETPIPE_SZ(2 * PIPE_CAPACITY as i32)).unwrap();
        enlarge_pipe(large.as_fd());
        assert_eq!(capacity(large.as_fd()), 2 * PIPE_CAPACITY, "never shrunk");

        // Not a pipe: left alone, no error.
        let file = tempfile::tempfile().unwrap();
        enlarge_pipe(file.as_fd());
    }
}
