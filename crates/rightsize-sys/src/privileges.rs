//! Giving up root: a server started as root (to read its key, or for
//! its port) goes on as a named user, so that what it writes belongs to
//! that user and a flaw in it does not hand out root.
//!
//! Guarantees: each failure names the call (`getpwnam_r`, `chroot`,
//! `chdir`, `setgroups`, `setgid`, `setuid`); after [`become_user`] succeeds, every thread of
//! the process runs as the user (glibc applies the change to all) and
//! root cannot be taken back (checked).

use std::ffi::{CStr, CString};
use std::io;

/// A user of this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// The name looked up.
    pub name: String,
    /// Its user id.
    pub uid: u32,
    /// Its primary group id.
    pub gid: u32,
}

/// A user that could not be looked up or become.
#[derive(Debug, thiserror::Error)]
pub enum PrivilegeError {
    /// No such user in the password database.
    #[error("no user named \"{0}\" on this host (getpwnam_r)")]
    NoSuchUser(String),
    /// A call failed.
    #[error("{call}: {source}")]
    Call {
        /// The call, with its argument.
        call: String,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

fn failed(call: String) -> PrivilegeError {
    PrivilegeError::Call {
        call,
        source: io::Error::last_os_error(),
    }
}

/// Looks `name` up in the password database.
pub fn lookup(name: &str) -> Result<User, PrivilegeError> {
    let c_name = CString::new(name).map_err(|_| PrivilegeError::NoSuchUser(name.to_owned()))?;
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: zeroed passwd is a valid out parameter for getpwnam_r.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid C string, out structure, buffer and its length, and
    // a pointer for the result, all living across the call.
    let rc = unsafe {
        libc::getpwnam_r(
            c_name.as_ptr(),
            &mut pwd,
            buf.as_mut_ptr(),
            buf.len(),
            &mut found,
        )
    };
    if rc != 0 {
        return Err(PrivilegeError::Call {
            call: format!("getpwnam_r({name})"),
            source: io::Error::from_raw_os_error(rc),
        });
    }
    if found.is_null() {
        return Err(PrivilegeError::NoSuchUser(name.to_owned()));
    }
    // SAFETY: getpwnam_r filled pwd, its name points into buf.
    let found_name = unsafe { CStr::from_ptr(pwd.pw_name) }
        .to_string_lossy()
        .into_owned();
    Ok(User {
        name: found_name,
        uid: pwd.pw_uid,
        gid: pwd.pw_gid,
    })
}

/// Makes `dir` the root of this process's file system (`chroot`, then
/// `chdir("/")`): nothing outside it can be named by path afterwards.
/// Needs root (`CAP_SYS_CHROOT`); useful only with [`become_user`]
/// after it, since root can leave a chroot.
pub fn enter_root(dir: &std::path::Path) -> Result<(), PrivilegeError> {
    use std::os::unix::ffi::OsStrExt;
    let c_dir = CString::new(dir.as_os_str().as_bytes()).map_err(|_| PrivilegeError::Call {
        call: format!("chroot({})", dir.display()),
        source: io::Error::from(io::ErrorKind::InvalidInput),
    })?;
    // SAFETY: a valid C string that outlives the call.
    if unsafe { libc::chroot(c_dir.as_ptr()) } != 0 {
        return Err(failed(format!("chroot({})", dir.display())));
    }
    // SAFETY: a static C string.
    if unsafe { libc::chdir(c"/".as_ptr()) } != 0 {
        return Err(failed("chdir(/) in the new root".to_owned()));
    }
    Ok(())
}

/// Becomes `user`: its primary group as the only group, then its group
/// and user ids (real, effective and saved).
pub fn become_user(user: &User) -> Result<(), PrivilegeError> {
    let groups = [user.gid as libc::gid_t];
    // SAFETY: one group id, in an array that outlives the call.
    if unsafe { libc::setgroups(1, groups.as_ptr()) } != 0 {
        return Err(failed(format!("setgroups([{}])", user.gid)));
    }
    // SAFETY: plain system calls with integer arguments.
    if unsafe { libc::setgid(user.gid) } != 0 {
        return Err(failed(format!("setgid({})", user.gid)));
    }
    // SAFETY: as above.
    if unsafe { libc::setuid(user.uid) } != 0 {
        return Err(failed(format!("setuid({})", user.uid)));
    }
    // SAFETY: as above; this must fail now.
    if user.uid != 0 && unsafe { libc::setuid(0) } == 0 {
        return Err(PrivilegeError::Call {
            call: "setuid(0) after giving up root".to_owned(),
            source: io::Error::other("root could be taken back"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_found_and_a_name_nobody_has_is_not() {
        let root = lookup("root").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((root.uid, root.gid), (0, 0));
        let missing = lookup("no-such-user-here").expect_err("a user nobody has");
        assert!(
            missing
                .to_string()
                .contains("no user named \"no-such-user-here\"")
        );
        assert!(matches!(lookup("a\0b"), Err(PrivilegeError::NoSuchUser(_))));
    }
}
