//! The FTP client (`rightsize get` / `rightsize put`).
