//! The FTP server (`rightsize serve`).
