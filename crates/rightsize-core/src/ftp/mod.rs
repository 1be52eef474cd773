//! FTP wire codec (in progress).
